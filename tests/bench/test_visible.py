"""bench.visible ranks services by how far their metrics moved after the labelled start, and counts
the calls a stormed service sent per request."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bench.visible import calls_per_request, movers
from rca.model import CaseId, FaultType, Incident, IncidentCase, Label, Sources
from rca.sources.datasets import find_cases
from rca.sources.memory import InMemoryTraces
from rca.telemetry import Span, Window


def test_movers_are_ranked_largest_first_and_name_real_services(nezha_slice: Path) -> None:
    (case,) = find_cases(nezha_slice)
    ranked = asyncio.run(movers(case))
    assert ranked, "the slice's metrics around its labelled start are read"
    scores = [z for z, _, _ in ranked]
    assert scores == sorted(scores, reverse=True)
    assert len({e for _, e, _ in ranked}) == len(ranked)  # one line per service
    assert case.label.service in {e for _, e, _ in ranked}


def _served(t0: float, seconds: int, tries: int) -> list[Span]:
    """One request into a each second; a's call to b sent `tries` times (a client span each,
    b's server span under it)."""
    out = []
    for i in range(seconds):
        t, tid = t0 + i, f"t{t0}-{i}"
        out.append(Span(tid, "r", "", "a", "GET /", t, t + 0.2))
        for k in range(tries):
            at = t + 0.01 + 0.06 * k
            out += [
                Span(tid, f"c{k}", "r", "a", "GET /work", at, at + 0.05),
                Span(tid, f"s{k}", f"c{k}", "b", "GET /work", at, at + 0.04),
            ]
    return out


def test_calls_per_request_tell_a_retry_storm_that_stormed_from_one_that_did_not() -> None:
    """a's requests send one call to b each before the fault, and three (a storm) or one (a
    storm that cut no call) after it; a's own client spans are not calls into another service."""
    start = 1000.0

    def case(tries: int) -> IncidentCase:
        traces = InMemoryTraces(_served(start - 300, 300, 1) + _served(start, 120, tries))
        incident = Incident(CaseId("storm"), "test", "a", Window(start - 300, start + 120), Sources(traces=traces))
        return IncidentCase(incident, Label("a", FaultType.OVERLOAD, "retry_storm_overload", start))

    assert asyncio.run(calls_per_request(case(3))) == (1.0, 3.0)
    assert asyncio.run(calls_per_request(case(1))) == (1.0, 1.0)
