"""Each STAR criterion on a real trace (the demo incident) and on a copy that violates it."""

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import networkx as nx
import pytest

from bot.cli import main
from rca.engines import build_engine
from rca.errors import MalformedFile
from rca.evidence import EvidenceId
from rca.model import FaultType, Modality
from rca.replay import known_entities
from rca.sources.datasets import find_cases
from rca.star.audit import Route, StarConfig, audit, route
from rca.star.context import audit_context
from rca.star.criteria import AuditContext, leading
from rca.telemetry import Window
from rca.trace import Chain, Link, Trace, VerificationTest
from rca.trace_json import from_json, to_json


@pytest.fixture(scope="module")
def real() -> tuple[Trace, AuditContext]:
    from tests.conftest import NEZHA_SLICE

    (case,) = find_cases(NEZHA_SLICE)
    doc = asyncio.run(build_engine("lats").investigate(case.incident)).trace
    ctx = asyncio.run(audit_context(case.incident))
    assert ctx.leads and ctx.graph.number_of_nodes() > 0
    return from_json(doc), ctx  # type: ignore[arg-type]


def _score(trace: Trace, ctx: AuditContext, name: str) -> float:
    return next(c.score for c in audit(trace, ctx).criteria if c.name == name)


def _clean(trace: Trace, ctx: AuditContext) -> Trace:
    """The real trace made to satisfy every criterion, as a baseline for the violations."""
    ep = trace.evidence_package
    lead = trace.hypotheses[0]
    own = next(e for e in ep.evidence if e.entity == lead.service)
    caller = next(iter(ctx.graph.predecessors(lead.service)))
    scope = tuple(sorted(set(ep.scope) | set(ctx.graph.nodes) | set(ctx.leads)))
    link = Link("h-1-l1", lead.service, caller, ep.window.start + 100, ep.window.start + 200, (own.id,))
    chains = (Chain(lead.id, lead.service, (link,)),)
    # every anomaly the leading hypotheses cite begins inside the window
    cited = {i for h in leading(trace) for i in h.evidence}
    inside = ep.window.start + 0.5 * ep.window.seconds
    evidence = tuple(replace(e, onset=inside) if e.id in cited else e for e in ep.evidence)
    return replace(trace, evidence_package=replace(ep, scope=scope, evidence=evidence), chains=chains)


def test_a_clean_trace_is_accepted_with_no_violation(real: tuple[Trace, AuditContext]) -> None:
    trace, ctx = real
    verdict = audit(_clean(trace, ctx), ctx)
    assert verdict.route is Route.ACCEPT
    assert [c.name for c in verdict.criteria if c.violated] == []


@pytest.mark.parametrize(
    "name",
    [
        "onset_covered",
        "modality_fit",
        "scope_neighbours",
        "grounded",
        "not_collapsed",
        "covers_evidence",
        "layer_consistent",
        "reachable",
        "cause_before_effect",
        "links_supported",
        "calibrated",
        "agrees_with_analysis",
        "tests_discriminative",
        "sources_read",
        "leads_examined",
        "independent_lead",
        "began_first",
        "seen_at_source",
    ],
)
def test_each_criterion_sees_its_violation(real: tuple[Trace, AuditContext], name: str) -> None:
    trace, ctx = real
    good = _clean(trace, ctx)
    bad = VIOLATIONS[name](good, ctx)
    assert _score(good, ctx, name) > _score(bad, ctx, name)
    assert _score(bad, ctx, name) < 0.8
    verdict = audit(bad, ctx)
    assert any(c.name == name for d in verdict.stages for c in d.violations)


def _onset_at_start(t: Trace, ctx: AuditContext) -> Trace:
    ep = t.evidence_package
    cited = {i for h in t.hypotheses[:3] for i in h.evidence}
    ev = tuple(replace(e, onset=ep.window.start) if e.id in cited else e for e in ep.evidence)
    return replace(t, evidence_package=replace(ep, evidence=ev))


def _drop_modality(t: Trace, ctx: AuditContext) -> Trace:
    ep = t.evidence_package
    top = t.hypotheses[0]
    kept = tuple(e for e in ep.evidence if not (e.entity == top.service and e.modality.value == "metrics"))
    return replace(t, evidence_package=replace(ep, evidence=kept, modalities={**ep.modalities, "metrics": False}))


def _leads_unseen(t: Trace, ctx: AuditContext) -> Trace:
    """The package never looked at the entities a scan of the telemetry flags most, except the
    one it blames (that one it read)."""
    ep = t.evidence_package
    unseen = {lead for lead in ctx.leads if lead != t.hypotheses[0].service}
    return replace(
        t,
        evidence_package=replace(
            ep,
            scope=tuple(e for e in ep.scope if e not in unseen),
            evidence=tuple(e for e in ep.evidence if e.entity not in unseen),
        ),
    )


def _backend_failed(t: Trace, ctx: AuditContext) -> Trace:
    ep = t.evidence_package
    kept = tuple(e for e in ep.evidence if e.modality.value != "traces")
    return replace(
        t,
        evidence_package=replace(
            ep,
            evidence=kept,
            modalities={**ep.modalities, "traces": False},
            missing=ep.missing + ("traces: unavailable (jaeger: timed out)",),
        ),
    )


def _victims_only(t: Trace, ctx: AuditContext) -> Trace:
    ep = t.evidence_package
    suspects = {h.service for h in t.hypotheses[:3]}
    return replace(
        t,
        evidence_package=replace(
            ep, scope=tuple(sorted(suspects)), evidence=tuple(e for e in ep.evidence if e.entity in suspects)
        ),
    )


def _ungrounded(t: Trace, ctx: AuditContext) -> Trace:
    other = next(e.id for e in t.evidence_package.evidence if e.entity != t.hypotheses[0].service)
    half = max(4, len(t.hypotheses) // 2)
    hyps = tuple(replace(h, evidence=(other,)) if i < half else h for i, h in enumerate(t.hypotheses))
    return replace(t, hypotheses=hyps)


def _collapsed(t: Trace, ctx: AuditContext) -> Trace:
    return replace(t, hypotheses=t.hypotheses[:1])


def _leader_dropped(t: Trace, ctx: AuditContext) -> Trace:
    return replace(t, hypotheses=t.hypotheses[1:])


def _host_only(t: Trace, ctx: AuditContext) -> Trace:
    ep = t.evidence_package
    cited = set(t.hypotheses[0].evidence)
    ev = tuple(replace(e, detail=e.detail + " [host]") if e.id in cited else e for e in ep.evidence)
    return replace(t, evidence_package=replace(ep, evidence=ev))


def _unreachable(t: Trace, ctx: AuditContext) -> Trace:
    chain = t.chains[0]
    fake = Link("bad-1", chain.root, "ts-no-such-caller", None, None, t.hypotheses[0].evidence[:1])
    return replace(t, chains=(replace(chain, links=chain.links + (fake,)),) + t.chains[1:])


def _reversed(t: Trace, ctx: AuditContext) -> Trace:
    chains = tuple(
        replace(c, links=tuple(replace(ln, onset_source=2000.0, onset_target=1000.0) for ln in c.links))
        for c in t.chains
    )
    return replace(t, chains=chains)


def _unsupported(t: Trace, ctx: AuditContext) -> Trace:
    chains = tuple(replace(c, links=tuple(replace(ln, evidence=()) for ln in c.links)) for c in t.chains)
    return replace(t, chains=chains)


def _overconfident(t: Trace, ctx: AuditContext) -> Trace:
    return replace(t, decision=replace(t.decision, confidence=0.99))


def _contradicting(t: Trace, ctx: AuditContext) -> Trace:
    ranking = t.decision.ranking
    return replace(t, decision=replace(t.decision, ranking=(ranking[2], ranking[0], ranking[1]) + ranking[3:]))


def _useless_tests(t: Trace, ctx: AuditContext) -> Trace:
    h = t.hypotheses[0]
    tool = "logs" if h.fault_type is FaultType.CPU else "metrics"
    tests = (VerificationTest("t-1", h.id, tool, "ts-unrelated", "q", "m", ((h.id, "anomalous"),), "x"),)
    return replace(t, decision=replace(t.decision, tests=tests))


def _outshone(t: Trace, ctx: AuditContext) -> Trace:
    """A rival's telemetry deviates twice as far as anything of the blamed service's."""
    ep = t.evidence_package
    top, rival = t.hypotheses[0].service, t.hypotheses[1].service
    strongest = max((e for e in ep.evidence if e.entity == top), key=lambda e: e.score)
    louder = replace(strongest, id=EvidenceId("ev-louder"), entity=rival, score=2 * strongest.score + 1)
    return replace(t, evidence_package=replace(ep, evidence=(*ep.evidence, louder)))


def _rival_first(t: Trace, ctx: AuditContext) -> Trace:
    """The runner-up's anomaly began ten minutes before the blamed one's."""
    ep = t.evidence_package
    top = set(t.hypotheses[0].evidence)
    onset = min(e.onset for e in ep.evidence if e.id in top and e.onset is not None)
    rival = set(t.hypotheses[1].evidence)
    ev = tuple(replace(e, onset=onset - 600, until=None) if e.id in rival else e for e in ep.evidence)
    return replace(t, evidence_package=replace(ep, evidence=ev))


def _delay_in(t: Trace, modality: Modality) -> Trace:
    """The leader blamed for a network delay, everything it cites read from one modality."""
    ep = t.evidence_package
    top = t.hypotheses[0]
    cited = set(top.evidence)
    ev = tuple(replace(e, modality=modality) if e.id in cited else e for e in ep.evidence)
    hyps = (replace(top, fault_type=FaultType.NETWORK_DELAY), *t.hypotheses[1:])
    return replace(t, evidence_package=replace(ep, evidence=ev), hypotheses=hyps)


def _seen_secondhand(t: Trace, ctx: AuditContext) -> Trace:
    """A delay seen only in the blamed service's metrics, none in its timed calls."""
    return _delay_in(t, Modality.METRICS)


VIOLATIONS = {
    "onset_covered": _onset_at_start,
    "modality_fit": _drop_modality,
    "scope_neighbours": _victims_only,
    "grounded": _ungrounded,
    "not_collapsed": _collapsed,
    "covers_evidence": _leader_dropped,
    "layer_consistent": _host_only,
    "reachable": _unreachable,
    "cause_before_effect": _reversed,
    "links_supported": _unsupported,
    "calibrated": _overconfident,
    "agrees_with_analysis": _contradicting,
    "tests_discriminative": _useless_tests,
    "sources_read": _backend_failed,
    "leads_examined": _leads_unseen,
    "independent_lead": _outshone,
    "began_first": _rival_first,
    "seen_at_source": _seen_secondhand,
}


@pytest.mark.parametrize(
    ("score", "expected"),
    [
        (0.8, Route.ACCEPT),
        (0.95, Route.ACCEPT),
        (0.7999, Route.FAST),
        (0.7, Route.FAST),
        (0.6999, Route.SLOW),
        (0.0, Route.SLOW),
    ],
)
def test_routing_bounds(score: float, expected: Route) -> None:
    assert route(score, StarConfig(tau=0.8, epsilon=0.1)) is expected


def test_audit_command(tmp_path: Path, nezha_slice: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["investigate", "Frontend", "10m", "--data", str(nezha_slice), "--at", "2023-01-29T13:36:00Z", "--json"])
        == 0
    )
    path = tmp_path / "trace.json"
    path.write_text(capsys.readouterr().out)
    assert main(["audit", str(path), "--data", str(nezha_slice)]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert 0 <= verdict["score"] <= 1 and verdict["route"] in ("accept", "fast_path", "slow_path")
    assert [s["stage"] for s in verdict["stages"]] == [
        "evidence_package",
        "hypothesis_set",
        "analysis_structure",
        "decision_report",
    ]
    path.write_text("{}")
    assert main(["audit", str(path)]) == 2
    assert "not a valid trace" in capsys.readouterr().err


def test_a_leader_with_no_onset_in_the_window_is_a_shortfall(real: tuple[Trace, AuditContext]) -> None:
    trace, ctx = real
    good = _clean(trace, ctx)
    ep = good.evidence_package
    lead = set(good.hypotheses[0].evidence)
    flat = replace(ep, evidence=tuple(replace(e, onset=None) if e.id in lead else e for e in ep.evidence))
    assert _score(replace(good, evidence_package=flat), ctx, "onset_covered") < _score(good, ctx, "onset_covered")


def test_support_falls_when_the_telemetry_stops_backing_the_answer(real: tuple[Trace, AuditContext]) -> None:
    trace, ctx = real
    good = _clean(trace, ctx)
    backed = audit(good, ctx)
    assert 0.0 < backed.support <= 1.0 and backed.trust == round(backed.score * backed.support, 4)
    outshone = audit(_outshone(good, ctx), ctx)
    assert outshone.support < backed.support and outshone.trust < backed.trust
    assert "independent_lead" in {c.name for d in outshone.stages for c in d.violations}


def test_support_falls_with_each_lead_of_the_telemetry_never_examined(real: tuple[Trace, AuditContext]) -> None:
    """A search that never looked where the telemetry stands out cannot have ruled it out."""
    trace, ctx = real
    good = _clean(trace, ctx)
    looked = tuple(n for n in ctx.leads if n in good.evidence_package.examined)
    assert looked
    seen = audit(good, replace(ctx, leads=looked))
    unseen = audit(good, replace(ctx, leads=(*looked, "a-service-never-read")))
    k = len(looked)
    assert unseen.support == pytest.approx(seen.support * k / (k + 1), abs=1e-3)
    assert unseen.trust < seen.trust


def test_a_package_that_never_examined_the_telemetry_s_leads_is_repaired_whatever_its_score(
    real: tuple[Trace, AuditContext],
) -> None:
    trace, ctx = real
    good = _clean(trace, ctx)
    lenient = StarConfig(tau=0.0, epsilon=0.0)  # any score is accepted
    assert audit(good, ctx, lenient).route is Route.ACCEPT
    unseen = _leads_unseen(good, ctx)
    assert audit(unseen, ctx, lenient).route is Route.FAST


def test_support_does_not_depend_on_names_or_the_clock(real: tuple[Trace, AuditContext]) -> None:
    """Renaming every entity and moving every timestamp by days leaves the audit's view the same."""
    trace, ctx = real
    good = _clean(trace, ctx)
    doc = json.dumps(to_json(good))
    names = sorted({e.entity for e in good.evidence_package.evidence} | set(ctx.graph.nodes), key=len, reverse=True)
    for i, n in enumerate(names):
        doc = doc.replace(f'"{n}', f'"svc-{i:03d}-renamed')
    renamed = from_json(json.loads(doc))
    graph = nx.relabel_nodes(ctx.graph, {n: f"svc-{i:03d}-renamed" for i, n in enumerate(names)})
    days = 9 * 86400.0
    ep = renamed.evidence_package
    moved_ev = tuple(
        replace(
            e,
            onset=None if e.onset is None else e.onset + days,
            until=None if e.until is None else e.until + days,
            profile=tuple((t + days, z) for t, z in e.profile),
        )
        for e in ep.evidence
    )
    moved = replace(
        renamed,
        evidence_package=replace(
            ep,
            evidence=moved_ev,
            window=Window(ep.window.start + days, ep.window.end + days),
            alert_time=None if ep.alert_time is None else ep.alert_time + days,
        ),
    )
    before = audit(good, ctx)
    rename = {n: f"svc-{i:03d}-renamed" for i, n in enumerate(names)}
    after = audit(moved, replace(ctx, graph=graph, leads=tuple(rename.get(n, n) for n in ctx.leads)))
    assert after.support == before.support
    pick = {"independent_lead", "began_first", "seen_at_source"}
    assert [c.score for c in after.criteria if c.name in pick] == [c.score for c in before.criteria if c.name in pick]


def _all_over(t: Trace) -> Trace:
    """Every anomaly the blamed service shows ended half an hour before the window's close,
    while the runner-up's goes on: the blamed one answers another incident."""
    ep = t.evidence_package
    top, rival = t.hypotheses[0].service, t.hypotheses[1].service
    over, going = ep.window.end - 1800, ep.window.end - 300
    ev = tuple(
        replace(e, onset=over - 300, until=over)
        if e.entity == top
        else replace(e, onset=going, until=None, under_way=False)
        if e.entity == rival
        else e
        for e in ep.evidence
    )
    return replace(t, evidence_package=replace(ep, evidence=ev))


def test_a_leader_with_no_anomaly_of_this_incident_is_never_accepted(real: tuple[Trace, AuditContext]) -> None:
    trace, ctx = real
    clean = audit(_clean(trace, ctx), ctx)
    assert not next(c for c in clean.criteria if c.name == "independent_lead").necessary
    verdict = audit(_all_over(_clean(trace, ctx)), ctx, StarConfig(tau=0.0))  # accepted on its form alone
    lead = next(c for c in verdict.criteria if c.name == "independent_lead")
    assert lead.necessary and lead.violated and "another time" in lead.explanation
    assert verdict.route is not Route.ACCEPT and verdict.trust == 0.0


def test_a_delay_seen_only_in_latency_percentiles_is_trusted_by_that_modality_rank(
    real: tuple[Trace, AuditContext],
) -> None:
    """Network delay shows at its source in timed calls (spans), then in metrics: the same
    verdict read from metrics alone has half the support it has read from spans."""
    trace, ctx = real
    clean = _clean(trace, ctx)
    spans, metrics = audit(_delay_in(clean, Modality.TRACES), ctx), audit(_delay_in(clean, Modality.METRICS), ctx)
    source = {a: next(c for c in a.criteria if c.name == "seen_at_source") for a in (spans, metrics)}
    assert source[spans].score == 1.0 and source[metrics].score == 0.5
    assert "only in its metrics" in source[metrics].explanation and not source[metrics].necessary
    assert spans.support > 0 and metrics.support == pytest.approx(spans.support / 2, abs=1e-3)


def test_an_audit_read_back_from_its_json_is_the_same_audit(real: tuple[Trace, AuditContext]) -> None:
    from rca.star.audit import Audit

    trace, ctx = real
    for t in (trace, _clean(trace, ctx)):
        done = audit(t, ctx)
        back = Audit.from_json(json.loads(json.dumps(done.to_json())))
        assert back == done
        assert back.trust == done.trust and back.blamed == done.blamed
    with pytest.raises(KeyError):  # one stored before audits kept every criterion: audited again
        Audit.from_json({"score": 0.9, "route": "accept", "blamed_stage": None})


class _UnreadableGraph:
    """A call graph whose file exists but cannot be parsed, as an empty trace file of a
    partial copy."""

    async def topology(self) -> nx.DiGraph:
        raise MalformedFile("trace/03_51_trace.csv", "file is empty")


def test_an_unreadable_call_graph_leaves_the_audit_an_empty_graph_not_an_error() -> None:
    from tests.conftest import NEZHA_SLICE

    (case,) = find_cases(NEZHA_SLICE)
    incident = replace(case.incident, sources=replace(case.incident.sources, topology=_UnreadableGraph()))
    ctx = asyncio.run(audit_context(incident))
    assert ctx.graph.number_of_nodes() == 0
    assert ctx.leads  # the modalities that could be read still name their leads
    assert asyncio.run(known_entities(incident))  # the metrics still name the services
