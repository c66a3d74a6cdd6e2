"""bench.visible ranks services by how far their metrics moved after the labelled start."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bench.visible import movers
from rca.sources.datasets import find_cases


def test_movers_are_ranked_largest_first_and_name_real_services(nezha_slice: Path) -> None:
    (case,) = find_cases(nezha_slice)
    ranked = asyncio.run(movers(case))
    assert ranked, "the slice's metrics around its labelled start are read"
    scores = [z for z, _, _ in ranked]
    assert scores == sorted(scores, reverse=True)
    assert len({e for _, e, _ in ranked}) == len(ranked)  # one line per service
    assert case.label.service in {e for _, e, _ in ranked}
