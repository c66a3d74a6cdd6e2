"""The telemetry's own word on a verdict, read without the reasoner's rules.

The form checks of the four stages (rca.star.package .. report) ask whether a trace is well
made; they cannot tell a well-made wrong answer from a right one. These look at the evidence
itself:

- `independent_lead`: the evidence of this incident re-scored by its raw deviation alone
  (each item's robust score, no fault recipes, no call-graph rules): where does that put
  the blamed service? 1 / its rank. A blamed service with no anomaly of this incident at all
  (everything it shows ran at another time, rca.rules.timing) violates a requirement: the
  trace is not accepted, however well it is made.
- `began_first`: did the blamed service's anomaly in this incident begin no later than
  those of the rival hypotheses?
- `seen_at_source`: is the blamed mechanism seen in the modality that shows it at its
  source (a delay in timed calls, not only in the service's latency percentiles)? 1 / the
  rank of the best modality that carried it.
- `support`: how far the telemetry backs the verdict: the support its own evidence gives
  the leading answer (its value, tempered by its lead) times `independent_lead`'s score,
  times the share of the telemetry's own leads that the package examined, times
  `seen_at_source`'s score. The audit's
  trust in a verdict is its form score times this support; `rcabot eval --audit` measures
  how well that predicts a wrong first place.
"""

from __future__ import annotations

from collections.abc import Sequence

from rca.evidence import Evidence
from rca.rules.timing import reference, weight
from rca.star.criteria import MECHANISM_MODALITIES, AuditContext, Criterion, leading
from rca.star.report import sufficiency
from rca.topology import ONSET_TOLERANCE
from rca.trace import Trace

HYPOTHESES = "hypothesis_set"
ANALYSIS = "analysis_structure"
CHECKS = ("independent_lead", "began_first", "seen_at_source")  # the criteria that re-read the telemetry


def current(trace: Trace) -> list[Evidence]:
    """The evidence of the incident asked about (rca.rules.timing), or all of it when none
    can be told apart."""
    ep = trace.evidence_package
    ref = reference(ep.evidence, trace.symptom, ep.alert_time, ep.window)
    mine = [ev for ev in ep.evidence if weight(ev, ref, past_weight=0.0) == 1.0]
    return mine or list(ep.evidence)


def rescored(evidence: Sequence[Evidence]) -> dict[str, float]:
    """Per entity, the largest raw deviation among its evidence."""
    out: dict[str, float] = {}
    for ev in evidence:
        out[ev.entity] = max(out.get(ev.entity, 0.0), ev.score)
    return out


def rank_in(scores: dict[str, float], entity: str) -> int | None:
    """1 + how many entities deviate strictly more; None when it has no evidence."""
    if entity not in scores:
        return None
    return 1 + sum(1 for s in scores.values() if s > scores[entity])


def check(trace: Trace, ctx: AuditContext) -> list[Criterion]:
    mine = current(trace)
    return [independent_lead(trace, mine), began_first(trace, mine), seen_at_source(trace)]


def support(trace: Trace, lead: Criterion, examined: Criterion, source: Criterion) -> float:
    """How far the telemetry backs the verdict, in [0, 1]: the decision's evidence support,
    times `independent_lead`'s 1 / rank, times the share of the entities the telemetry flags
    most that the evidence package examined (rca.star.package.leads_examined): a lead never
    looked at cannot have been ruled out, however well the rest backs the answer; times
    `seen_at_source`'s 1 / rank of the modality that carried the blamed mechanism."""
    return round(sufficiency(trace) * lead.score * examined.score * source.score, 4)


def independent_lead(trace: Trace, mine: Sequence[Evidence]) -> Criterion:
    """Re-scored by raw deviation alone, the blamed service's own telemetry (of `mine`, this
    incident's evidence) leads."""
    if not trace.hypotheses:
        return Criterion(HYPOTHESES, "independent_lead", 0.0, 1.0, "no hypothesis to re-score")
    top = trace.hypotheses[0].service
    scores = rescored(mine)
    rank = rank_in(scores, top)
    if rank is None:  # a requirement: what it shows ran at another time, so it may answer another incident
        return Criterion(
            HYPOTHESES,
            "independent_lead",
            0.0,
            1.0,
            f"{top} shows no anomaly of the incident asked about: what it shows ran at another time",
            (trace.hypotheses[0].id,),
            necessary=True,
        )
    if rank == 1:
        return Criterion(
            HYPOTHESES,
            "independent_lead",
            1.0,
            1.0,
            f"re-scored without the rules, {top}'s telemetry still deviates most",
        )
    ahead = sorted((e for e, s in scores.items() if s > scores[top]), key=lambda e: -scores[e])
    why = (
        f"re-scored without the rules, {top} ranks {rank}: "
        f"{', '.join(ahead[:3])} deviate{'s' if len(ahead) == 1 else ''} more"
    )
    return Criterion(HYPOTHESES, "independent_lead", 1.0 / rank, 1.0, why, tuple(ahead[:3]))


def began_first(trace: Trace, mine: Sequence[Evidence]) -> Criterion:
    """The blamed service's anomaly in this incident began no later than its rivals' (within
    the clock skew forgiven between a cause and its effect)."""
    hyps = leading(trace)
    if len(hyps) < 2:
        return Criterion(ANALYSIS, "began_first", 1.0, 1.0, "no rival hypothesis to compare onsets with")
    onsets = {ev.id: ev.onset for ev in mine if ev.onset is not None}
    onset = {h.service: min((onsets[i] for i in h.evidence if i in onsets), default=None) for h in hyps}
    top = hyps[0].service
    rivals = {s: t for s, t in onset.items() if s != top and t is not None}
    began = onset[top]
    if began is None or not rivals:
        return Criterion(ANALYSIS, "began_first", 0.5, 1.0, "the leading hypotheses' onsets cannot be compared")
    earlier = sorted(s for s, t in rivals.items() if t + ONSET_TOLERANCE < began)
    if not earlier:
        return Criterion(ANALYSIS, "began_first", 1.0, 1.0, f"{top}'s anomaly began first among the leading hypotheses")
    return Criterion(
        ANALYSIS,
        "began_first",
        0.0,
        1.0,
        f"{', '.join(earlier)} began before {top}: the blamed anomaly may be an effect",
        tuple(earlier),
    )


def seen_at_source(trace: Trace) -> Criterion:
    """The blamed mechanism is seen in the modality that shows it at its source: 1 / the rank,
    among the modalities that show that mechanism (rca.star.criteria.MECHANISM_MODALITIES,
    the one at its source first), of the best one the blamed service's cited evidence comes
    from. A delay seen only in a service's latency percentiles, not in its timed calls, may be
    the slowness of anything it waits on. Where its evidence comes from none of them the type
    itself is in question, which `type_carried` judges: 1 here."""
    if not trace.hypotheses:
        return Criterion(HYPOTHESES, "seen_at_source", 1.0, 1.0, "no hypothesis to check")
    top = trace.hypotheses[0]
    shows = MECHANISM_MODALITIES.get(top.fault_type, ())
    by_id = {ev.id: ev for ev in trace.evidence_package.evidence}
    carried = {by_id[i].modality.value for i in top.evidence if i in by_id}
    best = next((k for k, m in enumerate(shows) if m in carried), None)
    mechanism = f"{top.fault_type.value} at {top.service}"
    if best is None:
        return Criterion(
            HYPOTHESES,
            "seen_at_source",
            1.0,
            1.0,
            f"no evidence of {top.service} in a modality that shows {top.fault_type.value}",
        )
    if best == 0:
        return Criterion(HYPOTHESES, "seen_at_source", 1.0, 1.0, f"{mechanism} is seen where it shows at its source")
    return Criterion(
        HYPOTHESES,
        "seen_at_source",
        1.0 / (best + 1),
        1.0,
        f"{mechanism} is seen only in its {shows[best]}, not in its {' or '.join(shows[:best])}, "
        "which show it at its source",
        (top.id,),
    )
