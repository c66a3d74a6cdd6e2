import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import networkx as nx
import pytest

from bot import blockkit, render, replies
from bot.runbooks import load_runbooks
from bot.verdicts import Verdict
from handlers.ids import REPAIR, VERIFY
from rca.changes import Change, ChangeKind
from rca.errors import InputError
from rca.rules.timing import opened_back_note
from rca.star.audit import audit
from rca.star.criteria import AuditContext
from rca.telemetry import Window
from rca.trace_json import from_json

ROOT = Path(__file__).resolve().parents[2]


def demo_trace():  # type: ignore[no-untyped-def]
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bot.cli",
            "investigate",
            "Frontend",
            "10m",
            "--data",
            str(ROOT / "bot" / "demo"),
            "--at",
            "2023-01-29T13:36:00Z",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return from_json(json.loads(out.stdout))


def test_verdict_stays_inside_slack_limits_and_escapes_telemetry() -> None:
    trace = demo_trace()
    ep = trace.evidence_package
    hostile = "<!channel> <https://evil.example|click> password=hunter2-secret " + "x" * 5000
    cited = set(trace.hypotheses[0].evidence)
    evidence = tuple(replace(ev, detail=hostile) if ev.id in cited else ev for ev in ep.evidence)
    trace = replace(trace, evidence_package=replace(ep, evidence=evidence, missing=("no traces: " + "y" * 4000,)))
    verdict = Verdict("inv-1", "Frontend", Window(0, 600), trace, audit(trace, AuditContext(nx.DiGraph())))
    text, blocks = render.verdict(verdict)
    assert len(blocks) <= 50 and len(text) <= 3000
    payload = json.dumps(blocks)
    assert "<!channel>" not in payload and "&lt;!channel&gt;" in payload
    assert "hunter2-secret" not in payload and "[REDACTED]" in payload  # secrets in telemetry never reach Slack
    for b in blocks:
        body = (b.get("text") or {}).get("text", "") if b["type"] != "context" else b["elements"][0]["text"]
        assert len(body) <= 3000
    actions = [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]]
    assert REPAIR in actions and VERIFY in actions
    assert "model calls" in payload  # the cost footer


def _words(blocks: list[dict]) -> str:  # type: ignore[type-arg]
    return blockkit.as_text(blocks)


def test_the_verdict_fits_one_screen_names_the_blamed_service_first_and_says_what_next(tmp_path: Path) -> None:
    trace = demo_trace()
    verdict = Verdict("inv-1", "Frontend", Window(0, 600), trace, audit(trace, AuditContext(nx.DiGraph())))
    book = tmp_path / "runbooks.yaml"
    lead = trace.decision.ranking[0][0]
    book.write_text(
        f"{lead}:\n  owner: S0ORDERS\n  dashboard: https://grafana.example.com/d/x\n"
        "  rollback: kubectl rollout undo deploy/x\n'*':\n  owner: '@platform <!channel>'\n"
    )
    books = load_runbooks(book)
    _, blocks = render.verdict(verdict, runbook=books.of(lead))
    words = _words(blocks)
    assert len(blocks) <= 12 and len(words) <= 1500
    path = next(
        b["text"]["text"] for b in blocks if b["type"] == "section" and "Path to the symptom" in b["text"]["text"]
    )
    assert path.split("\n")[1].startswith(f"*{lead}*")  # the chain starts at the blamed service
    assert "<!subteam^S0ORDERS>" in json.dumps(blocks) and "kubectl rollout undo" in words and "dashboard" in words
    assert "Re-check reasoning" in words and "Run checks" in words and "Reasoning" in words
    assert "robust z" not in words and "h-1" not in words  # no jargon, no internal ids
    assert not re.search(r"\bT\d+@", words)  # a log check names the code location, not the miner's template id
    assert "Graph " in words or "Search the logs of" in words or "Look at the spans" in words  # next steps are steps
    # any other service gets the catch-all, whose text is shown, never read as markup
    assert "<!channel>" not in json.dumps(render.verdict(verdict, runbook=books.of("elsewhere"))[1])


@pytest.mark.parametrize(
    "text",
    [
        "- a list",
        "svc: just text",
        "svc:\n  pager: x",
        "svc:\n  dashboard: javascript:alert(1)",
        "svc:\n  owner: [1, 2]",
        "svc: {owner: 'x'\n",
    ],
)
def test_a_bad_runbook_file_is_refused_by_name(tmp_path: Path, text: str) -> None:
    book = tmp_path / "runbooks.yaml"
    book.write_text(text)
    with pytest.raises(InputError, match="RCABOT_RUNBOOKS"):
        load_runbooks(book)


def test_a_verdict_trusted_less_than_most_says_it_may_be_wrong_and_names_its_weakest_check() -> None:
    from bot.verdicts import Standing

    trace = demo_trace()
    a = audit(trace, AuditContext(nx.DiGraph()))
    plain_verdict = Verdict("inv-1", "Frontend", Window(0, 600), trace, a)
    assert "may be wrong" not in json.dumps(render.verdict(plain_verdict)[1])  # nothing earlier to compare with
    below = [a.trust + 0.1 * (i + 1) for i in range(30)] + [a.trust / 2] * 5  # 30 of 35 trusted more
    doubtful = replace(plain_verdict, standing=Standing.among(a.trust, below))
    assert doubtful.standing is not None and doubtful.standing.doubtful
    blocks = render.verdict(doubtful)[1]
    warning = blocks[1]["text"]["text"]  # right under the headline, not in the small print
    assert "may be wrong" in warning and "30 of this bot's last 35" in warning
    violated = {c.name.replace("_", " ") for c in a.criteria if c.violated}
    assert not violated or any(name in warning for name in violated)
    assert REPAIR in [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]]
    few = replace(plain_verdict, standing=Standing.among(a.trust, below[:10]))  # too few to tell a quarter
    assert "may be wrong" not in json.dumps(render.verdict(few)[1])
    trusted = replace(plain_verdict, standing=Standing.among(a.trust, [a.trust / 2] * 30))
    assert "may be wrong" not in json.dumps(render.verdict(trusted)[1])


@pytest.mark.parametrize("scale", [1.0, 0.01, 100.0])
def test_standing_depends_on_order_alone(scale: float) -> None:
    from bot.verdicts import Standing

    earlier = [i / 40 for i in range(40)]
    s = Standing.among(0.21 * scale, [t * scale for t in earlier])
    assert (s.above, s.of) == (31, 40) and s.doubtful  # 9 of the 40 were trusted less
    assert not Standing.among(1.9 * scale, [t * scale for t in earlier]).doubtful


def test_a_fault_type_its_evidence_does_not_show_is_named_in_the_verdict_with_the_repair() -> None:
    from rca.evaluation.reasoning_errors import neighbouring_fault_type

    trace = demo_trace()
    ctx = AuditContext(nx.DiGraph())
    retyped = neighbouring_fault_type(trace, ctx)
    assert retyped is not None
    a = audit(retyped, ctx)
    payload = blockkit.as_text(render.verdict(Verdict("inv-1", "Frontend", Window(0, 600), retyped, a))[1])
    assert a.route.value != "accept" and "type carried" in payload and "shows no sign of" in payload
    assert "Re-check reasoning" in payload


def test_a_delay_read_only_from_metrics_is_named_in_the_doubt_line() -> None:
    """Blamed for a network delay on its latency percentiles alone (no timed call), the verdict
    carries half the support, and the warning names the check and the modality it lacked."""
    from bot.verdicts import Standing
    from rca.model import FaultType, Modality

    trace = demo_trace()
    top, ep = trace.hypotheses[0], trace.evidence_package
    metrics_only = replace(
        trace,
        hypotheses=(replace(top, fault_type=FaultType.NETWORK_DELAY), *trace.hypotheses[1:]),
        evidence_package=replace(
            ep,
            evidence=tuple(replace(e, modality=Modality.METRICS) if e.id in top.evidence else e for e in ep.evidence),
        ),
    )
    a = audit(metrics_only, AuditContext(nx.DiGraph()))
    earlier = [a.trust + 0.1 * (i + 1) for i in range(30)]
    verdict = Verdict("inv-1", "Frontend", Window(0, 600), metrics_only, a, standing=Standing.among(a.trust, earlier))
    warning = render.verdict(verdict)[1][1]["text"]["text"]
    assert "may be wrong" in warning and "seen at source" in warning and "only in its metrics" in warning


def test_a_delay_is_not_called_a_network_delay_in_the_verdict() -> None:
    """A delay may be time lost in the service's own work (rule delays): the verdict names a
    delay, not the network."""
    from rca.model import FaultType

    trace = demo_trace()
    top = trace.hypotheses[0]
    (service, _, confidence, hid), *rest = trace.decision.ranking
    delayed = replace(
        trace,
        hypotheses=(replace(top, fault_type=FaultType.NETWORK_DELAY), *trace.hypotheses[1:]),
        decision=replace(trace.decision, ranking=((service, "network_delay", confidence, hid), *rest)),
    )
    a = audit(delayed, AuditContext(nx.DiGraph()))
    v = Verdict("inv-1", "Frontend", Window(0, 600), delayed, a)
    words = blockkit.as_text(render.verdict(v)[1]) + render.headline(v)
    assert "delay (on its calls in or in its own work)" in words and "network delay" not in words


def test_the_headline_says_likely_only_where_earned_and_names_leaders_the_evidence_cannot_part() -> None:
    from rca.calibration import shipped

    trace = demo_trace()
    a = audit(trace, AuditContext(nx.DiGraph()))
    v = Verdict("inv-1", "Frontend", Window(0, 600), trace, a)
    first, second = trace.hypotheses[0], trace.hypotheses[1]
    lead = trace.decision.ranking[0][0]
    if v.likely:  # the demo's first place is clear: said as likely, with its probability, and checked
        head = render.headline(v)
        assert head.startswith(f"Likely cause: {lead}") and f"{v.probability:.0%}" in head
        assert v.probability >= shipped().likely
    # the same verdict whose two leaders the evidence scores the same: never "likely", both named
    level = replace(trace, hypotheses=(first, replace(second, value=first.value), *trace.hypotheses[2:]))
    tie = Verdict("inv-1", "Frontend", Window(0, 600), level, a)
    assert tie.leaders == (first.service, second.service) and not tie.likely
    head = render.headline(tie)
    assert head.startswith(f"Unsure: {first.service} (") and head.endswith(f" or {second.service}")
    words = json.dumps(render.verdict(tie)[1])
    assert "Likely cause" not in words and "✅" not in words and "Run checks" in words


def test_run_checks_ends_with_a_conclusion_even_when_every_candidate_passes_its_check() -> None:
    from rca.hypotheses import Hypothesis, HypothesisId
    from rca.model import FaultType
    from rca.star.verify import TestOutcome, VerificationRun
    from rca.trace import VerificationTest

    hyps = tuple(
        Hypothesis(HypothesisId(f"h-{i}"), s, FaultType.CPU, 0.5 - i / 10, (), "") for i, s in enumerate(["a", "b"])
    )

    def check(i: int, observed: str) -> TestOutcome:
        h = HypothesisId(f"h-{i}")
        return TestOutcome(
            VerificationTest(f"t{i}", h, "metrics", hyps[i].service, "q", "cpu", ((h, "anomalous"),), ""),
            observed,
            5.0,
            "",
        )

    both = replies.conclusion(VerificationRun((check(0, "anomalous"), check(1, "anomalous")), hyps, hyps))
    assert "cannot tell" in both and "a or b" in both
    one = replies.conclusion(VerificationRun((check(0, "anomalous"), check(1, "normal")), hyps, hyps))
    assert one.startswith("the checks point to *a*") and "b did not" in one
    none = replies.conclusion(VerificationRun((check(0, "normal"), check(1, "normal")), hyps, hyps))
    assert "none of them is confirmed" in none
    assert "no check could run" in replies.conclusion(VerificationRun((), hyps, hyps))


def test_where_the_lead_changed_its_rollback_is_said_beside_the_change_once(tmp_path: Path) -> None:
    trace = demo_trace()
    verdict = Verdict("inv-1", "Frontend", Window(0, 600), trace, audit(trace, AuditContext(nx.DiGraph())))
    lead, other = trace.decision.ranking[0][0], trace.decision.ranking[1][0]
    book = tmp_path / "runbooks.yaml"
    book.write_text(f"{lead}:\n  rollback: kubectl rollout undo deploy/`x`\n")
    runbook = load_runbooks(book).of(lead)

    def sections(changed: str) -> dict[str, str]:
        change = Change(changed, ChangeKind.DEPLOY, 300.0, "1.4.2", "1.4.3")
        _, blocks = render.verdict(verdict, runbook=runbook, changes=[change])
        texts = [b["text"]["text"] for b in blocks if b["type"] == "section"]
        return {t.split("*")[1]: t for t in texts if t.startswith("*")}

    lead_changed = sections(lead)
    assert "Roll back: `kubectl rollout undo deploy/'x'`" in lead_changed["What changed"]
    assert "Roll back" not in lead_changed["Next"]
    other_changed = sections(other)  # another suspect's change: the lead's rollback stays a next step
    assert "Roll back" not in other_changed["What changed"] and "Roll back" in other_changed["Next"]


def test_a_window_opened_back_is_said_on_its_own_line_not_as_missing_data() -> None:
    trace = demo_trace()
    ep = trace.evidence_package
    late = opened_back_note("Frontend", Window(1200.0, 2100.0))
    trace = replace(trace, evidence_package=replace(ep, missing=(late, "traces: absent")))
    words = _words(
        render.verdict(
            Verdict("inv-1", "Frontend", Window(1200, 2100), trace, audit(trace, AuditContext(nx.DiGraph())))
        )[1]
    )
    assert "🕰️ Asked late: Frontend was already degraded when the window opened at 1970-01-01T00:20:00Z" in words
    assert "read from 1970-01-01T00:05:00Z" in words
    partial = next(line for line in words.splitlines() if "Partial result" in line)
    assert "traces: absent" in partial and "asked late" not in partial.lower()
