"""bench.memory measures a command's own peak, not the pages of the process that started it."""

from __future__ import annotations

import sys

from bench.memory import whole_process


def test_a_child_started_from_a_large_process_is_measured_alone() -> None:
    held = bytearray(300 * 2**20)  # this process holds 300 MiB when it starts the child
    small, _ = whole_process([sys.executable, "-c", "pass"])
    large, _ = whole_process([sys.executable, "-c", "x = bytearray(200 * 2**20); x[::4096] = b'1' * len(x[::4096])"])
    assert held and small < 100 and large - small > 150  # the child's own 200 MiB, none of the 300
