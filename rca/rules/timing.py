"""Rule `timing`: the incident asked about is the one the symptom shows; an anomaly that ran at
another time belongs to another incident.

Its time is the symptom's: when the symptom alerted, where that is known; else the symptom's
degradation (a series moved the bad way: a symptom that improved begins no incident) that
goes on when the window closes; else the window's close itself (the user asks
about now). An anomaly over before then, begun well after the symptom's began, or already
under way before the data began, is another incident's: the window a user asks about holds
the start of the incident they ask about. (Setting aside only what was under way when the
symptom's own onset is seen was measured and cost PetShop: docs/notes/05-this-round-2026-12-03-issue-40-protocols-on-call-meets-and-w.md.)

Asked late (`ASKED_LATE`, its own ablation switch): where no anomaly of the symptom begins
inside the window but the symptom was degraded from the window's first sample, at half its
worst or more, and still is at its close, the user asked well into their incident. Then what
was under way when the window opened is theirs, and what began well after it opened is a
later incident's. A symptom that deepened past twice its opening depth began anew inside the
window, and data that began inside it (a restarted exporter) cannot say: both keep the rule
above.

Opened back (`REOPEN`, its own ablation switch): before anything is read for the search,
where the symptom's series were already degraded when the window opened (a run under way
since the window's own first sample, not since a recording that began inside it) and none of
them began degrading inside it, the incident asked about began before the window; the
investigation then reads the window opened back by its own length, once, so that it holds
that start, and says so.

Residue (`RESIDUE`, its own ablation switch): where the symptom tells when the incident asked
about began, an anomaly of a service still standing at the close that began together with that
service's strongest anomaly of the moment, itself over before the incident began, is that
earlier incident's residue (a level it raised and left), not part of the one asked about. Where
the symptom does not tell, the incident over before the close may be the one asked about, and
what still stands of it is kept.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from rca.evidence import Evidence, EvidenceId
from rca.evidence.metrics import MetricShift
from rca.model import Modality
from rca.profiles import Profiled, profile_step
from rca.signals import bad_direction
from rca.telemetry import Window, to_iso
from rca.topology import ONSET_TOLERANCE

ASKED_LATE = "asked-late"  # the ablation switch of the symptom's degradation under way when the window opened
REOPEN = "reopen"  # the ablation switch of a window opened back to hold the start of an incident asked about late
RESIDUE = "residue"  # the ablation switch of what an incident over before this one began left standing


@dataclass(frozen=True, slots=True)
class Reference:
    """When the incident asked about ran, as far as the symptom tells."""

    start: float | None  # None: not known (under way before the data, or no symptom seen)
    end: float | None  # None: it goes on
    before_data: bool = False  # the symptom was anomalous from its first sample: so was the incident
    residue: frozenset[EvidenceId] = frozenset()  # still standing, but left by an incident over before this one began


def reference(
    evidence: Sequence[Evidence],
    symptom: str,
    alert_time: float | None,
    window: Window,
    *,
    asked_late: bool = True,
    residue: bool = True,
) -> Reference:
    """When the incident asked about ran (`_when`), with the residue of an earlier incident
    (`residue`) told apart."""
    ref = _when(evidence, symptom, alert_time, window, asked_late=asked_late)
    return replace(ref, residue=outlasting(evidence, ref)) if residue else ref


def _when(
    evidence: Sequence[Evidence], symptom: str, alert_time: float | None, window: Window, *, asked_late: bool
) -> Reference:
    """The alert time, or the symptom's degradation as the ones it serves feel it (not its
    process's own resources) going on at the window's close: begun inside the data, or else
    (`asked_late`) under way since the symptom's first sample, as when on-call asks well into
    an incident; or nothing known (the window's close)."""
    if alert_time is not None:
        return Reference(alert_time, alert_time)
    going = [
        ev
        for ev in evidence
        if ev.entity == symptom
        and ev.until is None
        and ev.onset is not None
        and not ev.under_way
        and degraded(ev)
        and not ev.of_process
    ]
    if going:
        return Reference(min(ev.onset for ev in going if ev.onset is not None), None)
    before = (
        [
            ev.profile[0][0]
            for ev in evidence
            if ev.entity == symptom
            and ev.until is None
            and ev.under_way
            and degraded(ev)
            and not ev.of_process
            and worst_from_open(ev)
            and not undatable(ev, window)
        ]
        if asked_late
        else []
    )
    if before:
        return Reference(None, min(before), before_data=True)
    return Reference(None, None)


def outlasting(evidence: Sequence[Evidence], ref: Reference) -> frozenset[EvidenceId]:
    """The anomalies still standing at the close that an incident over before this one began
    left behind: each began together (within the onset tolerance) with its service's strongest
    anomaly of the moment, and that one was over before the incident asked about began. Empty
    where the symptom does not tell when that was."""
    if ref.start is None:
        return frozenset()
    dated: dict[str, list[tuple[float, Evidence]]] = defaultdict(list)  # per service: (onset, evidence)
    for ev in evidence:
        if ev.onset is not None and not ev.under_way:
            dated[ev.entity].append((ev.onset, ev))
    out: set[EvidenceId] = set()
    for evs in dated.values():
        for onset, ev in evs:
            if ev.until is not None or elsewhere(ev, ref) is not None:
                continue
            together = [o for at, o in evs if abs(at - onset) <= ONSET_TOLERANCE]
            strongest = max(together, key=lambda o: o.score)
            if strongest.until is not None and elsewhere(strongest, ref) is Elsewhere.OVER:
                out.add(ev.id)
    return frozenset(out)


def degraded(ev: Evidence) -> bool:
    """The anomaly moved its series the bad way: a metric as `bad_direction` says, any other
    evidence upward (more errors, more latency)."""
    if ev.modality is Modality.METRICS:
        return ev.direction == bad_direction(ev.subject)
    return ev.direction > 0


def worst_from_open(ev: Evidence) -> bool:
    """The anomaly stood, at its first sample, at half its worst or more: it was under way, not
    yet to begin (a run that deepens past twice its opening depth began anew inside it)."""
    depth = [abs(z) for _, z in ev.profile]
    return bool(depth) and depth[0] >= max(depth) / 2


def weight(ev: Evidence, ref: Reference, *, past_weight: float, timing: bool = True) -> float:
    """The weight of one piece of evidence, in [0, 1], by when its anomaly ran: 1 for this
    incident's; `past_weight` for another's (over before the symptom's began, begun well
    after the symptom alerted, or under way since before its data: the window a user asks
    about holds the start of the incident they ask about); halfway for a metric blip that
    never held two samples, which cannot be placed."""
    if not timing:
        return 1.0
    if elsewhere(ev, ref) is not None:
        return past_weight
    if ev.onset is None and ev.modality is not Modality.LOGS:
        return (1.0 + past_weight) / 2
    return 1.0


class Elsewhere(StrEnum):
    """Why an anomaly belongs to another incident than the one asked about."""

    OVER = "over"  # over before the close, or before the symptom's began
    FOLLOWED = "followed"  # began well after the symptom alerted
    UNDER_WAY = "under_way"  # under way since before its data


def elsewhere(ev: Evidence, ref: Reference) -> Elsewhere | None:
    """Why `ev` ran at another time than the incident asked about; None where it may be this
    incident's (within the clock skew forgiven between a cause and its effect)."""
    if ev.id in ref.residue:
        return Elsewhere.OVER
    if ev.until is not None and (ref.start is None or _past(ref.start, ev.until, ev)):
        return Elsewhere.OVER
    if ref.end is not None and ev.onset is not None and _past(ev.onset, ref.end, ev):
        return Elsewhere.FOLLOWED
    if ev.under_way and not ref.before_data:
        return Elsewhere.UNDER_WAY
    return None


def undatable(ev: Evidence, window: Window) -> bool:
    """Under way since its first sample, where that sample is not the window's first but a
    recording's that began inside it (a new pod, a restarted exporter, a scrape gap): it may
    have begun anywhere before the data, within the window asked about too, so time cannot
    place it."""
    if not ev.under_way or not ev.profile:
        return False
    return _past(ev.profile[0][0], window.start, ev)


def opened_late(symptom: Sequence[MetricShift], window: Window) -> bool:
    """The symptom's series (its metric shifts) were degraded from the window's own first
    sample and none began degrading inside the window: the incident asked about began before
    it."""
    bad = [m for m in symptom if m.direction == bad_direction(m.metric) and m.profile]
    if any(not m.under_way and m.onset is not None for m in bad):
        return False
    return any(m.under_way and not _past(m.profile[0][0], window.start, m) for m in bad)


def opened_back(window: Window) -> Window:
    """The window opened back by its own length: where a question asked late finds its
    incident's start."""
    return Window(window.start - window.seconds, window.end)


LATE_NOTE = "asked late"  # how the investigation's note of a window opened back begins


def opened_back_note(symptom: str, asked: Window) -> str:
    """What the investigation says of a window it opened back."""
    return (
        f"{LATE_NOTE}: {symptom} was already degraded when the window opened at {to_iso(asked.start)}, so the "
        f"investigation read from {to_iso(opened_back(asked).start)} (the window's length earlier) to hold the "
        "incident's start"
    )


def _past(later: float, earlier: float, ev: Profiled) -> bool:
    """`later` lies past `earlier` by more than the time forgiven around `ev`'s anomaly: the
    skew between a cause and its effect, or its series' sampling step where that is longer
    (the step is read only where the skew alone does not settle it)."""
    gap = later - earlier
    return gap > ONSET_TOLERANCE and gap > profile_step([ev])
