"""Where the bot reads telemetry from: a recorded dataset replayed as if live (the default).

Live backends implement the same small interface, so the desk never knows which it reads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Protocol

from rca.errors import InputError
from rca.model import Incident, IncidentCase, Window
from rca.replay import known_entities, nearest_case, replay_incident
from rca.sources.datasets import find_cases
from rca.windows import parse_window


def embedded_data() -> Path:
    """The embedded slice of one TrainTicket incident (Nezha's data, MIT licence)."""
    return Path(str(resources.files("bot") / "demo"))


class Telemetry(Protocol):
    async def services(self) -> tuple[str, ...]:
        """Every service an investigation may name."""
        ...

    async def window(self, text: str) -> Window:
        """The window a request's text means, relative to this telemetry's "now"."""
        ...

    async def incident(self, service: str, window: Window) -> Incident:
        """An incident for `service` over `window`; InputError for an unknown service."""
        ...


class ReplayTelemetry:
    """A recorded dataset read as if it were live, "now" anchored inside it."""

    def __init__(self, data: Path, *, now: float | None = None) -> None:
        self.data = data
        self._now = now
        self._cases: Sequence[IncidentCase] | None = None
        self._lock = asyncio.Lock()

    async def _load(self) -> Sequence[IncidentCase]:
        async with self._lock:
            if self._cases is None:
                cases = await asyncio.to_thread(find_cases, self.data)
                if not cases:
                    raise InputError(f"no recorded incidents under {self.data}")
                self._cases = cases
        return self._cases

    async def now(self) -> float:
        cases = await self._load()
        return self._now if self._now is not None else max(c.incident.window.end for c in cases)

    async def window(self, text: str) -> Window:
        return parse_window(text, now=await self.now())

    async def services(self) -> tuple[str, ...]:
        cases = await self._load()
        return await known_entities(nearest_case(cases, Window(await self.now() - 1, await self.now())).incident)

    async def incident(self, service: str, window: Window) -> Incident:
        return await replay_incident(await self._load(), symptom=service, window=window)
