"""The live thread: a few lines per agent turn, in words an engineer reads, whatever the names."""

import asyncio
from pathlib import Path

from bot.desk import Desk
from bot.narration import Narrator
from bot.telemetry import ReplayTelemetry
from rca.search.events import (
    ActionTaken,
    EvidenceFound,
    Finished,
    Handoff,
    HypothesesRanked,
    IterationStarted,
)
from rca.timestamps import parse_timestamp
from storage.investigations import Store

ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_investigation_streams_at_most_forty_lines(tmp_path: Path) -> None:
    async def scenario() -> list[str]:
        desk = Desk(
            telemetry=ReplayTelemetry(ROOT / "bot" / "demo", now=parse_timestamp("2023-01-29T13:36:00Z")),
            store=Store(tmp_path / "bot.db"),
            workers=1,
        )
        run = await desk.open("Frontend", "10m", channel="C1", user="U1")
        narrator, lines = Narrator(), []
        async for event in desk.investigate(run):
            lines += narrator.lines(event)
        desk.close()
        return lines

    lines = asyncio.run(scenario())
    assert 3 <= len(lines) <= 40
    assert lines[-1].startswith("✅") and any("now suspects" in line for line in lines)
    assert not any("robust z" in line or "metrics{" in line for line in lines)  # no internals, no raw queries


def test_one_line_per_agent_turn_and_one_when_the_lead_changes() -> None:
    n = Narrator()
    events = [
        IterationStarted("metric", 1, 1, 0, 0.0),  # type: ignore[arg-type]
        *[
            ActionTaken("metric", "metrics", f"metrics{{entity=svc-{i}, metric=*}}[w]", "ok", 0.5)  # type: ignore[arg-type]
            for i in range(6)
        ],
        EvidenceFound("metric", "e-1", "svc-4", "cpu rose to 9 (normal 1, robust z 12.0)", 12.0),  # type: ignore[arg-type]
        EvidenceFound("metric", "e-2", "svc-2", "mem rose (robust z 2.0)", 2.0),  # type: ignore[arg-type]
        HypothesesRanked("metric", (("svc-4", "cpu", 0.7), ("svc-2", "memory", 0.2)), 0.8, 0.8, 0.5),  # type: ignore[arg-type]
        IterationStarted("metric", 2, 2, 1, 0.0),  # type: ignore[arg-type]
        ActionTaken("metric", "metrics", "metrics{entity=svc-9, metric=*}[w]", "ok", 0.5),  # type: ignore[arg-type]
        HypothesesRanked("metric", (("svc-4", "cpu", 0.8),), 0.8, 0.8, 0.5),  # type: ignore[arg-type]  # same lead
        Handoff("metric", "log", "hypothesis confirmed (r 0.9, c_comp 0.5)", "..."),  # type: ignore[arg-type]
        Finished("svc-4 (cpu) explains it", {}),
    ]
    lines = [line for e in events for line in n.lines(e)]
    assert (
        lines[0].startswith("📈 metrics read svc-0, svc-1, svc-2 (+3 more)")
        and "*svc-4*: cpu rose to 9 (normal 1)" in lines[0]
    )
    assert lines[1] == "⚖️ now suspects *svc-4* (cpu), then svc-2"
    assert lines[2].startswith("📈 metrics read svc-9 — nothing abnormal")
    assert lines[3] == "🔀 📈 metrics hands over to 📜 logs: hypothesis confirmed"
    assert lines[4].startswith("✅") and len(lines) == 5
