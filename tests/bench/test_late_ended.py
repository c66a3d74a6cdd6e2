"""bench.late_ended counts the late windows that open after their fault ended, from a lab
recording's own labels."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bench.late_ended import count, lengths

LAB = Path(__file__).resolve().parents[1] / "data" / "lab-0"


def test_a_window_that_holds_the_fault_s_start_never_opens_after_it_ended_and_a_late_one_can() -> None:
    assert len(lengths(LAB)) == 8
    assert asyncio.run(count(LAB, "realistic")) == (8, 0)
    placed, ended = asyncio.run(count(LAB, "late"))
    assert placed == 8 and 0 < ended <= placed  # the lab's faults of 2-4 minutes, windows opening 1-10 after
