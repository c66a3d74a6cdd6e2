"""The reasoning errors a real agent makes, written into a sound trace, and the harmless
rewrites a sound audit must leave alone (`rca.evaluation.star_honest` audits both).

Errors: a believable victim made root (its chain rebuilt from its real evidence), confidence
kept while the evidence is cut to one weak item, anchoring on the earliest anomaly, the right
service with a neighbouring fault type, and two errors at once; each family with the stages
it writes its error into (`WRITTEN`). Rewrites: evidence ids renamed, the confidence moved, the
leader's chain drawn along another call path as short as its own.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import replace

import networkx as nx

from rca.evidence import EvidenceId
from rca.model import FaultType
from rca.star.criteria import AuditContext
from rca.trace import Trace, chain_along, replay

SMALL_BUDGET = 4  # reads of the independent run that may miss the root

# the fault type a hurried reader confuses with each (same service, a neighbouring cause)
NEIGHBOUR: dict[FaultType, FaultType] = {
    FaultType.CPU: FaultType.MEMORY,
    FaultType.MEMORY: FaultType.CPU,
    FaultType.NETWORK_DELAY: FaultType.NETWORK_LOSS,
    FaultType.NETWORK_LOSS: FaultType.NETWORK_DELAY,
    FaultType.EXCEPTION: FaultType.WRONG_RESULT,
    FaultType.WRONG_RESULT: FaultType.EXCEPTION,
    FaultType.OVERLOAD: FaultType.CPU,
    FaultType.DISK: FaultType.MEMORY,
}


def _promote(t: Trace, graph: nx.DiGraph, service: str) -> Trace | None:
    """The trace had `service` led: the values of the leader and of `service` swapped, the
    analysis and the decision rebuilt from them (a coherent trace, nothing marked)."""
    hyps = list(t.hypotheses)
    i = next((k for k, h in enumerate(hyps) if h.service == service), None)
    if i is None or i == 0:
        return None
    top, other = hyps[0], hyps[i]
    hyps[0], hyps[i] = replace(other, value=top.value), replace(top, value=other.value)
    return replay(replace(t, hypotheses=tuple(hyps)), graph=graph, start="analysis_structure")


def victim_made_root(t: Trace, ctx: AuditContext) -> Trace | None:
    """The leading rival that calls the leader (directly or not): a victim, made the root."""
    if not t.hypotheses or t.hypotheses[0].service not in ctx.graph:
        return None
    callers = nx.ancestors(ctx.graph, t.hypotheses[0].service)
    victim = next((h.service for h in t.hypotheses[1:] if h.service in callers and h.evidence), None)
    return _promote(t, ctx.graph, victim) if victim else None


def anchored_on_earliest(t: Trace, ctx: AuditContext) -> Trace | None:
    """The hypothesis whose evidence began first, made the root (anchoring on the first alert)."""
    onset = {ev.id: ev.onset for ev in t.evidence_package.evidence if ev.onset is not None}
    began = {h.service: min((onset[i] for i in h.evidence if i in onset), default=None) for h in t.hypotheses}
    known = [(b, s) for s, b in began.items() if b is not None]
    return _promote(t, ctx.graph, min(known)[1]) if known else None


def thin_evidence(t: Trace, ctx: AuditContext) -> Trace | None:
    """The leader and its confidence kept, its evidence cut to its one weakest item."""
    if not t.hypotheses:
        return None
    top = t.hypotheses[0]
    by_id = {ev.id: ev for ev in t.evidence_package.evidence}
    cited = [by_id[i] for i in top.evidence if i in by_id]
    if len(cited) < 2:
        return None
    # ties broken by what the item is, not by its id (ids follow the order reads finished in)
    weakest = min(cited, key=lambda ev: (ev.score, ev.entity, ev.kind.value, ev.subject, ev.signal.value))
    gone = {ev.id for ev in cited} - {weakest.id}
    ep = replace(t.evidence_package, evidence=tuple(ev for ev in t.evidence_package.evidence if ev.id not in gone))
    hyps = tuple(replace(h, evidence=tuple(i for i in h.evidence if i not in gone)) for h in t.hypotheses)
    chains = tuple(
        replace(c, links=tuple(replace(ln, evidence=tuple(i for i in ln.evidence if i not in gone)) for ln in c.links))
        for c in t.chains
    )
    return replace(t, evidence_package=ep, hypotheses=hyps, chains=chains)


def neighbouring_fault_type(t: Trace, ctx: AuditContext) -> Trace | None:
    """The right service with the fault type a hurried reader confuses with its own."""
    if not t.hypotheses or t.hypotheses[0].fault_type not in NEIGHBOUR:
        return None
    top = t.hypotheses[0]
    hyps = (replace(top, fault_type=NEIGHBOUR[top.fault_type]), *t.hypotheses[1:])
    return replay(replace(t, hypotheses=hyps), graph=ctx.graph, start="analysis_structure")


def two_at_once(t: Trace, ctx: AuditContext) -> Trace | None:
    """A victim made root, and its evidence cut to one weak item."""
    promoted = victim_made_root(t, ctx)
    return thin_evidence(promoted, ctx) if promoted is not None else None


FAMILIES: dict[str, Callable[[Trace, AuditContext], Trace | None]] = {
    "victim_made_root": victim_made_root,
    "thin_evidence": thin_evidence,
    "anchored_on_earliest": anchored_on_earliest,
    "neighbouring_fault_type": neighbouring_fault_type,
    "two_at_once": two_at_once,
}
READ_BUDGET_FAMILY = f"read_budget_{SMALL_BUDGET}"
# the stages each family writes its error into: where a localiser should find it (thin evidence
# cuts the package and keeps the value the hypothesis had on more: a repair of either stage
# makes the trace consistent again)
WRITTEN: dict[str, tuple[str, ...]] = {
    "victim_made_root": ("hypothesis_set",),
    "thin_evidence": ("evidence_package", "hypothesis_set"),
    "anchored_on_earliest": ("hypothesis_set",),
    "neighbouring_fault_type": ("hypothesis_set",),
    "two_at_once": ("hypothesis_set", "evidence_package"),
    READ_BUDGET_FAMILY: ("evidence_package",),
}


def renamed_ids(t: Trace) -> Trace:
    """Every evidence id renamed (their order reversed), every reference with it."""
    ids = [ev.id for ev in t.evidence_package.evidence]
    new = {old: EvidenceId(f"ev-{len(ids) - k}") for k, old in enumerate(ids)}

    def re(xs: Sequence[EvidenceId]) -> tuple[EvidenceId, ...]:
        return tuple(new.get(i, i) for i in xs)

    ep = replace(t.evidence_package, evidence=tuple(replace(ev, id=new[ev.id]) for ev in t.evidence_package.evidence))
    hyps = tuple(replace(h, evidence=re(h.evidence)) for h in t.hypotheses)
    chains = tuple(replace(c, links=tuple(replace(ln, evidence=re(ln.evidence)) for ln in c.links)) for c in t.chains)
    return replace(t, evidence_package=ep, hypotheses=hyps, chains=chains)


def other_shortest_path(t: Trace, graph: nx.DiGraph) -> Trace | None:
    """The leader's chain drawn along another call path from the symptom as short as the one
    the analysis took, its links supported as the analysis supports them (None: there is no
    other such path)."""
    if not t.chains or t.symptom not in graph or t.chains[0].root not in graph:
        return None
    chain, lead = t.chains[0], next((h for h in t.hypotheses if h.id == t.chains[0].hypothesis), None)
    if lead is None:
        return None
    try:
        paths = list(itertools.islice(nx.all_shortest_paths(graph, t.symptom, chain.root), 8))
    except nx.NetworkXNoPath:
        return None
    drawn = (chain_along(t.evidence_package, lead, p) for p in paths)
    other = next((c for c in drawn if c.links != chain.links), None)
    return replace(t, chains=(other, *t.chains[1:])) if other is not None else None


def nudged_confidence(t: Trace, by: float) -> Trace:
    """The stated confidence moved by `by` (within [0, 1]): a different wording of the same verdict."""
    d = t.decision
    conf = min(1.0, max(0.0, d.confidence + by))
    ranking = ((d.ranking[0][0], d.ranking[0][1], conf, d.ranking[0][3]), *d.ranking[1:]) if d.ranking else ()
    return replace(t, decision=replace(d, confidence=conf, ranking=ranking))
