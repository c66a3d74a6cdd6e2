import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import networkx as nx

from bot import render
from bot.desk import Verdict
from handlers.ids import REPAIR, VERIFY
from rca.model import Window
from rca.star.audit import audit
from rca.star.criteria import AuditContext
from rca.trace import from_json

ROOT = Path(__file__).resolve().parents[2]


def demo_trace():  # type: ignore[no-untyped-def]
    out = subprocess.run([sys.executable, "-m", "bot.cli", "investigate", "Frontend", "10m", "--data",
                          str(ROOT / "bot" / "demo"), "--at", "2023-01-29T13:36:00Z", "--json"],
                         capture_output=True, text=True, check=True, cwd=ROOT)  # fmt: skip
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
