"""S1, the evidence package: does it cover the onset, the right modalities, the neighbourhood?"""

from __future__ import annotations

from rca.model import FaultType
from rca.star.criteria import MECHANISM_MODALITIES, AuditContext, Criterion, leading
from rca.topology import neighbours
from rca.trace import Trace

STAGE = "evidence_package"
EDGE_SHARE = 0.05  # an onset within this share of the window's start may predate the window


def check(trace: Trace, ctx: AuditContext) -> list[Criterion]:
    return [
        onset_covered(trace),
        modality_fit(trace, ctx),
        scope_neighbours(trace, ctx),
        leads_examined(trace, ctx),
        sources_read(trace, ctx),
    ]


def onset_covered(trace: Trace) -> Criterion:
    """The window starts before the leading hypotheses' anomalies begin.

    Per leading hypothesis: 1 when its cited anomalies begin inside the window, the share of
    them that do when some sit at the window's start, and 0.5 when none has a known onset (a
    window opened after the change shows a level, not a change).
    """
    ep = trace.evidence_package
    edge = ep.window.start + EDGE_SHARE * ep.window.seconds
    onset_of = {ev.id: ev.onset for ev in ep.evidence if ev.onset is not None}
    scores, early = [], []
    for h in leading(trace):
        times = [(i, onset_of[i]) for i in h.evidence if i in onset_of]
        late = [i for i, t in times if t <= edge]
        early.extend(late)
        scores.append(1.0 - len(late) / len(times) if times else 0.5)
    if not scores:
        return Criterion(STAGE, "onset_covered", 0.5, 1.0, "no hypothesis to place in time")
    score = sum(scores) / len(scores)
    unknown = sum(1 for x in scores if x == 0.5)
    parts = []
    if early:
        parts.append(f"{len(set(early))} cited onsets sit at the window's start: the change may have begun before it")
    if unknown:
        parts.append(f"{unknown} of {len(scores)} leading hypotheses have no onset inside the window")
    why = "; ".join(parts) or "every onset lies inside the window"
    return Criterion(STAGE, "onset_covered", score, 1.0, why, tuple(dict.fromkeys(early)))


def modality_fit(trace: Trace, ctx: AuditContext) -> Criterion:
    """The modalities that show the leading mechanism were read, where they exist."""
    top = trace.hypotheses[0] if trace.hypotheses else None
    if top is None:
        return Criterion(STAGE, "modality_fit", 0.0, 1.0, "no hypothesis to fit modalities to")
    ep = trace.evidence_package
    wanted = MECHANISM_MODALITIES.get(top.fault_type, ()) or ("metrics",)
    available = ctx.modalities_available or ep.modalities
    possible = [m for m in wanted if available.get(m, False)]
    read = {m for m, ok in ep.modalities.items() if ok}
    with_evidence = {ev.modality.value for ev in ep.evidence if ev.entity == top.service}
    if not possible:
        return Criterion(
            STAGE,
            "modality_fit",
            0.6,
            1.0,
            f"{top.fault_type.value} shows in {', '.join(wanted)}, none of which exists here",
        )
    missing_read = [m for m in possible if m not in read]
    unseen = [m for m in possible if m in read and m not in with_evidence]
    score = 1.0 - (len(missing_read) + 0.5 * len(unseen)) / len(possible)
    parts = []
    if missing_read:
        parts.append(f"{', '.join(missing_read)} exist but were not read")
    if unseen:
        parts.append(f"no {', '.join(unseen)} evidence for {top.service}")
    why = "; ".join(parts) or f"{', '.join(possible)} read for {top.fault_type.value}"
    return Criterion(STAGE, "modality_fit", max(0.0, score), 1.0, why)


def sources_read(trace: Trace, ctx: AuditContext) -> Criterion:
    """Every modality the incident has a source for could actually be read (a backend that
    failed or timed out leaves the package partial)."""
    ep = trace.evidence_package
    configured = [m for m, ok in ctx.modalities_available.items() if ok]
    unread = [m for m in configured if not ep.modalities.get(m, False)]
    if not configured or not unread:
        return Criterion(STAGE, "sources_read", 1.0, 1.0, "every configured source was read")
    reasons = [line for line in ep.missing if line.split(":", 1)[0] in unread]
    why = f"{', '.join(unread)} could not be read: " + ("; ".join(reasons) or "the backend failed")
    return Criterion(STAGE, "sources_read", 1.0 - len(unread) / len(configured), 1.0, why[:400])


def scope_neighbours(trace: Trace, ctx: AuditContext) -> Criterion:
    """The scope holds the leading suspects' callers and callees, not only the victims."""
    ep = trace.evidence_package
    scope = ep.examined
    wanted: set[str] = set()
    for h in leading(trace):
        wanted |= neighbours(ctx.graph, h.service)
    if not wanted:
        return Criterion(STAGE, "scope_neighbours", 1.0, 1.0, "no neighbours in the call graph")
    missing = sorted(wanted - scope)
    score = 1.0 - len(missing) / len(wanted)
    why = (
        f"{len(missing)} of {len(wanted)} neighbours of the leading suspects never examined"
        if missing
        else "all neighbours examined"
    )
    return Criterion(STAGE, "scope_neighbours", score, 1.0, why, tuple(missing[:10]))


def leads_examined(trace: Trace, ctx: AuditContext) -> Criterion:
    """The entities whose telemetry stands out most (a scan of each modality) were examined:
    a package that never looked at them cannot rule them out. A requirement: violated, the
    trace is repaired (by reading them), however well the rest of it scores."""
    if not ctx.leads:
        return Criterion(STAGE, "leads_examined", 1.0, 1.0, "no scan of the telemetry to compare with")
    seen = trace.evidence_package.examined
    missing = [e for e in ctx.leads if e not in seen]
    score = 1.0 - len(missing) / len(ctx.leads)
    why = (
        f"{len(missing)} of {len(ctx.leads)} entities the telemetry flags most were never examined"
        if missing
        else "every entity the telemetry flags most was examined"
    )
    return Criterion(STAGE, "leads_examined", score, 1.0, why, tuple(missing), necessary=bool(missing))


__all__ = ["STAGE", "check", "FaultType"]
