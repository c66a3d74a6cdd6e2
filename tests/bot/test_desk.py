import asyncio
import time
from pathlib import Path

import pytest

from bot.console import Console
from bot.desk import Desk
from bot.telemetry import ReplayTelemetry
from bot.verdicts import AlreadyRunning
from rca.errors import InputError
from rca.search.events import Finished
from rca.timestamps import parse_timestamp
from storage.investigations import Store

AT = parse_timestamp("2023-01-29T13:36:00Z")


def desk_on(tmp_path: Path, data: Path) -> Desk:
    return Desk(telemetry=ReplayTelemetry(data, now=AT), store=Store(tmp_path / "bot.db"), workers=1)


def test_one_run_per_service_and_channel(tmp_path: Path, nezha_slice: Path) -> None:
    async def scenario() -> None:
        desk = desk_on(tmp_path, nezha_slice)
        first = await desk.open("Frontend", "10m", channel="C1", user="U1")
        with pytest.raises(AlreadyRunning) as err:
            await desk.open("Frontend", "5m", channel="C1", user="U2")
        assert err.value.run == first
        other = await desk.open("Frontend", "10m", channel="C2", user="U1")  # another channel may
        for run in (first, other):
            events = [e async for e in desk.investigate(run)]
            assert isinstance(events[-1], Finished)
        assert desk.running() == []
        assert (await desk.open("Frontend", "10m", channel="C1", user="U1")).id != first.id  # free again
        desk.close()

    asyncio.run(scenario())


def test_bad_requests_start_nothing(tmp_path: Path, nezha_slice: Path) -> None:
    async def scenario() -> None:
        desk = desk_on(tmp_path, nezha_slice)
        with pytest.raises(InputError, match="Did you mean Frontend"):
            await desk.open("frontend", "10m", channel="C1", user="U1")
        with pytest.raises(InputError, match="bad window"):
            await desk.open("Frontend", "ten minutes", channel="C1", user="U1")
        with pytest.raises(InputError, match="not a service name"):
            await desk.open("Front end{}", "10m", channel="C1", user="U1")
        assert desk.store.between(0, 1e12) == []
        with pytest.raises(InputError, match="no investigation"):
            await desk.casebook.verdict("inv-nope")
        desk.close()

    asyncio.run(scenario())


def test_console_session(tmp_path: Path, nezha_slice: Path) -> None:
    lines = iter(
        [
            "/rca Frontend 10m",
            "why not <runner-up>?",
            "chart",
            "verify",
            "repair",
            "correct",
            "/rca summary",
            "/rca Frontnd",
            "quit",
        ]
    )
    out: list[str] = []
    asked: list[str] = []

    async def scenario() -> None:
        desk = desk_on(tmp_path, nezha_slice)

        async def read() -> str | None:
            line = next(lines, None)
            if line is not None and "<runner-up>" in line:  # the verdict's second service, whichever it is
                (row,) = desk.store.between(0, time.time() + 1)
                asked.append(row.trace["hypothesis_set"]["hypotheses"][1]["service"])
                line = line.replace("<runner-up>", asked[0])
            return line

        await Console(desk, read=read, write=out.append, charts=tmp_path).run()
        desk.close()

    asyncio.run(scenario())
    text = "\n".join(out)
    assert (
        "[supervisor] decision" in text
        and "Verdict for Frontend" in text
        and "Reasoning " in text
        and ("Likely cause" in text or "Unsure: " in text)  # the headline, as sure as calibration lets it be
    )
    assert asked and f"{asked[0]} is ranked #2" in text
    assert "Re-ranked:" in text and "Repair: S" in text and "Marked correct." in text
    assert "1 investigation(s) in the last day" in text and "Did you mean Frontend" in text
    assert list(tmp_path.glob("rcabot-*.png"))


def test_a_verdict_read_back_after_a_restart_keeps_its_stored_audit_and_scans_nothing_again(
    tmp_path: Path, nezha_slice: Path
) -> None:
    async def scenario() -> None:
        desk = desk_on(tmp_path, nezha_slice)
        run = await desk.open("Frontend", "10m", channel="C1", user="U1")
        [e async for e in desk.investigate(run)]
        before = await desk.casebook.verdict(run.id)
        desk.close()
        restarted = desk_on(tmp_path, nezha_slice)  # another process over the same database
        after = await restarted.casebook.verdict(run.id)
        assert after.audit == before.audit and after.trace == before.trace
        assert restarted.casebook._contexts == {}  # the audit was read back, not computed from a new scan
        restarted.close()

    asyncio.run(scenario())


def test_marked_verdicts_teach_the_next_verdicts_probability_and_the_verdict_says_so(
    tmp_path: Path, nezha_slice: Path
) -> None:
    from bot import render
    from rca.calibration import features, shipped

    async def scenario() -> None:
        desk = desk_on(tmp_path, nezha_slice)
        ids = []
        for channel in ("C1", "C2", "C3"):
            run = await desk.open("Frontend", "10m", channel=channel, user="U1")
            [e async for e in desk.investigate(run)]
            ids.append(run.id)
        first = await desk.casebook.verdict(ids[0])
        as_shipped = shipped().probability(
            features(
                [c for _, _, c, _ in first.trace.decision.ranking],
                sum(first.trace.evidence_package.modalities.values()),
            )
        )
        assert first.calibrated.marks == 0 and first.probability == pytest.approx(as_shipped)
        await desk.followups.feedback(ids[0], user="U1", correct=False)
        await desk.followups.feedback(ids[1], user="U2", correct=False)
        taught = await desk.casebook.verdict(ids[2])
        assert taught.calibrated.marks == 2  # the two before it, whatever their channel
        assert taught.probability < first.probability  # same evidence, marked wrong twice: less sure
        _, blocks = render.verdict(taught)
        assert "learnt from 2 earlier verdicts" in str(blocks)
        again = await desk.casebook.verdict(ids[0])
        assert again.calibrated.marks == 0  # its own mark, and later ones, teach it nothing
        desk.close()

    asyncio.run(scenario())
