"""Root-cause hypotheses: (service, fault type) with a value in [0, 1], each citing its evidence.

The value of a hypothesis is read from the evidence of its service, shaped by rules that hold
in any call graph:
- localised evidence (a service's own CPU, own work time, the network gap of every call it
  takes part in, exceptions it throws) weighs more than evidence that propagates (latency and
  errors seen by callers);
- a service whose anomaly is explained by an anomalous callee, downstream of it in the call
  graph and anomalous no later than it, is a victim rather than a cause;
- an endpoint seen only from outside (no calls, no telemetry of its own) whose anomaly moves
  with a sibling callee's is that sibling seen from the caller;
- an anomaly already under way when the window opened, or over well before it closed,
  belongs to another incident more likely than to this one, and one that began more than a
  sample after the symptom alerted followed the symptom rather than caused it;
- a callee explains a caller's anomaly only while its own goes on.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NewType

import networkx as nx

from rca.evidence import Evidence, EvidenceId, EvidenceKind, earliest_onsets
from rca.evidence.metrics import ONSET_Z
from rca.evidence.traces import GapShare
from rca.model import FaultType, Modality, Window
from rca.signals import Signal, bad_direction, is_host_metric
from rca.topology import ONSET_TOLERANCE, in_causal_order, siblings

HypothesisId = NewType("HypothesisId", str)
NO_GAPS = GapShare(1.0, 0.0)
_EXCEPTION_WORDS = ("exception", "threw", "throwable", "stacktrace", "caused by")


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
            "id": self.id, "service": self.service, "fault_type": self.fault_type.value,
            "value": self.value, "evidence": list(self.evidence), "rationale": self.rationale,
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class ScoringConfig:
    """Constants of the hypothesis value; the same for every system."""

    stale_share: float = 0.2  # onsets in the first fifth of the window are "already under way"
    ended_share: float = 0.2  # an anomaly over before the window's last fifth is "already past"
    stale_weight: float = 0.4
    victim_factor: float = 0.55  # a service explained by an anomalous callee keeps this share
    victim_ratio: float = 0.7  # the callee must carry at least this share of the value
    victim_hops: int = 3
    # errors propagate to callers: a callee whose own errors carry a fifth of a service's value
    # explains that service's errors, and the service keeps less
    error_victim_factor: float = 0.3
    error_victim_ratio: float = 0.2
    # an endpoint seen only from outside is its sibling seen from the caller when their
    # anomalies move together this closely and the sibling carries this share of its value
    endpoint_comove: float = 0.5
    endpoint_sibling_ratio: float = 0.5
    # an erring service is explained by a callee that only slowed or starved when that callee
    # stands out about as much (most slowness never turns into failures)
    mismatch_victim_ratio: float = 0.85
    # a slow service is explained by a callee that only fails when that callee carries its
    # whole value (a failing call returns fast; it slows its caller only through retries)
    slow_by_errors_ratio: float = 1.0
    unreachable_factor: float = 0.5  # a service the symptom does not call, even indirectly
    comove_floor: float = 0.5  # a service whose series ignore the symptom's keeps this share
    background_quantile: float = 0.75  # a component's level in most services is background


def saturate(z: float, k: float) -> float:
    """Map a non-negative deviation to [0, 1): k is where it reaches 63%."""
    return 1.0 - math.exp(-max(z, 0.0) / k)


@dataclass(slots=True)
class _Signals:
    """Per-service components in [0, 1] and the evidence behind each."""

    parts: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    cites: dict[str, list[EvidenceId]] = field(default_factory=lambda: defaultdict(list))

    def add(self, part: str, value: float, ev: Evidence) -> None:
        if value > self.parts[part]:
            self.parts[part] = value
        self.cites[part].append(ev.id)

    def get(self, part: str) -> float:
        return self.parts.get(part, 0.0)


def _weight(ev: Evidence, window: Window, cfg: ScoringConfig, alert_time: float | None) -> float:
    if ev.until is not None and ev.until < window.end - cfg.ended_share * window.seconds:
        return cfg.stale_weight  # over well before the window closed, placed or not
    if ev.onset is None:
        return 1.0 if ev.modality.value == "logs" else cfg.stale_weight + 0.3
    if ev.onset < window.start + cfg.stale_share * window.seconds:
        return cfg.stale_weight
    if alert_time is not None and ev.onset > alert_time + max(ONSET_TOLERANCE, _profile_step([ev])):
        return cfg.stale_weight
    return 1.0


def _components(
    evidence: Sequence[Evidence],
    window: Window,
    cfg: ScoringConfig,
    edge_share: Callable[[str], GapShare],
    population: int = 0,
    alert_time: float | None = None,
) -> dict[str, _Signals]:
    out: dict[str, _Signals] = defaultdict(_Signals)
    log_mass: dict[tuple[str, str], float] = defaultdict(float)
    began: dict[tuple[str, str], float] = {}  # (entity, "cpu" | "mem"): the earliest onset of that evidence
    seen: set[tuple[str, EvidenceKind, str, Signal]] = set()
    for ev in evidence:
        fact = (ev.entity, ev.kind, ev.subject, ev.signal)
        if fact in seen:  # the same shift read twice (another branch, another agent) is one fact
            continue
        seen.add(fact)
        sig = out[ev.entity]
        w = _weight(ev, window, cfg, alert_time)
        if ev.kind is EvidenceKind.METRIC_SHIFT:
            host = is_host_metric(ev.subject)
            part = {Signal.CPU: "cpu", Signal.MEMORY: "mem", Signal.DISK: "disk", Signal.LATENCY: "lat",
                    Signal.ERRORS: "err", Signal.TRAFFIC: "traffic", Signal.NETWORK: "net",
                    Signal.PACKET_LOSS: "loss"}.get(ev.signal)  # fmt: skip
            if part is None:
                continue
            worse = ev.direction == bad_direction(ev.subject)
            if part in ("cpu", "mem", "disk", "lat", "traffic", "err", "loss") and not worse:
                continue
            sig.add(part + ("_host" if host else ""), w * saturate(ev.score, 20.0), ev)
            if part in ("cpu", "mem") and ev.onset is not None and not host:
                began[(ev.entity, part)] = min(ev.onset, began.get((ev.entity, part), ev.onset))
        elif ev.kind is EvidenceKind.TRACE_SELF_TIME:
            sig.add("own", w * saturate(ev.score, 8.0), ev)
        elif ev.kind is EvidenceKind.TRACE_EDGE_LATENCY:
            share = edge_share(ev.entity)
            strength = w * saturate(ev.score, 8.0)
            if share.incoming >= share.outgoing:  # delayed on its way in: its network
                sig.add("gap", strength * share.incoming, ev)
            else:  # slow on its own side before the call left: its own resources
                sig.add("gap_out", strength * share.outgoing, ev)
        elif ev.kind is EvidenceKind.LOG_ERROR_SHIFT:
            exc = any(word in ev.detail.lower() for word in _EXCEPTION_WORDS)
            key = "exc" if exc else "logerr"
            log_mass[(ev.entity, key)] += w * ev.score
            sig.cites[key].append(ev.id)
        elif ev.kind is EvidenceKind.LOG_DEPENDENCY_ERROR:  # the writer's symptom of a callee: propagated errors
            sig.add("err", w * saturate(ev.score, 20.0), ev)
        elif ev.kind is EvidenceKind.LOG_PATH_CUT:
            log_mass[(ev.entity, "cut")] += w * ev.score
            sig.cites[_LOG_PART["cut"]].append(ev.id)
        elif ev.kind is EvidenceKind.LOG_FREQUENCY_SHIFT and ev.direction < 0:
            log_mass[(ev.entity, "logdrop")] += ev.score
            sig.cites["logdrop"].append(ev.id)
        elif ev.kind in (EvidenceKind.LOG_NEW_TEMPLATE, EvidenceKind.LOG_FREQUENCY_SHIFT):
            log_mass[(ev.entity, "lognew")] += w * ev.score
            sig.cites["lognew"].append(ev.id)
    for (entity, key), mass in log_mass.items():
        part = _LOG_PART.get(key, key)
        out[entity].parts[part] = max(out[entity].parts[part], saturate(mass, _LOG_SCALE[key]))
    for entity, sig in out.items():
        _fold_memory_into_cpu(sig, began.get((entity, "cpu")), began.get((entity, "mem")))
    _keep_what_stands_out(out, cfg.background_quantile, population)
    for sig in out.values():
        for part in list(sig.parts):
            sig.parts[part] *= SPECIFICITY.get(part, 0.3)
    return out


def _fold_memory_into_cpu(sig: _Signals, cpu_began: float | None, mem_began: float | None) -> None:
    """Memory that rose with the CPU, not before it, is the CPU fault's footprint (a process
    that burns CPU allocates as it goes); a leak shows in memory first, and the CPU of its
    collector follows. Memory whose rise has no onset while the CPU's has one was under way
    or creeping before: not folded."""
    if sig.get("cpu") <= 0 or sig.get("mem") <= 0:
        return
    if cpu_began is not None and (mem_began is None or mem_began < cpu_began - ONSET_TOLERANCE):
        return
    sig.parts["cpu"] = max(sig.parts["cpu"], sig.parts["mem"])
    sig.cites["cpu"].extend(sig.cites.pop("mem", []))
    del sig.parts["mem"]


# the summed log deviation at which a log component reaches 63%
_LOG_SCALE = {"exc": 2.0, "logerr": 5.0, "lognew": 20.0, "logdrop": 2.0, "cut": 8.0}
# a code path cut short within traces and one that fell silent overall are one component
_LOG_PART = {"cut": "logdrop"}


# How much a component, once it stands out, points at its own service rather than at the
# load or at a neighbour: exceptions thrown and delays on every call of a service are its
# own; latency, traffic, I/O counters and error logs also move in its callers.
SPECIFICITY: dict[str, float] = {
    "exc": 1.0, "gap": 1.0, "gap_out": 0.9, "own": 0.9, "cpu": 0.9, "mem": 0.8, "logdrop": 0.8, "logerr": 0.7, "err": 0.6,
    "lat": 0.5, "traffic": 0.2, "disk": 0.4, "net": 0.4, "lognew": 0.4, "loss": 0.8,
}  # fmt: skip


def _keep_what_stands_out(comps: dict[str, _Signals], quantile: float, population: int) -> None:
    """Rescale each component to how far a service stands above the others.

    A signal that moved in most services at once (a workload change, a noisy exporter) is
    background; what matters is the service where it moved more than elsewhere. Services
    not observed (or quiet) count as zeros among the `population`.
    """
    parts = {p for sig in comps.values() for p in sig.parts}
    for part in parts:
        observed = [sig.get(part) for sig in comps.values()]
        values = sorted([0.0] * max(0, population - len(observed)) + observed)
        background = values[int(quantile * (len(values) - 1))] if values else 0.0
        for sig in comps.values():
            v = sig.get(part)
            sig.parts[part] = max(0.0, v - background) / max(1e-9, 1.0 - background) if v else 0.0


# fault type -> (component, weight) pairs; the weights of a type add up to 1
_RECIPES: dict[FaultType, tuple[tuple[str, float], ...]] = {
    FaultType.CPU: (("cpu", 0.5), ("gap", 0.3), ("own", 0.1), ("gap_out", 0.1)),
    FaultType.MEMORY: (("mem", 0.75), ("lat", 0.15), ("own", 0.1)),
    FaultType.DISK: (("disk", 0.75), ("own", 0.25)),
    FaultType.NETWORK_DELAY: (("gap", 0.6), ("lat", 0.25), ("net", 0.15)),
    FaultType.NETWORK_LOSS: (("loss", 0.6), ("err", 0.2), ("gap", 0.2)),
    FaultType.EXCEPTION: (("exc", 0.5), ("logdrop", 0.3), ("err", 0.1), ("logerr", 0.1)),
    FaultType.WRONG_RESULT: (("logerr", 0.45), ("logdrop", 0.3), ("lognew", 0.15), ("err", 0.1)),
    FaultType.OVERLOAD: (("traffic", 0.4), ("lat", 0.4), ("cpu", 0.2)),
}


# A fault type is weighed only when one of its primary components is present: latency alone
# is not an overload, a slow service is not a CPU fault without a CPU signal, and a wrong
# result is an error without an exception, so it needs error logs: a code path that only
# stopped (its log lines gone, nothing logged instead) was cut short by a thrown exception.
_GATES: dict[FaultType, tuple[str, ...]] = {
    FaultType.CPU: ("cpu",),
    FaultType.MEMORY: ("mem",),
    FaultType.DISK: ("disk",),
    FaultType.NETWORK_DELAY: ("gap", "lat", "net"),
    FaultType.NETWORK_LOSS: ("loss",),
    FaultType.EXCEPTION: ("exc", "err", "logdrop"),
    FaultType.WRONG_RESULT: ("logerr",),
    FaultType.OVERLOAD: ("traffic",),
}


_MODALITY_OF_PART: dict[str, Modality] = {
    "exc": Modality.LOGS, "logerr": Modality.LOGS, "logdrop": Modality.LOGS, "lognew": Modality.LOGS,
    "gap": Modality.TRACES, "gap_out": Modality.TRACES, "own": Modality.TRACES,
}  # fmt: skip


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
) -> list[Hypothesis]:
    """Every (service, fault type) hypothesis the evidence supports, best first (alert_time:
    when the symptom alerted, where known)."""
    comps = _components(evidence, window, config, edge_share, graph.number_of_nodes(), alert_time)
    best: dict[str, tuple[float, FaultType, list[EvidenceId]]] = {}
    for entity, sig in comps.items():
        for fault, recipe in _RECIPES.items():
            if not any(sig.get(part) > 0 for part in _GATES[fault]):
                continue
            # parts whose modality the incident lacks neither count nor dilute
            usable = [(part, w) for part, w in recipe if _MODALITY_OF_PART.get(part, Modality.METRICS) in modalities]
            weight = sum(w for _, w in usable)
            value = sum(w * sig.get(part) for part, w in usable) / weight if weight else 0.0
            if value <= 0:
                continue
            cites = [i for part, _ in recipe for i in sig.cites.get(part, [])]
            if entity not in best or value > best[entity][0]:
                best[entity] = (value, fault, cites)
    values = {e: v for e, (v, _, _) in best.items()}
    faults = {e: f for e, (_, f, _) in best.items()}
    values = _weigh_comovement(values, evidence, symptom, config)
    if symptom in graph:
        downstream = nx.descendants(graph, symptom) | {symptom}
        values = {e: v if e in downstream else v * config.unreachable_factor for e, v in values.items()}
    values = _discount_endpoints(values, evidence, graph, faults, config)
    when = _Causality.of(evidence, {e: set(cites) for e, (_, _, cites) in best.items()},
                         window.start + config.stale_share * window.seconds)  # fmt: skip
    adjusted = _discount_victims(values, graph, config, faults, when)
    strength = {e: max((ev.score for ev in evidence if ev.entity == e), default=0.0) for e in adjusted}
    # values equal to three places (saturated signals) are told apart by the raw deviation
    ranked = sorted(adjusted.items(), key=lambda kv: (-round(kv[1][0], 3), -strength[kv[0]], kv[0]))
    out = []
    for i, (entity, (value, why)) in enumerate(ranked, start=1):
        _, fault, cites = best[entity]
        out.append(Hypothesis(HypothesisId(f"h-{i}"), entity, fault, round(value, 4),
                              tuple(dict.fromkeys(cites)), why))  # fmt: skip
    return out


def comovement(a: Sequence[tuple[float, float]], b: Sequence[tuple[float, float]], step: float, *,
               signed: bool = False) -> float | None:  # fmt: skip
    """|Pearson correlation| of two z-profiles on the time buckets they share (signed: the
    correlation itself, for series that should move the same way); None if < 3."""
    da, db, common = _shared_samples(a, b, step)
    if len(common) < 3:
        return None
    x = [da[k] for k in common]
    y = [db[k] for k in common]
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sx = math.sqrt(sum((v - mx) ** 2 for v in x))
    sy = math.sqrt(sum((v - my) ** 2 for v in y))
    if sx == 0 or sy == 0:
        return None
    r = sum((u - mx) * (v - my) for u, v in zip(x, y, strict=True)) / (sx * sy)
    return r if signed else abs(r)


def _profile_step(profiled: Sequence[Evidence]) -> float:
    """The sampling step the profiles share: the smallest gap between their time points."""
    times = sorted({t for e in profiled for t, _ in e.profile})
    gaps = [b - a for a, b in itertools.pairwise(times) if b - a > 1.0]
    return min(gaps) if gaps else 0.0


def _weigh_comovement(
    values: dict[str, float], evidence: Sequence[Evidence], symptom: str, cfg: ScoringConfig
) -> dict[str, float]:
    """A cause's metrics move with the symptom: weigh each service by how closely its most
    anomalous series follows the symptom's, where both were measured."""
    profiled = [e for e in evidence if e.profile]
    anchor = max((e for e in profiled if e.entity == symptom), key=lambda e: e.score, default=None)
    if anchor is None:
        return values
    step = _profile_step(profiled)
    out = dict(values)
    for entity in values:
        if entity == symptom:
            continue
        corrs = [c for e in profiled if e.entity == entity
                 if (c := comovement(e.profile, anchor.profile, step)) is not None]  # fmt: skip
        if corrs:
            out[entity] *= cfg.comove_floor + (1.0 - cfg.comove_floor) * max(corrs)
    return out


_OUTSIDE_SIGNALS = (Signal.LATENCY, Signal.ERRORS, Signal.TRAFFIC)  # what a caller can measure of a callee


def _discount_endpoints(
    values: dict[str, float], evidence: Sequence[Evidence], graph: nx.DiGraph, faults: dict[str, FaultType],
    cfg: ScoringConfig,
) -> dict[str, float]:
    """An endpoint seen only from outside (it calls nothing; its evidence is latency, errors
    and traffic as its callers measure them, no resources, logs or spans of its own) whose
    anomaly moves with a sibling's (another callee of the same caller, one that does call on)
    is most likely that sibling seen from the caller's side, such as a load balancer in front
    of it: it keeps a victim's share."""
    profiled: dict[str, list[Evidence]] = defaultdict(list)
    inside: set[str] = set()
    for ev in evidence:
        if ev.profile:
            profiled[ev.entity].append(ev)
        if ev.kind is not EvidenceKind.METRIC_SHIFT or ev.signal not in _OUTSIDE_SIGNALS:
            inside.add(ev.entity)
    step = _profile_step([e for evs in profiled.values() for e in evs])
    out = dict(values)
    for leaf, value in values.items():
        if leaf not in graph or leaf in inside or graph.out_degree(leaf) > 0 or not profiled.get(leaf):
            continue
        mine = max(profiled[leaf], key=lambda e: e.score)
        for s in siblings(graph, leaf):
            if graph.out_degree(s) == 0 or faults.get(s) != faults.get(leaf) or values.get(s, 0.0) < cfg.endpoint_sibling_ratio * value:
                continue
            if nx.has_path(graph, s, leaf):  # a service that calls the endpoint is not behind it
                continue
            theirs = [e for e in profiled.get(s, []) if e.signal == mine.signal]
            if any(_move_together(mine.profile, e.profile, step, cfg.endpoint_comove) for e in theirs):
                out[leaf] = value * cfg.victim_factor
                break
    return out


def _move_together(a: Sequence[tuple[float, float]], b: Sequence[tuple[float, float]], step: float, floor: float) -> bool:
    """Two z-profiles move together: both past ONSET_Z in every sample they share (two or
    more), so the anomalies span the same time and their wobbles within it are noise; or else
    correlated at least `floor` where they share three samples or more."""
    da, db, common = _shared_samples(a, b, step)
    if len(common) >= 2 and all(abs(da[k]) >= ONSET_Z and abs(db[k]) >= ONSET_Z for k in common):
        return True
    c = comovement(a, b, step, signed=True)
    return c is not None and c >= floor


def _shared_samples(a: Sequence[tuple[float, float]], b: Sequence[tuple[float, float]], step: float
                    ) -> tuple[dict[int, float], dict[int, float], list[int]]:  # fmt: skip
    """Two z-profiles by sample (time over the shared step), and the samples both have."""
    if step <= 0:
        return {}, {}, []
    da = {round(t / step): z for t, z in a}
    db = {round(t / step): z for t, z in b}
    return da, db, sorted(set(da) & set(db))


@dataclass(frozen=True, slots=True)
class _Causality:
    """What the evidence tells about order and blame, for telling causes from effects."""

    active: dict[str, list[tuple[float, float | None]]]  # per entity, (onset, until) of its anomalies
    began: dict[str, float]  # when the anomaly that makes each entity a suspect began
    since: float  # anomalies begun before this were under way when the window opened
    failed_on: dict[str, set[str]]  # the callees each service's failed calls name
    course: dict[str, tuple[tuple[float, float], ...]]  # per entity, its strongest cited z-profile, worse up
    step: float  # the sampling step the courses share

    @classmethod
    def of(cls, evidence: Sequence[Evidence], cited: dict[str, set[EvidenceId]], since: float) -> _Causality:
        active: dict[str, list[tuple[float, float | None]]] = defaultdict(list)
        failed_on: dict[str, set[str]] = defaultdict(set)
        for ev in evidence:
            if ev.onset is not None:
                active[ev.entity].append((ev.onset, ev.until))
            if ev.kind is EvidenceKind.LOG_DEPENDENCY_ERROR:
                failed_on[ev.entity].update(ev.peers)
        # from the evidence the entity's hypothesis cites, or from any of its evidence where
        # none of that is placed
        began = earliest_onsets(evidence) | earliest_onsets(ev for ev in evidence if ev.id in cited.get(ev.entity, ()))
        strongest: dict[str, Evidence] = {}
        for ev in evidence:
            if ev.profile and ev.id in cited.get(ev.entity, ()) and (
                    ev.entity not in strongest or ev.score > strongest[ev.entity].score):  # fmt: skip
                strongest[ev.entity] = ev
        course = {e: tuple((t, z * ev.direction) for t, z in ev.profile) for e, ev in strongest.items()}
        return cls(active, began, since, failed_on, course, _profile_step(list(strongest.values())))

    def diverged(self, a: str, b: str) -> bool:
        """The anomalies that make two entities suspects ran against each other (one grew as
        the other waned), where both were profiled over three samples or more."""
        if a not in self.course or b not in self.course:
            return False
        c = comovement(self.course[a], self.course[b], self.step, signed=True)
        return c is not None and c < 0.0

    def was_active(self, entity: str, when: float | None) -> bool:
        """Some anomaly of the entity had begun by `when` and not yet ended (unknown times do
        not object)."""
        intervals = self.active.get(entity, [])
        if not intervals or when is None:
            return True
        return any(in_causal_order(onset, when) and (until is None or until >= when - ONSET_TOLERANCE)
                   for onset, until in intervals)  # fmt: skip


_ERRING = (FaultType.EXCEPTION, FaultType.WRONG_RESULT)


def _discount_victims(
    values: dict[str, float], graph: nx.DiGraph, cfg: ScoringConfig, faults: dict[str, FaultType], when: _Causality,
) -> dict[str, tuple[float, str]]:
    """A service keeps part of its value when an anomalous callee can explain it (one whose
    anomaly began no later than the one that makes the service a suspect and had not ended
    then, and, where the service's failed calls name callees, one of those or behind them),
    or when its anomaly began well after an anomalous caller's."""
    out: dict[str, tuple[float, str]] = {}
    for entity, value in values.items():
        why = "strongest localised evidence" if value > 0 else ""
        if entity in graph:
            if callee := _explaining_callee(entity, values, graph, cfg, faults, when):
                erred = faults.get(entity) in _ERRING and faults.get(callee) in _ERRING
                value *= cfg.error_victim_factor if erred else cfg.victim_factor
                why = f"explained in part by anomalous callee {callee}"
            elif caller := _earlier_caller(entity, values, graph, cfg, when):
                value *= cfg.victim_factor
                why = f"began after anomalous caller {caller}"
        out[entity] = (value, why)
    return out


def _explaining_callee(
    entity: str, values: dict[str, float], graph: nx.DiGraph, cfg: ScoringConfig, faults: dict[str, FaultType],
    when: _Causality,
) -> str | None:
    """The most valuable anomalous callee that can explain the service, if any."""
    value = values[entity]

    def ratio(d: str) -> float:
        """How much of the service's value a callee must carry to explain it."""
        if faults.get(entity) not in _ERRING:
            return cfg.slow_by_errors_ratio if faults.get(d) in _ERRING else cfg.victim_ratio
        return cfg.error_victim_ratio if faults.get(d) in _ERRING else cfg.mismatch_victim_ratio

    reach = set(nx.single_source_shortest_path_length(graph, entity, cutoff=cfg.victim_hops))
    if named := when.failed_on.get(entity):
        reach &= {d for c in named if c in graph for d in nx.single_source_shortest_path_length(graph, c, cutoff=cfg.victim_hops)}
    culprits = [d for d in reach if d != entity and values.get(d, 0.0) >= value * ratio(d)
                and when.was_active(d, when.began.get(entity)) and not when.diverged(d, entity)]  # fmt: skip
    return max(culprits, key=lambda d: values[d]) if culprits else None


def _earlier_caller(
    entity: str, values: dict[str, float], graph: nx.DiGraph, cfg: ScoringConfig, when: _Causality,
) -> str | None:
    """A caller that stands out about as much and whose anomaly began in the window well
    before this callee's: the callee most likely answers its changed calls (retries, a new
    mix of requests) rather than causing them."""
    if entity not in when.began:
        return None
    ups = nx.single_source_shortest_path_length(graph.reverse(copy=False), entity, cutoff=cfg.victim_hops)
    earlier = [c for c in ups if c != entity and c in when.began and values.get(c, 0.0) >= values[entity] * cfg.victim_ratio
               and when.began[c] >= when.since and not in_causal_order(when.began[entity], when.began[c])]  # fmt: skip
    return max(earlier, key=lambda c: values[c]) if earlier else None
