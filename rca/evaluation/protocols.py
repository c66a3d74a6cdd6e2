"""Evaluation protocols: where a case's window lies and what the engine may read.

An engine only ever sees an Incident; a protocol decides which one, from the labelled case:

- `realistic` (the default): the window ends 1-5 minutes after the fault began and reaches
  back 15, 30 or 60 minutes, as `/rca svc 30m` typed minutes after an alert would; no alert
  time is given. The offsets are drawn per case from a hash of its id, so every run and every
  engine sees the same windows and nothing about them is tuned. An alert fires on a sample
  that shows the fault, so on coarse data (PetShop's 5-minute samples) the window ends no
  earlier than just after the first metric sample at or past the fault's start.
- `centred`: the layout's own window (Nezha: 4-8 minutes before the injection to 3-6 after;
  PetShop: the publisher's whole issue file, with its alert time), kept to compare with
  published figures.

Either can hide modalities (`logs`, `traces`, `metrics`) and the call graph (`topology`), as
a team without tracing, or without a log pipeline, would be.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from enum import StrEnum

from rca.errors import InputError
from rca.model import Incident, IncidentCase, Modality, Sources, Window
from rca.replay import with_window
from rca.sources.protocols import MetricQuery


class Placement(StrEnum):
    REALISTIC = "realistic"
    CENTRED = "centred"


HIDEABLE = ("logs", "traces", "metrics", "topology")
AFTER_SECONDS = (60.0, 300.0)  # the window ends this long after the fault began (1-5 minutes)
REACH_SECONDS = (900.0, 1800.0, 3600.0)  # and reaches back this far (15, 30 or 60 minutes)


@dataclass(frozen=True, slots=True)
class Protocol:
    placement: Placement = Placement.REALISTIC
    hide: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        unknown = sorted(set(self.hide) - set(HIDEABLE))
        if unknown:
            raise InputError(f"cannot hide {', '.join(unknown)}; choose from {', '.join(HIDEABLE)}")

    @property
    def name(self) -> str:
        hidden = f", {'+'.join(sorted(self.hide))} hidden" if self.hide else ""
        return f"{self.placement.value}{hidden}"

    async def place(self, case: IncidentCase) -> Incident:
        """The incident an engine is given for this case under this protocol."""
        incident = case.incident
        if self.placement is Placement.REALISTIC:
            incident = await realistic(case)
        return hidden(incident, self.hide)


def parse_protocol(placement: str, hide: str = "") -> Protocol:
    """A protocol from the command line's `--protocol` and `--hide` (comma-separated)."""
    try:
        where = Placement(placement.strip().lower())
    except ValueError:
        raise InputError(f"unknown protocol {placement!r}; choose from "
                         f"{', '.join(p.value for p in Placement)}") from None  # fmt: skip
    return Protocol(where, frozenset(h.strip().lower() for h in hide.split(",") if h.strip()))


def realistic_window(case_id: str, start: float) -> Window:
    """The window a user would ask about, for a fault that began at `start` (no sampling yet)."""
    digest = int.from_bytes(hashlib.sha256(f"realistic:{case_id}".encode()).digest()[:8], "big")
    lo, hi = AFTER_SECONDS
    after = lo + digest % int(hi - lo + 1)
    reach = REACH_SECONDS[(digest >> 20) % len(REACH_SECONDS)]
    end = start + after
    return Window(end - reach, end)


async def realistic(case: IncidentCase) -> Incident:
    """The case's incident over its realistic window, without an alert time."""
    incident = case.incident
    start = case.label.start
    if start is None:
        note = "realistic protocol: the label gives no fault start, the layout's window is kept"
        return replace(incident, alert_time=None, notes=(*incident.notes, note))
    window = realistic_window(case.id, start)
    first = await _first_sample_from(incident, start)
    if first is not None and first >= window.end:  # nothing of the fault sampled yet: no alert either
        window = Window(window.start, first + 1.0)
    return replace(with_window(incident, window), alert_time=None)


async def _first_sample_from(incident: Incident, start: float) -> float | None:
    """The first metric sample at or after `start`, where metrics exist."""
    src = incident.sources.metrics
    if src is None:
        return None
    series = await src.series(MetricQuery(Window(start, start + 3600.0)))
    times = [float(s.timestamps[0]) for s in series if len(s) and s.timestamps[0] >= start]
    return min(times, default=None)


def hidden(incident: Incident, hide: frozenset[str]) -> Incident:
    """The incident without the hidden modalities (and their normal data) or call graph."""
    if not hide:
        return incident
    gone = tuple(m for m in Modality if m.value in hide)
    sources = incident.sources.without(*gone)
    if "topology" in hide:
        sources = Sources(sources.metrics, sources.logs, sources.traces, None)
    normal = {m: n for m, n in incident.normal.items() if m not in gone}
    notes = tuple(f"{h}: hidden by the evaluation protocol" for h in sorted(hide))
    return replace(incident, sources=sources, normal=normal, notes=(*incident.notes, *notes))
