"""Root-cause hypotheses: (service, fault type) with a value in [0, 1], each citing its evidence.

The value of a hypothesis is read from the evidence of its service: localised evidence (a
service's own CPU, own work time, the network gap of every call it takes part in, exceptions
it throws) weighs more than evidence that propagates (latency and errors seen by callers),
and each fault type is a recipe of such components. The rules in `rca.rules`, each with its
principle and an ablation switch, then shape the values by time and by the call graph.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NewType

import networkx as nx

from rca.changes import Change
from rca.evidence import Evidence, EvidenceId, EvidenceKind
from rca.evidence.traces import NO_GAPS, GapShare
from rca.fault_model import GATES, LOG_PART, PART_OF_SIGNAL, depth
from rca.model import FaultType, Modality
from rca.profiles import comovement  # noqa: F401  (re-exported: the trace and the tests weigh profiles with it)
from rca.rules.answers import DOWNSTREAM, earlier_caller
from rca.rules.background import keep_what_stands_out
from rca.rules.board import Board
from rca.rules.causality import Causality
from rca.rules.changes import UNDONE, WAITS, breaking_change, lift_changed, moved_by_restart
from rca.rules.comovement import weigh_comovement
from rca.rules.config import ScoringConfig
from rca.rules.delays import place_delays
from rca.rules.dominance import lift_dominant
from rca.rules.endpoints import discount_endpoints
from rca.rules.footprint import fold_memory_into_cpu
from rca.rules.raised import failing_answers
from rca.rules.reach import discount_unreachable
from rca.rules.timing import (
    ASKED_LATE,
    RESIDUE,
    Elsewhere,
    Reference,
    degraded,
    elsewhere,
    reference,
    undatable,
    weight,
)
from rca.rules.unseen import counted, modality_of, unseen
from rca.rules.victims import explaining_callee, victim_share
from rca.signals import Signal, is_host_metric
from rca.telemetry import Window
from rca.topology import is_kpi

HypothesisId = NewType("HypothesisId", str)
RANK_PRECISION = 3  # decimal places the ranking tells values apart at
# a line that reports an exception, in the words of the common runtimes: Java's and .NET's
# exceptions and causes, Python's traceback, Go's panic
_EXCEPTION_WORDS = ("exception", "threw", "throwable", "stacktrace", "caused by", "traceback (most recent", "panic:")


@dataclass(frozen=True, slots=True)
class Hypothesis:
    id: HypothesisId
    service: str
    fault_type: FaultType
    value: float
    evidence: tuple[EvidenceId, ...]
    rationale: str

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "service": self.service,
            "fault_type": self.fault_type.value,
            "value": self.value,
            "evidence": list(self.evidence),
            "rationale": self.rationale,
        }


@dataclass(slots=True)
class _Signals:
    """Per-service components and the evidence behind each: while they are read, each as the
    deviation it stands for (`depth`); once read, as a strength in [0, 1]."""

    parts: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    cites: dict[str, list[EvidenceId]] = field(default_factory=lambda: defaultdict(list))

    def add(self, part: str, value: float, ev: Evidence) -> None:
        if value > self.parts[part]:
            self.parts[part] = value
        self.cites[part].append(ev.id)

    def get(self, part: str) -> float:
        return self.parts.get(part, 0.0)


def _load_made(sig: _Signals) -> None:
    """An overload's load is load that arrived, or load the service made itself by giving up on
    its calls and sending them again: the stronger of the two is its `traffic` part."""
    made = sig.parts.pop("repeat", 0.0)
    if made > sig.parts.get("traffic", 0.0):
        sig.parts["traffic"] = made
        sig.cites["traffic"] = list(sig.cites.get("repeat", []))


def _components(
    evidence: Sequence[Evidence],
    cfg: ScoringConfig,
    edge_share: Callable[[str], GapShare],
    graph: nx.DiGraph,
    ref: Reference,
    restarted: frozenset[EvidenceId] = frozenset(),
) -> dict[str, _Signals]:
    out: dict[str, _Signals] = defaultdict(_Signals)
    model = cfg.model
    # per (entity, log part): the summed deviation, and the part of it weighed by when it ran
    log_mass: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    began: dict[tuple[str, str], float] = {}  # (entity, "cpu" | "mem"): the earliest onset of that evidence
    seen: set[tuple[str, EvidenceKind, str, Signal]] = set()
    for ev in evidence:
        fact = (ev.entity, ev.kind, ev.subject, ev.signal)
        if fact in seen or ev.id in restarted:  # a shift read twice is one fact; one a restart made, none
            continue
        seen.add(fact)
        sig = out[ev.entity]
        w = weight(ev, ref, past_weight=cfg.past_weight, timing=cfg.on("timing"))
        if ev.kind is EvidenceKind.METRIC_SHIFT:
            host = is_host_metric(ev.subject)
            part = PART_OF_SIGNAL[ev.signal]
            worse = degraded(ev)
            if part in ("cpu", "mem", "disk", "lat", "traffic", "err", "loss") and not worse:
                continue
            sig.add(part + ("_host" if host else ""), depth(w, ev.score, model.metric_scale), ev)
            if part in ("cpu", "mem") and ev.onset is not None and not host:
                began[(ev.entity, part)] = min(ev.onset, began.get((ev.entity, part), ev.onset))
        elif ev.kind in (EvidenceKind.TRACE_SELF_TIME, EvidenceKind.TRACE_WRONG_ANSWER):  # its own work; wrong answers
            part = "own" if ev.kind is EvidenceKind.TRACE_SELF_TIME else "logerr"  # errors without an exception
            sig.add(part, depth(w, ev.score, model.trace_scale), ev)
        elif ev.kind is EvidenceKind.TRACE_REPEATED_CALLS:  # calls it gave up on and sent again: load it made
            sig.add("repeat", depth(w, ev.score, model.trace_scale), ev)
        elif ev.kind is EvidenceKind.TRACE_EDGE_LATENCY:
            share = edge_share(ev.entity)
            if share.incoming >= share.outgoing:  # delayed on its way in: its network
                sig.add("gap", depth(w * share.incoming, ev.score, model.trace_scale), ev)
            else:  # slow on its own side before the call left: its own resources
                sig.add("gap_out", depth(w * share.outgoing, ev.score, model.trace_scale), ev)
        elif ev.kind is EvidenceKind.LOG_ERROR_SHIFT:
            key = "exc" if any(word in ev.detail.lower() for word in _EXCEPTION_WORDS) else "logerr"
            _add_mass(log_mass[(ev.entity, key)], ev.score, w)
            sig.cites[key].append(ev.id)
        elif ev.kind is EvidenceKind.LOG_DEPENDENCY_ERROR:  # the writer's symptom of a callee: propagated errors
            sig.add("err", depth(w, ev.score, model.metric_scale), ev)
        elif ev.kind is EvidenceKind.LOG_PATH_CUT:
            _add_mass(log_mass[(ev.entity, "cut")], ev.score, w)
            sig.cites[LOG_PART["cut"]].append(ev.id)
        elif ev.kind is EvidenceKind.LOG_FREQUENCY_SHIFT and ev.direction < 0:
            _add_mass(log_mass[(ev.entity, "logdrop")], ev.score, w)
            sig.cites["logdrop"].append(ev.id)
        elif ev.kind in (EvidenceKind.LOG_NEW_TEMPLATE, EvidenceKind.LOG_FREQUENCY_SHIFT):
            _add_mass(log_mass[(ev.entity, "lognew")], ev.score, w)
            sig.cites["lognew"].append(ev.id)
    mine = (ev for ev in evidence if not (cfg.on("timing") and elsewhere(ev, ref) is not None))
    raised = failing_answers(mine) if cfg.on("raised") else frozenset()
    for (entity, key), (mass, weighed) in log_mass.items():
        if key == "logerr" and entity in raised:  # errors it answered with: ones it raised
            key = "exc"
            out[entity].cites["exc"].extend(out[entity].cites.pop("logerr", []))
        part = LOG_PART.get(key, key)
        # as strong as the deviation is, and as much this incident's as its weighed share
        deep = depth(weighed / mass if mass > 0 else 0.0, mass, model.log_scales[key])
        out[entity].parts[part] = max(out[entity].parts[part], deep)
    if cfg.on("footprint"):
        for entity, sig in out.items():
            fold_memory_into_cpu(sig.parts, sig.cites, began.get((entity, "cpu")), began.get((entity, "mem")))
    if cfg.on("background"):
        keep_what_stands_out({e: sig.parts for e, sig in out.items()}, cfg.background_quantile, graph.number_of_nodes())
    for sig in out.values():
        for part in list(sig.parts):
            strength = -math.expm1(-sig.parts[part])
            sig.parts[part] = strength * model.specificity.get(part, model.default_specificity)
        _load_made(sig)
    place_delays(
        {e: sig.parts for e, sig in out.items()},
        {e: sig.cites for e, sig in out.items()},
        graph,
        own_work=cfg.on("delays"),
        edge_share=edge_share,
    )
    return out


def _add_mass(mass: list[float], score: float, w: float) -> None:
    mass[0] += max(score, 0.0)
    mass[1] += w * max(score, 0.0)


def score_hypotheses(
    evidence: Sequence[Evidence],
    *,
    graph: nx.DiGraph,
    window: Window,
    symptom: str = "",
    modalities: frozenset[Modality] = frozenset(Modality),
    edge_share: Callable[[str], GapShare] = lambda _: NO_GAPS,
    config: ScoringConfig = ScoringConfig(),
    alert_time: float | None = None,
    changes: Sequence[Change] = (),
) -> list[Hypothesis]:
    """Every (service, fault type) hypothesis the evidence supports, best first (alert_time:
    when the symptom alerted, where known; changes: what was changed around the window)."""
    ref, restarted = _placed(evidence, config, symptom, alert_time, window, changes)
    comps = _components(evidence, config, edge_share, graph, ref, restarted)
    recipes = config.model.recipes
    # per fault type, once: the recipe's parts a present modality shows, and what no modality shows
    seen = {
        fault: [(part, w) for part, w in recipe if modality_of(part) in modalities] for fault, recipe in recipes.items()
    }
    hidden = {fault: unseen(recipe, modalities) for fault, recipe in recipes.items()}
    best: dict[str, tuple[float, FaultType, list[EvidenceId]]] = {}
    for entity, sig in comps.items():
        for fault, recipe in recipes.items():
            if not _shows(sig, fault):
                continue
            shown = sum(w for _, w in seen[fault])
            value = sum(w * sig.get(part) for part, w in seen[fault]) / shown if shown else 0.0
            if config.on("unseen"):  # the parts no present modality shows count at half what was seen
                value = counted(value, hidden[fault][0])
            if value <= 0:
                continue
            cites = [i for part, _ in recipe for i in sig.cites.get(part, [])]
            if entity not in best or value > best[entity][0]:
                best[entity] = (value, fault, cites)
    values = {e: v for e, (v, _, _) in best.items()}
    current = _current(evidence, ref, config)
    undated = (
        frozenset(ev.id for ev in evidence if elsewhere(ev, ref) is Elsewhere.UNDER_WAY and undatable(ev, window))
        if config.on("timing")
        else frozenset()
    )
    board = Board(
        evidence,
        graph,
        window,
        symptom,
        {e: f for e, (_, f, _) in best.items()},
        {e: set(cites) for e, (_, _, cites) in best.items()},
        current,
        edge_share,
        undated,
        tuple(changes),
        restarted,
        ref.start,
    )
    adjusted, released = _apply_rules(values, board, config)
    # values equal to three places (saturated signals) are told apart by the raw deviation of
    # the evidence each cites of this incident (then any of its evidence: names come last)
    strength = {
        e: (
            max(
                (
                    ev.score
                    for ev in evidence
                    if ev.entity == e and ev.id in board.current and ev.id in board.cites.get(e, ())
                ),
                default=0.0,
            ),
            max((ev.score for ev in evidence if ev.entity == e), default=0.0),
        )
        for e in adjusted
    }
    ranked = sorted(
        adjusted.items(),
        key=lambda kv: (-round(kv[1][0], RANK_PRECISION), -strength[kv[0]][0], -strength[kv[0]][1], kv[0]),
    )
    out = []
    for i, (entity, (value, why)) in enumerate(ranked, start=1):
        _, fault, cites = best[entity]
        share, missing = hidden[fault]
        if entity in released:  # what followed the change is the change's doing
            fault, share = FaultType.RELEASE, 0.0
        if config.on("unseen") and share > 0 and why:
            why = f"{why}; {share:.0%} of its {fault.value} footprint is in {' and '.join(missing)}, missing here: counted at half"
        out.append(
            Hypothesis(
                HypothesisId(f"h-{i}"),
                entity,
                fault,
                round(min(1.0, max(0.0, value)), 4),
                tuple(dict.fromkeys(cites)),
                why,
            )
        )
    return out


def supported_faults(
    evidence: Sequence[Evidence],
    *,
    symptom: str = "",
    graph: nx.DiGraph,
    edge_share: Callable[[str], GapShare] = lambda _: NO_GAPS,
    config: ScoringConfig = ScoringConfig(),
    alert_time: float | None = None,
    window: Window,
    changes: Sequence[Change] = (),
) -> dict[str, frozenset[FaultType]]:
    """Per service, the fault types whose primary component its evidence shows, read as
    `score_hypotheses` reads it (rca.fault_model.GATES), and a release where a change broke it
    (rule `changes`): the types a hypothesis about it may carry."""
    ref, restarted = _placed(evidence, config, symptom, alert_time, window, changes)
    comps = _components(evidence, config, edge_share, graph, ref, restarted)
    out = {entity: frozenset(f for f in config.model.recipes if _shows(sig, f)) for entity, sig in comps.items()}
    if (
        config.on("changes")
        and changes
        and (
            found := breaking_change(
                evidence,
                changes,
                _current(evidence, ref, config),
                ref.start,
                undone=config.on(UNDONE),
                waits=graph if config.on(WAITS) else None,
            )
        )
        is not None
    ):
        out[found[0]] = out.get(found[0], frozenset()) | {FaultType.RELEASE}
    return out


def _placed(
    evidence: Sequence[Evidence],
    config: ScoringConfig,
    symptom: str,
    alert_time: float | None,
    window: Window,
    changes: Sequence[Change],
) -> tuple[Reference, frozenset[EvidenceId]]:
    """When the incident asked about ran (rule `timing`), and the evidence a restart moved by
    itself (rule `changes`), which no component and no rule counts."""
    ref = reference(evidence, symptom, alert_time, window, asked_late=config.on(ASKED_LATE), residue=config.on(RESIDUE))
    return ref, moved_by_restart(evidence, changes) if config.on("changes") else frozenset()


def _current(evidence: Sequence[Evidence], ref: Reference, config: ScoringConfig) -> frozenset[EvidenceId]:
    """The evidence of the incident asked about: all of it, unless `timing` tells it apart."""
    return frozenset(ev.id for ev in evidence if weight(ev, ref, past_weight=0.0, timing=config.on("timing")) == 1.0)


def _shows(sig: _Signals, fault: FaultType) -> bool:
    """The evidence shows one of the fault type's primary components (rca.fault_model.GATES)."""
    return any(sig.get(part) > 0 for part in GATES[fault])


def _apply_rules(
    values: dict[str, float], board: Board, cfg: ScoringConfig
) -> tuple[dict[str, tuple[float, str]], frozenset[str]]:
    """The value rules, in order; each service's value and why it has it, and the services
    whose fault is a change (rule `changes`)."""
    # a KPI measured in front of the services (an entry's success rate and latency) is where an
    # incident shows, never what caused it: it runs no code and holds no resources of its own
    values = {e: v for e, v in values.items() if not is_kpi(board.graph, e)}
    if cfg.on("comovement"):
        values = weigh_comovement(values, board, floor=cfg.comove_floor)
    if cfg.on("reach"):
        values = discount_unreachable(values, board, factor=cfg.unreachable_factor)
    if cfg.on("endpoints"):
        values = discount_endpoints(
            values, board, comove=cfg.endpoint_comove, sibling_ratio=cfg.endpoint_sibling_ratio, keep=cfg.victim_factor
        )
    when = Causality.of(board.evidence, board.cites, board.current)
    terms = cfg.victim_terms()
    out: dict[str, tuple[float, str]] = {}
    explained: dict[str, float | None] = {}  # by an anomalous neighbour: when its anomaly began
    for entity, value in values.items():
        why = "strongest localised evidence" if value > 0 else ""
        if entity in board.graph:
            if cfg.on("victims") and (callee := explaining_callee(entity, values, board, when, terms)):
                value *= victim_share(entity, callee, board, terms)
                why = f"explained in part by anomalous callee {callee}"
                explained[entity] = when.began.get(callee)
            elif cfg.on("answers") and (
                caller := earlier_caller(
                    entity,
                    values,
                    board,
                    when,
                    ratio=cfg.victim_ratio,
                    hops=cfg.victim_hops,
                    downstream=cfg.on(DOWNSTREAM),
                )
            ):
                value *= cfg.victim_factor
                why = f"began after anomalous caller {caller}"
                explained[entity] = when.began.get(caller)
        out[entity] = (value, why)
    released: frozenset[str] = frozenset()
    if cfg.on("changes") and board.changes:
        out, released = lift_changed(out, board, explained, undone=cfg.on(UNDONE), waits=cfg.on(WAITS))
    if cfg.on("dominance"):
        out = lift_dominant(out, board, factor=cfg.dominance_factor)
    return out, released
