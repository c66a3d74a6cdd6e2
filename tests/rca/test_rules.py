"""The scoring rules read directly, apart from the scoring around them."""

from dataclasses import replace

import networkx as nx

from rca.changes import Change, ChangeKind
from rca.evidence import Evidence, EvidenceId, EvidenceKind
from rca.evidence.traces import NO_GAPS, GapShare
from rca.hypotheses import Hypothesis, score_hypotheses
from rca.model import FaultType, Modality
from rca.rules import RULES
from rca.rules.answers import DOWNSTREAM
from rca.rules.background import keep_what_stands_out
from rca.rules.changes import UNDONE, WAITS
from rca.rules.config import ScoringConfig
from rca.rules.timing import ASKED_LATE, RESIDUE, reference, weight
from rca.signals import Signal
from rca.telemetry import Window
from rca.topology import KPI


def test_a_signal_in_most_services_is_background_and_in_one_it_is_not() -> None:
    quantile = ScoringConfig().background_quantile
    most = {"a": {"cpu": 0.9}, "b": {"cpu": 0.5}, "c": {"cpu": 0.5}, "d": {"cpu": 0.5}}
    keep_what_stands_out(most, quantile, population=5)  # four of five moved: their common level is background
    assert most["a"]["cpu"] > 0 and all(most[s]["cpu"] == 0 for s in "bcd")
    one = {"a": {"cpu": 0.9}, "b": {"lat": 0.5}}
    keep_what_stands_out(one, quantile, population=5)  # each signal in one service of five: nothing is background
    assert one["a"]["cpu"] == 0.9 and one["b"]["lat"] == 0.5


def test_a_service_far_above_a_background_that_saturates_still_stands_out() -> None:
    # Error lines in every service, as when a failure propagates: most at 200 deviations, one at
    # 2,000. Read as strengths in [0, 1], both round to 1.0 and nothing stands above the rest;
    # read as the deviations they stand for, the one at 2,000 is far above the others.
    graph = nx.DiGraph([("front", s) for s in "abcd"])
    evidence = [
        Evidence(
            EvidenceId(f"ev-{k}"),
            Modality.LOGS,
            EvidenceKind.LOG_ERROR_SHIFT,
            service,
            f"T{k}",
            z,
            Signal.ERRORS,
            "q",
            "ERROR 'request failed' 9.0/min",
            500.0,
            direction=1,
        )
        for k, (service, z) in enumerate([("a", 2000.0), ("b", 200.0), ("c", 200.0), ("d", 200.0)])
    ]
    values = {
        h.service: h.value for h in score_hypotheses(evidence, graph=graph, window=Window(0.0, 1000.0), symptom="front")
    }
    assert values.get("a", 0.0) > 0.25 and all(values.get(s, 0.0) == 0.0 for s in "bcd")


def test_a_kpi_in_front_of_the_services_is_never_a_cause_whatever_is_switched_off() -> None:
    graph = nx.DiGraph([("entry", "a"), ("a", "b")] + [("a", f"quiet-{k}") for k in range(6)])
    graph.nodes["entry"][KPI] = True
    evidence = [
        Evidence(
            EvidenceId("ev-1"),
            Modality.METRICS,
            EvidenceKind.METRIC_SHIFT,
            "entry",
            "error_rate",
            90.0,
            Signal.ERRORS,
            "q",
            "d",
            500.0,
            direction=1,
        ),
        Evidence(
            EvidenceId("ev-2"),
            Modality.METRICS,
            EvidenceKind.METRIC_SHIFT,
            "b",
            "cpu",
            40.0,
            Signal.CPU,
            "q",
            "d",
            500.0,
            direction=1,
        ),
    ]
    on = [h.service for h in score_hypotheses(evidence, graph=graph, window=Window(0.0, 1000.0), symptom="entry")]
    every_rule_off = ScoringConfig(off=frozenset(r.name for r in RULES))
    off = [
        h.service
        for h in score_hypotheses(
            evidence, graph=graph, window=Window(0.0, 1000.0), symptom="entry", config=every_rule_off
        )
    ]
    assert on == ["b"]  # the KPI's errors show where the incident is seen, not who caused it
    assert "entry" not in off and "b" in off  # no switch makes it a candidate: it is no service
    unmarked = nx.relabel_nodes(graph, {"entry": "front"})
    unmarked.nodes["front"].clear()  # a graph that marks no KPI (a live one): the symptom may be its own cause
    moved = [replace(ev, entity="front") if ev.entity == "entry" else ev for ev in evidence]
    assert "front" in [
        h.service for h in score_hypotheses(moved, graph=unmarked, window=Window(0.0, 1000.0), symptom="front")
    ]


def test_a_part_only_a_missing_modality_could_show_counts_halfway_between_silent_and_seen() -> None:
    graph = nx.DiGraph([("front", "a")] + [("front", f"quiet-{k}") for k in range(6)])
    cpu = [
        Evidence(
            EvidenceId("ev-1"),
            Modality.METRICS,
            EvidenceKind.METRIC_SHIFT,
            "a",
            "cpu_seconds",
            40.0,
            Signal.CPU,
            "q",
            "d",
            500.0,
            direction=1,
        )
    ]

    def lead(modalities: frozenset[Modality], config: ScoringConfig = ScoringConfig()) -> Hypothesis:
        (h,) = [
            h
            for h in score_hypotheses(
                cpu, graph=graph, window=Window(0.0, 1000.0), symptom="front", modalities=modalities, config=config
            )
            if h.service == "a"
        ]
        return h

    def value(modalities: frozenset[Modality], config: ScoringConfig = ScoringConfig()) -> float:
        return lead(modalities, config).value

    silent = value(frozenset(Modality))  # traces read and quiet: the CPU fault's slowness is not there
    no_traces = frozenset({Modality.METRICS, Modality.LOGS})
    unseen = value(no_traces)
    as_seen = value(no_traces, ScoringConfig(off=frozenset({"unseen"})))  # judged on what was seen alone
    assert silent < unseen < as_seen
    assert abs(unseen - (silent + as_seen) / 2) < 1e-3
    # and the hypothesis says so, naming the missing modality
    assert "footprint is in traces, missing here: counted at half" in lead(no_traces).rationale
    assert "missing" not in lead(frozenset(Modality)).rationale
    # a fault type the missing modality has no part in is judged as before
    logs_gone = frozenset({Modality.METRICS, Modality.TRACES})
    assert value(logs_gone) == silent


def test_a_scaled_reading_scales_every_constant_and_keeps_counts_and_switches() -> None:
    """Another sampling of the reasoner: every float of the config and of its fault model
    (scales, specificities, recipe weights) moved, the hop count and the switches kept."""
    base = ScoringConfig(off=frozenset({"timing"}))
    same, doubled = base.scaled(lambda: 1.0), base.scaled(lambda: 2.0)
    assert same == base
    assert doubled.past_weight == 2 * base.past_weight and doubled.victim_hops == base.victim_hops
    assert doubled.off == base.off
    m, m2 = base.model, doubled.model
    assert m2.metric_scale == 2 * m.metric_scale and m2.default_specificity == 2 * m.default_specificity
    assert all(m2.log_scales[k] == 2 * v for k, v in m.log_scales.items())
    assert all(m2.specificity[k] == 2 * v for k, v in m.specificity.items())
    for fault, recipe in m.recipes.items():
        assert m2.recipes[fault] == tuple((part, 2 * w) for part, w in recipe)


def _shift(
    n: int,
    entity: str,
    subject: str,
    score: float,
    signal: Signal,
    onset: float,
    *,
    direction: int = 1,
    under_way: bool = False,
) -> Evidence:
    return Evidence(
        EvidenceId(f"ev-{n}"),
        Modality.METRICS,
        EvidenceKind.METRIC_SHIFT,
        entity,
        subject,
        score,
        signal,
        "q",
        "d",
        onset,
        direction=direction,
        under_way=under_way,
    )


def _first(evidence: list[Evidence], graph: nx.DiGraph, config: ScoringConfig = ScoringConfig()) -> str:
    return score_hypotheses(evidence, graph=graph, window=Window(0.0, 1000.0), symptom="front", config=config)[
        0
    ].service


def test_a_service_whose_own_resources_shifted_an_order_of_magnitude_more_than_any_others_is_first() -> None:
    # c is not called by the symptom: the rule `reach` buries it unless it dominates
    graph = nx.DiGraph([("front", "a"), ("a", "b"), ("batch", "c")] + [("front", f"quiet-{k}") for k in range(6)])
    off = ScoringConfig(off=frozenset({"dominance"}))
    symptom = _shift(1, "front", "latency_seconds", 30.0, Signal.LATENCY, 500.0)
    near = _shift(2, "b", "cpu_seconds", 30.0, Signal.CPU, 500.0)  # begun with the symptom: timing favours it
    hog = _shift(3, "c", "cpu_seconds", 400.0, Signal.CPU, 600.0)
    assert _first([symptom, near, hog], graph) == "c"
    assert _first([symptom, near, hog], graph, off) == "b"
    # not an order of magnitude: the other rules decide
    assert _first([symptom, near, replace(hog, score=200.0)], graph) == "b"
    # over before the symptom began: another incident's, however large
    assert _first([symptom, near, replace(hog, onset=100.0, until=200.0)], graph) == "b"
    # less CPU used is no fault
    assert _first([symptom, near, replace(hog, direction=-1)], graph) == "b"
    # a shift as large in another service, another incident's (over before the symptom began), is
    # the same order of magnitude: the window shows such shifts, so none dominates
    other = replace(_shift(4, "a", "cpu_seconds", 300.0, Signal.CPU, 100.0), until=200.0)
    assert _first([symptom, near, hog, other], graph) == "b"
    assert _first([symptom, near, hog, replace(other, score=30.0)], graph) == "c"
    # under way since the window's first sample: begun before the window asked about, another's
    early = replace(hog, onset=0.0, under_way=True, profile=tuple((t, 400.0) for t in range(0, 1000, 60)))
    assert _first([symptom, near, early], graph) == "b"
    # under way since the first sample of a recording that began inside the window: time cannot place it
    restarted = replace(early, onset=420.0, profile=tuple((t, 400.0) for t in range(420, 1000, 60)))
    assert _first([symptom, near, restarted], graph) == "c"
    assert _first([symptom, near, restarted], graph, off) == "b"
    # moved by a restart of its own (a deploy right before it): a fresh process, no fault of it
    deployed = [Change("c", ChangeKind.DEPLOY, 590.0)]
    assert _ranked([symptom, near, hog], graph, deployed)[0].service == "b"
    assert _ranked([symptom, near, hog], graph, deployed, ScoringConfig(off=frozenset({"changes"})))[0].service == "c"


def test_latency_and_errors_never_dominate_they_move_in_callers_too() -> None:
    graph = nx.DiGraph([("front", "a"), ("a", "b"), ("batch", "c")] + [("front", f"quiet-{k}") for k in range(6)])
    symptom = _shift(1, "front", "latency_seconds", 30.0, Signal.LATENCY, 500.0)
    near = _shift(2, "b", "cpu_seconds", 30.0, Signal.CPU, 500.0)
    for subject, signal in (("latency_seconds", Signal.LATENCY), ("error_rate", Signal.ERRORS)):
        far = _shift(3, "c", subject, 4000.0, signal, 600.0)
        assert _first([symptom, near, far], graph) == "b"


def test_asked_late_the_incident_under_way_when_the_window_opened_is_the_one_asked_about() -> None:
    graph = nx.DiGraph([("front", "a"), ("a", "b"), ("front", "c")] + [("front", f"quiet-{k}") for k in range(6)])
    off = ScoringConfig(off=frozenset({ASKED_LATE}))
    flat = tuple((float(t), 20.0) for t in range(0, 1000, 60))
    symptom = replace(_shift(1, "front", "latency_seconds", 20.0, Signal.LATENCY, 0.0, under_way=True), profile=flat)
    cause = replace(_shift(2, "b", "cpu_seconds", 30.0, Signal.CPU, 0.0, under_way=True), profile=flat)
    later = _shift(3, "c", "cpu_seconds", 30.0, Signal.CPU, 600.0)  # begun well after the window opened
    assert _first([symptom, cause, later], graph) == "b"
    assert _first([later, cause, symptom], graph) == "b"
    assert _first([symptom, cause, later], graph, off) == "c"  # the switch: under way is another incident's
    # a symptom that deepened past twice its opening depth began anew inside the window
    deepened = replace(symptom, profile=tuple((t, 4.0 if t < 600 else 40.0) for t, _ in flat))
    assert _first([deepened, cause, later], graph) == "c"
    # latency that fell is no incident under way
    assert _first([replace(symptom, direction=-1), cause, later], graph) == "c"
    # data that began inside the window (a restarted exporter) cannot say the incident was under way
    restarted = replace(symptom, profile=tuple(p for p in flat if p[0] >= 420.0))
    assert _first([restarted, cause, later], graph) == "c"
    # a symptom's series that improved inside the window (fewer errors) begins no incident
    improved = _shift(4, "front", "error_rate", 8.0, Signal.ERRORS, 500.0, direction=-1)
    assert _first([symptom, cause, later, improved], graph) == "b"


def test_what_outlasted_an_incident_over_before_the_one_asked_about_is_its_residue() -> None:
    graph = nx.DiGraph([("front", "a"), ("a", "b"), ("front", "c")] + [("front", f"quiet-{k}") for k in range(6)])
    off = ScoringConfig(off=frozenset({RESIDUE}))
    symptom = _shift(1, "front", "latency_seconds", 20.0, Signal.LATENCY, 600.0)
    cause = _shift(2, "c", "cpu_seconds", 12.0, Signal.CPU, 600.0)
    # an earlier incident of b: its errors over before the symptom began, a level it raised still standing
    errors = replace(_shift(3, "b", "error_rate", 90.0, Signal.ERRORS, 200.0), until=350.0)
    level = _shift(4, "b", "open_fds", 60.0, Signal.OTHER, 210.0)
    assert _first([symptom, cause, errors, level], graph) == "c"
    assert _first([level, errors, cause, symptom], graph) == "c"
    assert _first([symptom, cause, errors, level], graph, off) == "b"  # the switch: what stands is this incident's
    # the level began apart from the earlier incident's strongest anomaly: it may be this one's
    assert _first([symptom, cause, errors, replace(level, onset=480.0)], graph) == "b"
    # the strongest anomaly of that moment still stands: that incident is not over
    assert _first([symptom, cause, replace(errors, until=None), level], graph) == "b"
    # where the symptom does not tell when this incident began, the one over may be the one asked about
    ref = reference([errors, level], "front", None, Window(0.0, 1000.0))
    assert ref.start is None and not ref.residue
    assert reference([symptom, errors, level], "front", None, Window(0.0, 1000.0)).residue == {level.id}


def test_calls_a_service_sent_again_and_again_are_load_it_made_an_overload_of_its_own() -> None:
    graph = nx.DiGraph([("front", "a"), ("a", "b")] + [("front", f"quiet-{k}") for k in range(6)])
    symptom = _shift(1, "front", "latency_seconds", 20.0, Signal.LATENCY, 500.0)
    arrived = _shift(2, "b", "requests_total", 12.0, Signal.TRAFFIC, 500.0)  # the load b took
    made = replace(
        _shift(3, "a", "GET / -> GET /work", 40.0, Signal.TRAFFIC, 500.0),
        modality=Modality.TRACES,
        kind=EvidenceKind.TRACE_REPEATED_CALLS,
    )
    by = {
        h.service: h
        for h in score_hypotheses([symptom, arrived, made], graph=graph, window=Window(0.0, 1000.0), symptom="front")
    }
    assert by["a"].fault_type is FaultType.OVERLOAD and by["a"].value > by["b"].value
    alone = {
        h.service
        for h in score_hypotheses([symptom, arrived], graph=graph, window=Window(0.0, 1000.0), symptom="front")
    }
    assert "a" not in alone  # without its repeated calls, nothing points at a


def _storm(loaded: str) -> tuple[list[Evidence], Evidence]:
    """a's retry storm: the symptom; a slowed, and busy sending each call again and again; the
    service that takes the load (its CPU, latency and requests) standing out more than a; and
    a's calls sent again, naming no callee."""
    evidence = [
        _shift(1, "front", "latency_seconds", 20.0, Signal.LATENCY, 500.0),
        _shift(2, "a", "latency_seconds", 15.0, Signal.LATENCY, 500.0),
        _shift(7, "a", "cpu_seconds", 20.0, Signal.CPU, 500.0),
        _shift(3, loaded, "cpu_seconds", 60.0, Signal.CPU, 500.0),
        _shift(4, loaded, "latency_seconds", 30.0, Signal.LATENCY, 500.0),
        _shift(5, loaded, "requests_total", 30.0, Signal.TRAFFIC, 500.0),
    ]
    retries = replace(
        _shift(6, "a", "GET / -> b GET /work", 40.0, Signal.TRAFFIC, 500.0),
        modality=Modality.TRACES,
        kind=EvidenceKind.TRACE_REPEATED_CALLS,
    )
    return evidence, retries


def test_a_callee_a_caller_gave_up_on_and_sent_its_calls_again_answers_that_caller() -> None:
    """a storms b: b's CPU, latency and load, begun with a's retries, stand out more than a's
    own calls sent again and the CPU they cost it. Where the retries name b, b answers a's storm and cannot explain a;
    where the spans do not say which callee a stormed, b stays first and a its victim."""
    graph = nx.DiGraph([("front", "a"), ("a", "b")] + [("front", f"quiet-{k}") for k in range(6)])
    evidence, retries = _storm("b")
    assert _first([*evidence, retries], graph) == "b"
    assert _first([*evidence, replace(retries, peers=("b",))], graph) == "a"


def test_what_a_callee_a_caller_stormed_calls_in_turn_answers_that_caller_too() -> None:
    """a gives up on its calls to b and sends them again; b answers each with a call to c, so
    c takes the load and stands out most. c answers a's storm (it began with it, through b);
    with the switch off, only the callee a's retries name answers them, and c is first."""
    graph = nx.DiGraph([("front", "a"), ("a", "b"), ("b", "c")] + [("front", f"quiet-{k}") for k in range(6)])
    loaded, retries = _storm("c")
    evidence = [*loaded, _shift(8, "b", "latency_seconds", 25.0, Signal.LATENCY, 500.0)]  # b waits on c
    retries = replace(retries, peers=("b",))
    off = ScoringConfig(off=frozenset({DOWNSTREAM}))
    assert _first([*evidence, retries], graph) == "a"
    assert _first([retries, *reversed(evidence)], graph) == "a"  # whatever the order read
    assert _first([*evidence, retries], graph, off) == "c"
    # a storm on a callee whose calls do not reach c: the switch changes nothing
    aside = nx.DiGraph([*graph.edges, ("front", "d"), ("d", "c")])
    aside.remove_edge("b", "c")
    assert _ranked([*evidence, retries], aside, []) == _ranked([*evidence, retries], aside, [], off)


def _ranked(
    evidence: list[Evidence], graph: nx.DiGraph, changes: list[Change], config: ScoringConfig = ScoringConfig()
) -> list[Hypothesis]:
    return score_hypotheses(
        evidence, graph=graph, window=Window(0.0, 1000.0), symptom="front", config=config, changes=changes
    )


def test_a_service_changed_just_before_its_anomaly_began_first_of_all_is_first_and_its_fault_the_change() -> None:
    graph = nx.DiGraph([("front", "a"), ("a", "b"), ("front", "c")] + [("front", f"quiet-{k}") for k in range(6)])
    symptom = _shift(1, "front", "error_rate", 40.0, Signal.ERRORS, 500.0)
    strong = _shift(2, "b", "latency_seconds", 60.0, Signal.LATENCY, 500.0)  # what the telemetry alone puts first
    released = _shift(3, "c", "error_rate", 8.0, Signal.ERRORS, 490.0)
    evidence = [symptom, strong, released]
    deploy = Change("c", ChangeKind.DEPLOY, 470.0, before="1.4.2", after="1.4.3")
    assert _ranked(evidence, graph, [])[0].service == "b"
    top = _ranked(evidence, graph, [deploy])[0]
    assert (top.service, top.fault_type) == ("c", FaultType.RELEASE) and "1.4.2 → 1.4.3" in top.rationale
    assert _ranked(evidence, graph, [deploy], ScoringConfig(off=frozenset({"changes"})))[0].service == "b"
    # a service whose own resources shifted an order of magnitude more than any other's stays first
    hog = _shift(4, "b", "cpu_seconds", 300.0, Signal.CPU, 500.0)
    assert _ranked([*evidence, hog], graph, [deploy])[0].service == "b"
    # the order the changes and the evidence come in decides nothing
    other = Change("quiet-1", ChangeKind.CONFIG, 300.0)
    assert _ranked(evidence[::-1], graph, [other, deploy])[0].service == "c"
    assert _ranked(evidence, graph, [deploy, other])[0].service == "c"


def test_a_change_explains_nothing_without_an_anomaly_right_after_it_or_one_that_began_with_a_neighbour_s() -> None:
    graph = nx.DiGraph([("front", "a"), ("a", "b"), ("front", "c")] + [("front", f"quiet-{k}") for k in range(6)])
    symptom = _shift(1, "front", "error_rate", 40.0, Signal.ERRORS, 500.0)
    strong = _shift(2, "b", "latency_seconds", 60.0, Signal.LATENCY, 500.0)
    evidence = [symptom, strong]
    for change in (
        Change("quiet-2", ChangeKind.DEPLOY, 450.0),  # no anomaly after it
        Change("c", ChangeKind.DEPLOY, 450.0),  # c has no evidence at all
    ):
        assert _ranked(evidence, graph, [change])[0].service == "b"
    # c's anomaly began two minutes after the change, the symptom's and b's between: no sign of it
    late = _shift(3, "c", "error_rate", 8.0, Signal.ERRORS, 560.0)
    assert _ranked([*evidence, late], graph, [Change("c", ChangeKind.DEPLOY, 430.0)])[0].service == "b"
    # the change came after c's anomaly began: the anomaly did not follow it
    early = replace(
        _shift(3, "c", "error_rate", 8.0, Signal.ERRORS, 490.0),
        profile=tuple((float(t), 9.0) for t in range(430, 1000, 60)),
    )
    assert _ranked([*evidence, early], graph, [Change("c", ChangeKind.DEPLOY, 600.0)])[0].service == "b"
    # in the interval the anomaly began in (a 60 s step before its first sample, and a minute's
    # skew): the change began it; long before it, the change had time to show and did not
    assert _ranked([*evidence, early], graph, [Change("c", ChangeKind.DEPLOY, 380.0)])[0].service == "c"
    assert _ranked([*evidence, early], graph, [Change("c", ChangeKind.DEPLOY, 300.0)])[0].service == "b"
    # an anomalous callee of c that began with the change explains c's anomaly: not the change
    below = nx.DiGraph([*graph.edges, ("c", "d")])
    callee = _shift(5, "d", "error_rate", 30.0, Signal.ERRORS, 480.0)
    assert _ranked([*evidence, early, callee], below, [Change("c", ChangeKind.DEPLOY, 470.0)])[0].service != "c"
    # one anomalous since well before the change, c unharmed until it, does not
    old = _shift(5, "d", "error_rate", 30.0, Signal.ERRORS, 100.0)
    assert _ranked([*evidence, early, old], below, [Change("c", ChangeKind.DEPLOY, 470.0)])[0].service == "c"
    # of two changes that broke something, the latest is the incident asked about
    both = [Change("c", ChangeKind.DEPLOY, 470.0), Change("b", ChangeKind.CONFIG, 450.0)]
    assert _ranked([*evidence, early], graph, both)[0].service == "c"
    # a change made after the symptom was degraded began nothing of it, whatever followed it;
    # made within the skew forgiven of the symptom's onset, it may have
    after = _shift(3, "c", "error_rate", 8.0, Signal.ERRORS, 640.0)
    assert _ranked([*evidence, after], graph, [Change("c", ChangeKind.DEPLOY, 620.0)])[0].service == "b"
    assert (
        _ranked([*evidence, after], graph, [Change("c", ChangeKind.DEPLOY, 620.0)])[0].fault_type != FaultType.RELEASE
    )
    at_once = _shift(3, "c", "error_rate", 8.0, Signal.ERRORS, 540.0)
    assert _ranked([*evidence, at_once], graph, [Change("c", ChangeKind.DEPLOY, 530.0)])[0].service == "c"


def test_a_changed_service_s_wait_on_a_callee_harmed_from_the_same_moment_is_the_callee_s_not_the_change_s() -> None:
    """c was deployed as d, which c calls, began to fail: c's calls to d slowed from that moment.
    The wait is d's harm (d's own anomaly is weak beside it, so no victim rule explains c); the
    change did nothing. Where d shows nothing, c's slow calls are c's own doing: its change's."""
    graph = nx.DiGraph(
        [("front", "a"), ("a", "b"), ("front", "c"), ("c", "d")] + [("front", f"quiet-{k}") for k in range(6)]
    )
    symptom = _shift(1, "front", "error_rate", 40.0, Signal.ERRORS, 500.0)
    strong = _shift(2, "b", "latency_seconds", 60.0, Signal.LATENCY, 500.0)
    waiting = _shift(3, "c", "client_latency_seconds", 50.0, Signal.LATENCY, 490.0)
    callee = _shift(4, "d", "latency_seconds", 3.0, Signal.LATENCY, 485.0)
    deploy = Change("c", ChangeKind.DEPLOY, 480.0, before="1.0.0", after="1.0.1")
    off = ScoringConfig(off=frozenset({WAITS}))
    assert _ranked([symptom, strong, waiting, callee], graph, [deploy], off)[0].service == "c"  # the switch
    top = _ranked([symptom, strong, waiting, callee], graph, [deploy])[0]
    assert top.service != "c" and top.fault_type is not FaultType.RELEASE
    # in the other order, too
    assert _ranked([callee, waiting, strong, symptom], graph, [deploy])[0].service != "c"
    # d unharmed, or harmed long before c waited: the wait is c's, and the change's
    assert _ranked([symptom, strong, waiting], graph, [deploy])[0].service == "c"
    before = _shift(4, "d", "latency_seconds", 3.0, Signal.LATENCY, 300.0)
    assert _ranked([symptom, strong, waiting, before], graph, [deploy])[0].service == "c"
    # c's own answers failing from the change stay its harm, whatever its calls waited on
    failing = _shift(5, "c", "error_rate", 8.0, Signal.ERRORS, 490.0)
    assert _ranked([symptom, strong, waiting, callee, failing], graph, [deploy])[0].service == "c"


def test_a_change_is_blamed_only_for_harm_of_this_incident_and_a_restart_only_for_harm_to_the_work() -> None:
    graph = nx.DiGraph([("front", "a"), ("a", "b"), ("front", "c")] + [("front", f"quiet-{k}") for k in range(6)])
    symptom = _shift(1, "front", "error_rate", 40.0, Signal.ERRORS, 500.0)
    strong = _shift(2, "b", "latency_seconds", 60.0, Signal.LATENCY, 500.0)
    evidence = [symptom, strong]
    failing = _shift(3, "c", "error_rate", 8.0, Signal.ERRORS, 490.0)
    gc = _shift(3, "c", "gc_collections", 4.0, Signal.MEMORY, 490.0)  # a fresh process's first collections
    fds = _shift(3, "c", "open_fds", 4.0, Signal.OTHER, 490.0, direction=-1)  # fewer files held
    for kind in (ChangeKind.DEPLOY, ChangeKind.ROLLBACK, ChangeKind.RESTART):
        change = Change("c", kind, 470.0)
        assert _ranked([*evidence, failing], graph, [change])[0].service == "c"
        # what a restart moves by itself is no harm the new version did
        assert _ranked([*evidence, gc], graph, [change])[0].service == "b"
        assert _ranked([*evidence, fds], graph, [change])[0].service == "b"
    # a config push starts no new process: its service's resources moving the bad way after it are harm
    assert _ranked([*evidence, gc], graph, [Change("c", ChangeKind.CONFIG, 470.0)])[0].service == "c"
    # ... and moving the good way are not
    assert _ranked([*evidence, fds], graph, [Change("c", ChangeKind.CONFIG, 470.0)])[0].service == "b"
    # an anomaly over before the symptom's began is another incident's: no change is blamed for this one
    # (ended as the push was reverted: the push's harm while it stood)
    over = replace(_shift(3, "c", "error_rate", 8.0, Signal.ERRORS, 200.0), until=260.0)
    pushed = [Change("c", ChangeKind.CONFIG, 180.0), Change("c", ChangeKind.CONFIG, 250.0)]
    assert _ranked([*evidence, over], graph, pushed)[0].service == "b"
    assert _ranked([*evidence, over], graph, pushed, ScoringConfig(off=frozenset({"timing"})))[0].service == "c"


def test_the_incident_asked_about_begins_when_the_symptom_s_users_feel_it_not_when_its_process_moved() -> None:
    window = Window(0.0, 1000.0)
    symptom = _shift(1, "front", "latency_seconds", 30.0, Signal.LATENCY, 500.0)
    blip = replace(_shift(3, "c", "error_rate", 60.0, Signal.ERRORS, 200.0), until=260.0)  # over long before
    ref = reference([symptom, blip], "front", None, window)
    assert ref.start == 500.0 and weight(blip, ref, past_weight=0.4) == 0.4
    # the symptom's process holding more files, CPU or memory since early on does not move its start back
    for subject, signal in (("open_fds", Signal.OTHER), ("cpu_seconds", Signal.CPU), ("rss_bytes", Signal.MEMORY)):
        process = _shift(4, "front", subject, 8.0, signal, 100.0)
        assert reference([process, symptom, blip], "front", None, window).start == 500.0
    # where its users felt it early (errors since then), the incident began then, and the blip is its
    felt = _shift(4, "front", "error_rate", 8.0, Signal.ERRORS, 100.0)
    ref = reference([felt, symptom, blip], "front", None, window)
    assert ref.start == 100.0 and weight(blip, ref, past_weight=0.4) == 1.0


def test_what_a_restart_moves_in_its_own_process_is_no_evidence_against_the_service() -> None:
    # A harmless deploy starts a fresh process, whose memory is set against the old one's normal.
    graph = nx.DiGraph([("front", "a"), ("a", "b"), ("front", "c")] + [("front", f"quiet-{k}") for k in range(6)])
    symptom = _shift(1, "front", "error_rate", 40.0, Signal.ERRORS, 500.0)
    strong = _shift(2, "b", "latency_seconds", 60.0, Signal.LATENCY, 500.0)
    fresh = _shift(3, "c", "rss_bytes", 300.0, Signal.MEMORY, 480.0)
    evidence = [symptom, strong, fresh]
    deploy = Change("c", ChangeKind.DEPLOY, 470.0)
    assert _ranked(evidence, graph, [])[0].service == "c"  # with no restart known, a memory fault
    assert _ranked(evidence, graph, [deploy])[0].service == "b"
    assert _ranked(evidence, graph, [deploy], ScoringConfig(off=frozenset({"changes"})))[0].service == "c"
    # a config push starts no process; memory that rose long after the restart is the process's own
    assert _ranked(evidence, graph, [Change("c", ChangeKind.CONFIG, 470.0)])[0].service == "c"
    assert _ranked(evidence, graph, [Change("c", ChangeKind.DEPLOY, 200.0)])[0].service == "c"


def test_a_callee_answers_its_caller_s_changed_calls_only_where_the_caller_s_work_changed_first() -> None:
    graph = nx.DiGraph([("front", "a"), ("a", "b")] + [("front", f"quiet-{k}") for k in range(6)])
    symptom = _shift(1, "front", "latency_seconds", 30.0, Signal.LATENCY, 500.0)
    callee = _shift(2, "b", "latency_seconds", 40.0, Signal.LATENCY, 500.0)

    def why(caller: Evidence, config: ScoringConfig = ScoringConfig()) -> str:
        ranked = score_hypotheses(
            [symptom, callee, caller], graph=graph, window=Window(0.0, 1000.0), symptom="front", config=config
        )
        return next(h.rationale for h in ranked if h.service == "b")

    # the caller's calls slowed well before the callee moved: the callee answers them
    assert "began after anomalous caller a" in why(_shift(3, "a", "latency_seconds", 40.0, Signal.LATENCY, 200.0))
    # memory or descriptors the caller has held since then change no call it sends
    for subject, signal in (("rss_bytes", Signal.MEMORY), ("open_fds", Signal.OTHER), ("cpu_seconds", Signal.CPU)):
        assert "began after anomalous caller" not in why(_shift(3, "a", subject, 40.0, signal, 200.0))
    # the switch: without the rule, no callee is ever said to answer its caller
    slowed = _shift(3, "a", "latency_seconds", 40.0, Signal.LATENCY, 200.0)
    assert "began after anomalous caller" not in why(slowed, ScoringConfig(off=frozenset({"answers"})))


def test_a_delay_is_time_lost_where_the_service_is_on_its_way_in_or_in_its_own_work() -> None:
    # A slow handler: the service's own work (its spans' self time) and its latency grew, and its
    # memory a little with the requests it holds; nothing waited on its way in.
    graph = nx.DiGraph([("front", "a"), ("front", "b")])
    window = Window(0.0, 1000.0)

    def ev(i: int, kind: EvidenceKind, signal: Signal, score: float) -> Evidence:
        modality = Modality.METRICS if kind is EvidenceKind.METRIC_SHIFT else Modality.TRACES
        return Evidence(EvidenceId(f"ev-{i}"), modality, kind, "a", "m", score, signal, "q", "d", 500.0)

    slow = [
        ev(1, EvidenceKind.TRACE_SELF_TIME, Signal.LATENCY, 40.0),
        ev(2, EvidenceKind.METRIC_SHIFT, Signal.LATENCY, 60.0),
        ev(3, EvidenceKind.METRIC_SHIFT, Signal.MEMORY, 4.0),
    ]

    def top(evidence: list[Evidence], config: ScoringConfig = ScoringConfig()) -> Hypothesis:
        return score_hypotheses(evidence, graph=graph, window=window, symptom="front", config=config)[0]

    assert top(slow).fault_type is FaultType.NETWORK_DELAY
    assert "ev-1" in top(slow).evidence  # the delay cites the time its own work lost
    assert top(slow, ScoringConfig(off=frozenset({"delays"}))).fault_type is FaultType.MEMORY
    # the same time lost with its CPU far up: the CPU's fault claims its own work's time
    hog = [*slow, ev(4, EvidenceKind.METRIC_SHIFT, Signal.CPU, 200.0)]
    assert top(hog).fault_type is FaultType.CPU


def test_own_time_where_a_callee_is_anomalous_may_be_time_waited_on_it_and_is_no_delay_of_its_own() -> None:
    graph = nx.DiGraph([("front", "a"), ("a", "c"), ("front", "b")])
    window = Window(0.0, 1000.0)

    def ev(i: int, entity: str, kind: EvidenceKind, signal: Signal, score: float) -> Evidence:
        modality = Modality.METRICS if kind is EvidenceKind.METRIC_SHIFT else Modality.TRACES
        return Evidence(EvidenceId(f"ev-{i}"), modality, kind, entity, "m", score, signal, "q", "d", 500.0)

    caller = [
        ev(1, "a", EvidenceKind.TRACE_SELF_TIME, Signal.LATENCY, 40.0),
        ev(2, "a", EvidenceKind.METRIC_SHIFT, Signal.LATENCY, 60.0),
        ev(3, "a", EvidenceKind.METRIC_SHIFT, Signal.MEMORY, 4.0),
    ]

    def type_of(evidence: list[Evidence], service: str, share: GapShare = NO_GAPS) -> FaultType:
        ranked = score_hypotheses(evidence, graph=graph, window=window, symptom="front", edge_share=lambda _: share)
        return next(h.fault_type for h in ranked if h.service == service)

    assert type_of(caller, "a") is FaultType.NETWORK_DELAY  # its callee quiet: the time is its own
    busy = [*caller, ev(4, "c", EvidenceKind.METRIC_SHIFT, Signal.CPU, 200.0)]
    assert type_of(busy, "a") is FaultType.MEMORY  # its callee anomalous: it may have waited on it
    # its own side slowed its calls out before they left (a pool it waits for): no callee's doing
    assert type_of(busy, "a", GapShare(0.0, 1.0, frozenset({"c"}))) is FaultType.NETWORK_DELAY
    assert type_of(busy, "a", GapShare(1.0, 0.0, frozenset({"c"}))) is FaultType.MEMORY


def test_error_lines_a_service_wrote_while_its_own_answers_failed_report_an_exception() -> None:
    # A service refuses half its requests with a 500 and logs each refusal in words no runtime
    # uses for an exception; its own error rate rose. Its callers' failed calls rose too, but
    # those are the calls they made, not answers they gave.
    graph = nx.DiGraph([("front", "a"), ("front", "b")])
    window = Window(0.0, 1000.0)

    def ev(i: int, kind: EvidenceKind, subject: str, score: float, detail: str = "d") -> Evidence:
        modality = Modality.METRICS if kind is EvidenceKind.METRIC_SHIFT else Modality.LOGS
        return Evidence(EvidenceId(f"ev-{i}"), modality, kind, "a", subject, score, Signal.ERRORS, "q", detail, 500.0)

    lines = ev(1, EvidenceKind.LOG_ERROR_SHIFT, "T1", 300.0, "ERROR 'request failed: quota exceeded' 30/min (new)")

    def top(evidence: list[Evidence], config: ScoringConfig = ScoringConfig()) -> Hypothesis:
        return score_hypotheses(evidence, graph=graph, window=window, symptom="front", config=config)[0]

    assert top([lines]).fault_type is FaultType.WRONG_RESULT  # error lines alone: an error without an exception
    failing = [lines, ev(2, EvidenceKind.METRIC_SHIFT, "ErrorRate(%)", 40.0)]
    assert top(failing).fault_type is FaultType.EXCEPTION
    assert "ev-1" in top(failing).evidence  # the exception cites the lines it wrote
    assert top(failing, ScoringConfig(off=frozenset({"raised"}))).fault_type is FaultType.WRONG_RESULT
    calling = [lines, ev(2, EvidenceKind.METRIC_SHIFT, "ClientErrorRate(%)", 40.0)]
    assert top(calling).fault_type is FaultType.WRONG_RESULT  # its calls failed, not its answers
    # an error rate that fell, or ran in another incident, says nothing of this incident's answers
    fell = [lines, replace(ev(2, EvidenceKind.METRIC_SHIFT, "ErrorRate(%)", 40.0), direction=-1)]
    assert top(fell).fault_type is FaultType.WRONG_RESULT


def test_harm_over_while_the_change_still_stood_was_not_its_doing() -> None:
    graph = nx.DiGraph([("front", "a"), ("a", "b"), ("front", "c")] + [("front", f"quiet-{k}") for k in range(6)])
    symptom = _shift(1, "front", "error_rate", 40.0, Signal.ERRORS, 500.0)
    strong = _shift(2, "b", "latency_seconds", 60.0, Signal.LATENCY, 500.0)
    deploy = Change("c", ChangeKind.DEPLOY, 470.0)
    going = _shift(3, "c", "error_rate", 8.0, Signal.ERRORS, 490.0)
    assert _ranked([symptom, strong, going], graph, [deploy])[0].service == "c"
    # the same harm, over ninety seconds after it began while the new version still ran: the
    # roll's own blip, not the version's defect
    blip = replace(going, until=580.0)
    assert _ranked([symptom, strong, blip], graph, [deploy])[0].service == "b"
    # ended only once the change was rolled back: the version's, as long as it ran
    rollback = Change("c", ChangeKind.ROLLBACK, 570.0)
    assert _ranked([symptom, strong, blip], graph, [deploy, rollback])[0].service == "c"
    assert _ranked([symptom, strong, blip], graph, [rollback, deploy])[0].service == "c"


def test_a_change_undone_with_all_its_harm_ended_leaves_the_next_change_free_to_begin_an_incident() -> None:
    graph = nx.DiGraph(
        [("front", "a"), ("a", "b"), ("front", "c"), ("front", "d")] + [("front", f"quiet-{k}") for k in range(6)]
    )
    symptom = _shift(1, "front", "error_rate", 40.0, Signal.ERRORS, 300.0)  # degraded since the first incident
    earlier = replace(_shift(2, "c", "error_rate", 60.0, Signal.ERRORS, 300.0), until=700.0)
    later = _shift(3, "d", "error_rate", 8.0, Signal.ERRORS, 720.0)
    changes = [
        Change("c", ChangeKind.DEPLOY, 290.0),
        Change("c", ChangeKind.ROLLBACK, 690.0),  # c's harm ended with it
        Change("d", ChangeKind.CONFIG, 710.0),
    ]
    evidence = [symptom, earlier, later]
    top = _ranked(evidence, graph, changes)[0]
    assert (top.service, top.fault_type) == ("d", FaultType.RELEASE)
    assert _ranked(evidence, graph, changes, ScoringConfig(off=frozenset({UNDONE})))[0].service == "c"
    # c's harm still going: its incident is not over, and d's change came once it was under way
    going = replace(earlier, until=None)
    assert _ranked([symptom, going, later], graph, changes[::2])[0].service == "c"
