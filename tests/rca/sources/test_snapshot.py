import asyncio
import json
from pathlib import Path

import pytest

from bot.config import LiveConfig
from bot.telemetry import telemetry_from
from rca.engines import build_engine
from rca.errors import InputError, MalformedFile
from rca.model import Incident
from rca.sources.datasets import find_recordings
from rca.sources.snapshot import MANIFEST, load_snapshot, write_snapshot
from rca.timestamps import parse_timestamp

AT = parse_timestamp("2023-01-29T13:36:00Z")


def incident_of(data: Path, window: str = "10m") -> Incident:
    async def go() -> Incident:
        t = telemetry_from(data=data, now=AT, live=LiveConfig())
        return await t.incident("Frontend", await t.window(window))

    return asyncio.run(go())


def top(incident: Incident) -> str:
    return asyncio.run(build_engine("lats").investigate(incident)).ranking[0].service


def test_a_snapshot_replays_the_investigation(tmp_path: Path, nezha_slice: Path) -> None:
    original = incident_of(nezha_slice)
    out = asyncio.run(write_snapshot(original, tmp_path / "snap", origin={"data": "demo"}, created=AT))
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["symptom"] == "Frontend" and manifest["window"]["end"] == "2023-01-29T13:36:00Z"
    replayed = load_snapshot(out)
    assert replayed.window == original.window and replayed.symptom == "Frontend"
    assert replayed.sources.modalities() == original.sources.modalities()
    assert top(replayed) == top(original) == "ts-contacts-service"
    assert [r.symptom for r in find_recordings(tmp_path)] == ["Frontend"]  # found under a parent folder too


def test_snapshot_refusals(tmp_path: Path, nezha_slice: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(InputError, match="not empty"):
        asyncio.run(write_snapshot(incident_of(nezha_slice), tmp_path / "full", origin={}, created=AT))
    with pytest.raises(InputError, match="one UTC day"):
        asyncio.run(
            write_snapshot(
                incident_of(nezha_slice, "2023-01-29T00:10:00Z/2023-01-29T00:20:00Z"),
                tmp_path / "midnight",
                origin={},
                created=AT,
            )
        )
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / MANIFEST).write_text("{not json")
    with pytest.raises(MalformedFile, match="snapshot manifest"):
        load_snapshot(tmp_path / "bad")


def test_a_recording_across_midnight_keeps_each_days_logs_and_spans(tmp_path: Path) -> None:
    from rca.model import Sources
    from rca.sources.memory import InMemoryLogs, InMemoryTraces
    from rca.sources.snapshot import write_days
    from rca.telemetry import LogRecord, Severity, Span, Window

    midnight = parse_timestamp("2026-12-04T00:00:00Z")
    times = [midnight - 90, midnight - 30, midnight + 30, midnight + 90]
    logs = InMemoryLogs(LogRecord(t, "cart", Severity.INFO, f"line {i}") for i, t in enumerate(times))
    spans = InMemoryTraces(Span(f"t{i}", f"s{i}", "", "cart", "GET /", t, t + 0.1) for i, t in enumerate(times))
    days = asyncio.run(
        write_days(Sources(logs=logs, traces=spans), Window(midnight - 120, midnight + 120), tmp_path, symptom="cart")
    )
    assert [d.name for d in days] == ["2026-12-03", "2026-12-04"]
    for day, minutes in zip(days, (["23_58", "23_59"], ["00_00", "00_01"]), strict=True):
        assert sorted(p.name[:5] for p in (day / "log").iterdir()) == minutes
        assert sorted(p.name[:5] for p in (day / "trace").iterdir()) == minutes
