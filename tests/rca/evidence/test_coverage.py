"""A window asked beyond what the data hold is said plainly, with the part they cover."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rca.evidence.toolbox import Toolbox
from rca.replay import with_window
from rca.sources.datasets import find_cases
from rca.telemetry import Window


def test_a_window_far_larger_than_the_recording_says_what_it_covers(nezha_slice: Path) -> None:
    (case,) = find_cases(nezha_slice)
    end = case.incident.window.end
    wide = Toolbox(with_window(case.incident, Window(end - 99 * 3600, end)))
    asyncio.run(wide.scan("metrics"))
    (said,) = [m for m in wide.missing if m.startswith("metrics cover only")]
    assert "of 5940 min" in said
    fitting = Toolbox(case.incident)
    asyncio.run(fitting.scan("metrics"))
    assert not any(m.startswith("metrics cover only") for m in fitting.missing)
