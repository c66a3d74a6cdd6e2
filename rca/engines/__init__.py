"""Engines: one contract for every method, `investigate(incident) -> Diagnosis`."""

from __future__ import annotations

from typing import Protocol

from rca.errors import EngineError
from rca.model import Diagnosis, Incident


class Engine(Protocol):
    name: str

    async def investigate(self, incident: Incident) -> Diagnosis:
        """Rank root-cause candidates for one incident."""
        ...


def engine_names() -> tuple[str, ...]:
    return ("lats", "linear", "linear-multi", "baro")


def build_engine(name: str, *, ablation: str = "") -> Engine:
    """An engine by its command-line name, optionally with one ablation (`lats` only)."""
    from rca.engines.baro import BaroEngine
    from rca.engines.lats import ABLATIONS, VARIANTS, SearchEngine, Variant, ablate

    key = name.strip().lower()
    if key == "baro" and not ablation:
        return BaroEngine()
    if key in VARIANTS:
        variant = VARIANTS[key]
        if ablation:
            if ablation not in ABLATIONS:
                raise EngineError(f"unknown ablation {ablation!r}; choose from {', '.join(ABLATIONS)}")
            variant = Variant(variant.name, variant.order, ablate(variant.config, ablation))
            return SearchEngine(variant, name=f"{key}-no-{ablation}")
        return SearchEngine(variant)
    raise EngineError(f"unknown engine {name!r}; choose from {', '.join(engine_names())}")
