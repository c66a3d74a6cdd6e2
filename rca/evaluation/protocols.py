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
- `late`: asked late, as `/rca checkout 15m` typed well into an incident: the window begins
  1-10 minutes after the fault began and runs 15 minutes. Where faults follow each other
  within minutes (TrainTicket's and OnlineBoutique's every 7-9), such a window often holds the
  next fault's start too.
- `cropped`: the realistic window over a recording that begins at the fault (a new pod, a
  restarted exporter, a scrape gap): nothing before the fault is read, and normal behaviour
  comes only from a stretch recorded apart, where the layout has one.

Beside the placement, the metrics can be read as another system would record them
(`rca.evaluation.transforms`): resampled to another step, named in another exporter's
vocabulary, beside a fleet of idle services, or with normal behaviour from another run whose
levels differ from this one's (`--drift`).

Either can hide modalities (`logs`, `traces`, `metrics`) and the call graph (`topology`), as
a team without tracing, or without a log pipeline, would be, and plant harmless changes to
bystanders (`--bystander-changes N`): deploys to services other than the labelled one, at
times drawn from the case id over the window and as long again before it, as a busy team's
pipeline posts them whatever is going wrong.
"""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import dataclass, replace
from enum import StrEnum

from rca.changes import Change, ChangeKind, known
from rca.errors import InputError, RcaError
from rca.evaluation.transforms import crop, drifted, parse_drift, parse_step, reshaped
from rca.evaluation.vocabulary import Vocabulary, parse_vocabulary
from rca.model import Incident, IncidentCase, Modality, Sources
from rca.replay import with_window
from rca.sources.protocols import MetricQuery
from rca.telemetry import Window
from rca.topology import is_kpi


class Placement(StrEnum):
    REALISTIC = "realistic"
    CENTRED = "centred"
    LATE = "late"
    CROPPED = "cropped"


HIDEABLE = ("logs", "traces", "metrics", "topology")
AFTER_SECONDS = (60.0, 300.0)  # the window ends this long after the fault began (1-5 minutes)
REACH_SECONDS = (900.0, 1800.0, 3600.0)  # and reaches back this far (15, 30 or 60 minutes)
LATE_SECONDS = (60.0, 600.0)  # asked late: the window begins this long after the fault began
LATE_LENGTH = 900.0  # and runs this long (`/rca checkout 15m`)


@dataclass(frozen=True, slots=True)
class Protocol:
    placement: Placement = Placement.REALISTIC
    hide: frozenset[str] = frozenset()
    step: float | None = None  # metrics resampled to this step (seconds)
    vocabulary: Vocabulary | None = None  # metric names rewritten to this vocabulary
    fleet: int = 0  # idle services added beside the real ones
    drift: float = 0.0  # normal series read at levels up to this share from their own
    bystanders: int = 0  # harmless changes planted on services other than the labelled one

    def __post_init__(self) -> None:
        unknown = sorted(set(self.hide) - set(HIDEABLE))
        if unknown:
            raise InputError(f"cannot hide {', '.join(unknown)}; choose from {', '.join(HIDEABLE)}")
        if self.fleet < 0:
            raise InputError(f"a fleet cannot hold {self.fleet} services")
        if not 0.0 <= self.drift < 1.0:
            raise InputError(f"a drift of {self.drift} is not a share of a level in [0, 1)")
        if not 0 <= self.bystanders <= 1000:
            raise InputError(f"{self.bystanders} bystander changes: plant 0 to 1000")

    @property
    def name(self) -> str:
        parts = [self.placement.value]
        if self.step is not None:
            parts.append(f"resampled {self.step:g}s")
        if self.vocabulary is not None:
            parts.append(f"{self.vocabulary.value} names")
        if self.fleet:
            parts.append(f"fleet {self.fleet}")
        if self.drift:
            parts.append(f"normal drifted {self.drift:.0%}")
        if self.bystanders:
            parts.append(f"{self.bystanders} bystander changes")
        if self.hide:
            parts.append(f"{'+'.join(sorted(self.hide))} hidden")
        return ", ".join(parts)

    async def place(self, case: IncidentCase) -> Incident:
        """The incident an engine is given for this case under this protocol."""
        incident = case.incident
        if self.placement is Placement.REALISTIC:
            incident = await realistic(case)
        elif self.placement is Placement.LATE:
            incident = await late(case)
        elif self.placement is Placement.CROPPED:
            incident = await realistic(case)
            if case.label.start is not None:
                incident = crop(incident, case.label.start)
        if self.bystanders:
            incident = await planted(case, incident, self.bystanders)
        incident = replace(incident, changes=known(incident.changes, incident.window))
        return self.record(incident)

    def record(self, incident: Incident) -> Incident:
        """A placed incident as this protocol's system records it: normal behaviour from another
        run, metrics resampled, renamed, beside a fleet, and modalities hidden."""
        incident = drifted(incident, self.drift)
        incident = reshaped(incident, step=self.step, vocabulary=self.vocabulary, fleet=self.fleet)
        return hidden(incident, self.hide)


def parse_protocol(
    placement: str,
    hide: str = "",
    *,
    resample: str = "",
    vocabulary: str = "",
    fleet: int = 0,
    drift: str = "",
    bystanders: int = 0,
) -> Protocol:
    """A protocol from the command line's `--protocol`, `--hide` (comma-separated),
    `--resample`, `--vocabulary`, `--fleet`, `--drift` and `--bystander-changes`."""
    try:
        where = Placement(placement.strip().lower())
    except ValueError:
        raise InputError(
            f"unknown protocol {placement!r}; choose from {', '.join(p.value for p in Placement)}"
        ) from None
    return Protocol(
        where,
        frozenset(h.strip().lower() for h in hide.split(",") if h.strip()),
        step=parse_step(resample) if resample else None,
        vocabulary=parse_vocabulary(vocabulary) if vocabulary else None,
        fleet=fleet,
        drift=parse_drift(drift) if drift else 0.0,
        bystanders=bystanders,
    )


def _draw(kind: str, case_id: str) -> int:
    """A number fixed by the case id, one per kind of draw."""
    return int.from_bytes(hashlib.sha256(f"{kind}:{case_id}".encode()).digest()[:8], "big")


def realistic_window(case_id: str, start: float) -> Window:
    """The window a user would ask about, for a fault that began at `start` (no sampling yet)."""
    digest = _draw("realistic", case_id)
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


async def late(case: IncidentCase) -> Incident:
    """The case's incident asked late: a window that begins 1-10 minutes after the fault began
    and runs 15 minutes (longer where no metric sample falls in it), without an alert time."""
    incident = case.incident
    start = case.label.start
    if start is None:
        note = "late protocol: the label gives no fault start, the layout's window is kept"
        return replace(incident, alert_time=None, notes=(*incident.notes, note))
    lo, hi = LATE_SECONDS
    begin = start + lo + _draw("late", case.id) % int(hi - lo + 1)
    window = Window(begin, begin + LATE_LENGTH)
    first = await _first_sample_from(incident, begin)
    if first is not None and first >= window.end:
        window = Window(window.start, first + 1.0)
    return replace(with_window(incident, window), alert_time=None)


async def planted(case: IncidentCase, incident: Incident, count: int) -> Incident:
    """The incident with `count` harmless deploys to services other than the labelled one,
    each service and time drawn from the case id, the times over the window and as long again
    before it."""
    names: set[str] = set()
    with contextlib.suppress(RcaError, OSError):  # a graph that cannot be read names no one
        if incident.sources.topology is not None:
            graph = await incident.sources.topology.topology()
            names.update(str(n) for n in graph if not is_kpi(graph, n))
    with contextlib.suppress(RcaError, OSError):
        if incident.sources.metrics is not None:
            names.update(await incident.sources.metrics.entities())
    pool = sorted(names - {case.label.service})
    if not pool:
        return incident
    window = incident.window
    length = window.end - window.start
    planted = []
    for i in range(count):
        digest = _draw(f"bystander-{i}", case.id)
        at = window.start - length + (digest >> 20) % int(2 * length * 1000 + 1) / 1000
        planted.append(
            Change(pool[digest % len(pool)], ChangeKind.DEPLOY, at, "1.0.0", "1.0.1", "evaluation", source="planted")
        )
    note = f"{count} harmless change(s) to bystanders planted by the evaluation protocol"
    return replace(incident, changes=(*incident.changes, *planted), notes=(*incident.notes, note))


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
