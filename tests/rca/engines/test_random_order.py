"""The random read order baseline: bounded by its budget, repeatable, and exhaustive without one."""

import asyncio

from rca.engines import build_engine
from rca.evidence.toolbox import Toolbox
from rca.hypotheses import score_hypotheses
from rca.sources.datasets import find_cases
from rca.sources.protocols import LogQuery
from rca.telemetry import SpanTable
from tests.conftest import NEZHA_SLICE


def test_it_spends_no_more_than_its_budget_and_repeats_itself() -> None:
    (case,) = find_cases(NEZHA_SLICE)
    small = build_engine("random", read_budget=4)
    first = asyncio.run(small.investigate(case.incident))
    again = asyncio.run(small.investigate(case.incident))
    assert first.cost.reads == 4
    assert [c.service for c in first.ranking] == [c.service for c in again.ranking]
    assert any("read budget of 4 spent" in m for m in first.missing)
    other = asyncio.run(build_engine("random", read_budget=4, seed=7).investigate(case.incident))
    assert other.engine == "random@seed7" and other.cost.reads == 4


def test_without_a_budget_it_reads_everything_and_ranks_as_exhaustive_scoring() -> None:
    (case,) = find_cases(NEZHA_SLICE)

    async def exhaustive() -> list[str]:
        box = Toolbox(case.incident)
        evidence = [
            ev
            for e in await box.entities()
            for tool in (box.metrics, box.logs, box.spans)
            for ev in (await tool(e)).evidence
        ]
        ranked = score_hypotheses(
            evidence,
            graph=await box.topology(),
            window=case.incident.window,
            symptom=case.incident.symptom,
            modalities=box.modalities(),
            edge_share=box.edge_share,
            alert_time=case.incident.alert_time,
        )
        return [h.service for h in ranked]

    async def held() -> int:
        """Every service's metrics, and its logs and spans where the backends hold any."""
        box = Toolbox(case.incident)
        entities = await box.entities()
        window = case.incident.window
        logged = {r.entity for r in await case.incident.sources.logs.records(LogQuery(window))}  # type: ignore[union-attr]
        ref, now = await box._span_reads()
        traced = set(SpanTable.of(ref).entity) | set(SpanTable.of(now).entity)
        return sum(1 + (e in logged) + (e in traced) for e in entities)

    d = asyncio.run(build_engine("random").investigate(case.incident))
    assert d.cost.reads == asyncio.run(held())
    assert [c.service for c in d.ranking] == asyncio.run(exhaustive())
