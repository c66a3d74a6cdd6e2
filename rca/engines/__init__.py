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
    return ("baro",)


def build_engine(name: str) -> Engine:
    """An engine by its command-line name."""
    key = name.strip().lower()
    if key == "baro":
        from rca.engines.baro import BaroEngine

        return BaroEngine()
    raise EngineError(f"unknown engine {name!r}; choose from {', '.join(engine_names())}")
