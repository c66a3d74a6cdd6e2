import json
import subprocess
import sys
from pathlib import Path

import pytest

from rca.explain import Topic, answer, entities_of, is_question, parse_question
from rca.trace import Trace, from_json


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Trace:
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-m", "bot.cli", "investigate", "Frontend", "10m", "--data",
                          str(root / "bot" / "demo"), "--at", "2023-01-29T13:36:00Z", "--json"],
                         capture_output=True, text=True, check=True, cwd=root)  # fmt: skip
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
    [("why not ts-order-service?", True), ("Is it the deploy at 13:20", True), ("show the timeline", True),
     ("checking the dashboards now, brb", False), ("rolled back, latency recovering", False), ("", False),
     ("ok", False), ("WHAT changed", True)],
)
def test_a_reply_asks_only_when_it_asks(text: str, asks: bool) -> None:
    assert is_question(text) is asks


def test_a_question_it_cannot_answer_gets_an_honest_reply_and_help_gets_the_menu(trace: Trace) -> None:
    names = entities_of(trace)
    free = answer(parse_question("is it the deploy at 13:20?", services=names), trace).text
    assert free.startswith("I can't answer that one") and "why not <service>?" in free
    assert answer(parse_question("help", services=names), trace).text.startswith("Ask me about")
