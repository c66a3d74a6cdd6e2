import json
import subprocess
import sys
from pathlib import Path

import pytest

from rca.explain import Topic, answer, entities_of, is_question, parse_question
from rca.trace import Trace
from rca.trace_json import from_json


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Trace:
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bot.cli",
            "investigate",
            "Frontend",
            "10m",
            "--data",
            str(root / "bot" / "demo"),
            "--at",
            "2023-01-29T13:36:00Z",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
    )
    return from_json(json.loads(out.stdout))


def test_topics_ignore_words_inside_service_names(trace: Trace) -> None:
    names = tuple(sorted({*entities_of(trace), "ts-order-service", "ts-order-other-service"}))
    q = parse_question("why ts-order-service?", services=names)  # "order" is not a timeline question
    assert q.topic is Topic.WHY and q.services == ("ts-order-service",)
    assert parse_question("why not ts-order-other-service?", services=names).services == ("ts-order-other-service",)
    assert parse_question("is it ts-contacs-service?", services=names).services == ("ts-contacts-service",)
    assert parse_question("timeline please", services=names).topic is Topic.TIMELINE
    assert parse_question("hello", services=names).topic is Topic.HELP


def test_answers_quote_the_trace(trace: Trace) -> None:
    names = entities_of(trace)
    lead, second = trace.hypotheses[0], trace.hypotheses[1]
    why = answer(parse_question("why?", services=names), trace).text
    assert lead.service in why and "#1" in why and "Causal chain" in why
    why_not = answer(parse_question(f"why not {second.service}?", services=names), trace).text
    assert "ranked #2" in why_not and lead.service in why_not
    outside = answer(parse_question("why not ts-ui-dashboard?", services=(*names, "ts-ui-dashboard")), trace).text
    assert "no anomaly of its own" in outside
    nxt = answer(parse_question("what should I check next?", services=names), trace).text
    assert all(t.id in nxt for t in trace.decision.tests)
    chart = answer(parse_question(f"chart cpu of {lead.service}", services=names), trace)
    assert chart.chart is not None and chart.chart.entity == lead.service and chart.chart.metric == "cpu"


def test_confidences_read_top_down(trace: Trace) -> None:
    ranking = trace.decision.ranking
    assert all(a[2] >= b[2] for a, b in zip(ranking, ranking[1:], strict=False))


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("why not ts-order-service?", True),
        ("Is it the deploy at 13:20", True),
        ("show the timeline", True),
        ("checking the dashboards now, brb", False),
        ("rolled back, latency recovering", False),
        ("", False),
        ("ok", False),
        ("WHAT changed", True),
    ],
)
def test_a_reply_asks_only_when_it_asks(text: str, asks: bool) -> None:
    assert is_question(text) is asks


def test_a_question_it_cannot_answer_gets_an_honest_reply_and_help_gets_the_menu(trace: Trace) -> None:
    names = entities_of(trace)
    free = answer(parse_question("is it the deploy at 13:20?", services=names), trace).text
    assert free.startswith("I can't answer that one") and "why not <service>?" in free
    assert answer(parse_question("help", services=names), trace).text.startswith("Ask me about")


def test_the_timeline_marks_what_the_ranking_counts_as_another_incident(trace: Trace) -> None:
    """A window that reaches back far holds earlier incidents: the timeline says which anomalies
    the timing rule set aside, and why, and this incident's come unmarked."""
    from dataclasses import replace

    from rca.evidence import Evidence, EvidenceId, EvidenceKind
    from rca.model import Modality
    from rca.signals import Signal

    t0 = trace.evidence_package.window.start + 600.0

    def ev(i: str, entity: str, onset: float, until: float | None = None, *, under_way: bool = False) -> Evidence:
        return Evidence(
            EvidenceId(i),
            Modality.METRICS,
            EvidenceKind.METRIC_SHIFT,
            entity,
            "latency_p99",
            9.0,
            Signal.LATENCY,
            "q",
            f"{entity} latency rose",
            onset,
            until=until,
            under_way=under_way,
        )

    items = (
        ev("e1", trace.symptom, t0),
        ev("e2", "svc-old", t0 - 500.0, t0 - 300.0),
        ev("e3", "svc-now", t0 + 30.0),
        ev("e4", "svc-long", t0 - 590.0, under_way=True),
        ev("e5", "svc-both", t0 - 400.0, t0 - 350.0),
        ev("e6", "svc-both", t0 + 20.0),
    )
    marked = replace(trace, evidence_package=replace(trace.evidence_package, evidence=items, alert_time=None))
    text = answer(parse_question("timeline?", services=entities_of(marked)), marked).text
    line = {
        name: next(x for x in text.splitlines() if f" {name}:" in x)
        for name in ("svc-old", "svc-now", "svc-long", "svc-both", trace.symptom)
    }
    assert "over by" in line["svc-old"] and "earlier incident" in line["svc-old"]
    assert "under way before the data" in line["svc-long"]
    assert "counted as" not in line["svc-now"] and "counted as" not in line[trace.symptom]
    assert "counted as" not in line["svc-both"]  # this incident's anomaly is shown, not its earlier one
    assert "ask again with a window" in text
    calm = replace(trace, evidence_package=replace(trace.evidence_package, evidence=items[:1] + items[2:3]))
    assert "ask again" not in answer(parse_question("timeline?", services=entities_of(calm)), calm).text
