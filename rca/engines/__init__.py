"""Engines: one contract for every method, `investigate(incident) -> Diagnosis`."""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from rca.errors import EngineError
from rca.model import Diagnosis, Incident
from rca.reasoners import Reasoner


class Engine(Protocol):
    name: str

    async def investigate(self, incident: Incident) -> Diagnosis:
        """Rank root-cause candidates for one incident."""
        ...


def engine_names() -> tuple[str, ...]:
    return ("lats", "linear", "linear-multi", "baro", "random")


def build_engine(
    name: str,
    *,
    ablation: str = "",
    repair: bool = False,
    reasoner: Reasoner | None = None,
    time_budget: float | None = None,
    seed: int | None = None,
    read_budget: int | None = None,
) -> Engine:
    """An engine by its command-line name, optionally with one ablation (`lats` only) or
    followed by STAR's audit and repair (the search engines); the search engines take a
    reasoner (the offline one by default) and a sampling seed other than the configured one
    (named `<engine>@seed<N>`, so that runs with several seeds sit side by side)."""
    from rca.engines.baro import BaroEngine
    from rca.engines.lats import ABLATIONS, VARIANTS, SearchEngine, Variant, ablate
    from rca.engines.random_order import RandomOrderEngine
    from rca.engines.star import StarEngine

    key = name.strip().lower()
    if repair and key in VARIANTS:
        base = build_engine(
            key, ablation=ablation, reasoner=reasoner, time_budget=time_budget, seed=seed, read_budget=read_budget
        )
        assert isinstance(base, SearchEngine)
        return StarEngine(base)
    if key == "baro" and not ablation:
        return BaroEngine()
    if key == "random" and not ablation:
        return RandomOrderEngine(read_budget=read_budget, seed=seed or 0)
    if key in VARIANTS:
        variant = VARIANTS[key]
        if time_budget is not None:
            variant = Variant(variant.name, variant.order, replace(variant.config, time_budget=time_budget))
        if seed is not None:
            variant = Variant(variant.name, variant.order, replace(variant.config, seed=seed))
        if read_budget is not None:
            variant = Variant(variant.name, variant.order, replace(variant.config, read_budget=read_budget))
        if ablation:
            if ablation not in ABLATIONS and not ablation.startswith("rule:"):
                raise EngineError(f"unknown ablation {ablation!r}; choose from {', '.join(ABLATIONS)} or rule:NAME")
            variant = Variant(variant.name, variant.order, ablate(variant.config, ablation))
            key = f"{key}-no-{ablation}"
        return SearchEngine(variant, name=key if seed is None else f"{key}@seed{seed}", reasoner=reasoner)
    raise EngineError(f"unknown engine {name!r}; choose from {', '.join(engine_names())}")
