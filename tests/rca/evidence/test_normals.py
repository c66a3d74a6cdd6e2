"""Which normal a series is measured against: its own recent past first, a stretch recorded
apart only where nothing of it was recorded before the window."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np

from rca.evaluation.protocols import Placement, Protocol
from rca.evidence.metrics import metric_shifts, unmatched
from rca.evidence.toolbox import Toolbox
from rca.model import Modality
from rca.sources.datasets import find_cases
from rca.telemetry import Series

T = np.arange(0.0, 1200.0, 60.0)


def _s(entity: str, values: np.ndarray, times: np.ndarray = T) -> Series:
    return Series(entity, "CpuUsage(m)", times, values)


def test_a_series_with_no_recent_past_is_measured_against_the_stretch_recorded_apart() -> None:
    now = [_s("a", np.full(T.size, 50.0)), _s("b", np.full(T.size, 50.0))]  # high from the first point
    lookback = [_s("b", np.array([49.0, 50.0, 51.0, 50.0]), np.arange(-240.0, 0.0, 60.0))]
    apart = [_s("a", 10.0 + np.sin(np.arange(100.0))), _s("b", 10.0 + np.sin(np.arange(100.0)))]
    assert unmatched(lookback, now) == {("a", "CpuUsage(m)", "")}
    shifts = {m.entity: m for m in metric_shifts(lookback, now, apart)}
    assert shifts["a"].score > 10 and shifts["a"].under_way  # against the stretch apart: high all along
    assert shifts["b"].score < 3  # its own recent past says this is its level
    alone = {m.entity: m for m in metric_shifts(lookback, now)}
    assert alone["a"].score < 3  # without the stretch apart, the window's own start is all it has


def test_a_cropped_recording_reads_the_layouts_fault_free_metrics(shared_datasets: Path) -> None:
    case = find_cases(shared_datasets / "nezha-trainticket")[0]
    incident = asyncio.run(Protocol(Placement.CROPPED).place(case))
    normal = incident.normal_for(Modality.METRICS)
    assert normal is not None and normal.fault_free is not None and normal.fault_free.metrics is not None
    box = Toolbox(incident)
    asyncio.run(box.scan("metrics"))
    assert any("measured against the stretch recorded apart" in m for m in box.missing)
