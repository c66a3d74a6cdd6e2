"""bench.cut_calls counts a labelled service's calls out, before and during its fault, from a
lab recording's own spans."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bench.cut_calls import calls_out, faults
from rca.telemetry import Span, SpanStatus, SpanTable

LAB = Path(__file__).resolve().parents[1] / "data" / "lab-0"


def test_a_service_s_calls_out_are_its_client_spans_with_a_remote_child_and_their_failures() -> None:
    spans = SpanTable.of(
        [
            Span("t1", "a", "", "front", "GET /", 0.0, 1.0),
            Span("t1", "c1", "a", "front", "GET /work", 0.1, 0.2, SpanStatus.ERROR),  # failed, cut short
            Span("t1", "s1", "c1", "b", "GET /work", 0.11, 0.5),
            Span("t1", "c2", "a", "front", "GET /work", 0.3, 0.4),
            Span("t1", "s2", "c2", "b", "GET /work", 0.31, 0.33),
            Span("t1", "l1", "a", "front", "local step", 0.5, 0.6),  # no remote child: no call out
        ]
    )
    found = calls_out(spans, "front")
    assert (found.calls, found.failed) == (2, 1)
    assert found.p50_ms == 205.0  # the callee's two answers, 390 and 20 ms
    assert calls_out(spans, "b").calls == 0


def test_every_labelled_fault_of_a_recording_is_counted_before_and_during() -> None:
    rows = asyncio.run(faults(LAB, frozenset()))
    assert len(rows) == 8
    pool = [r for r in rows if r[2] == "pool_exhaustion_delay"]
    assert len(pool) == 1 and pool[0][4].calls > 0  # an exhausted pool still calls out, slowly
    assert all(0 <= r[3].failed <= r[3].calls and 0 <= r[4].failed <= r[4].calls for r in rows)
    assert asyncio.run(faults(LAB, frozenset({"retry_storm_overload"}))) == []
