"""Integration: a three-service shop runs as real processes under Debian's Prometheus; a CPU
hog injected into one service is recorded, labelled apart from the telemetry, read back by the
dataset adapter like any publisher's recording, and named by the engine. Nothing of the run
is left behind."""

from __future__ import annotations

import asyncio
import socket
import subprocess
from pathlib import Path

import pytest

from lab.faults import PlannedFault
from lab.record import record_shop, running
from lab.shop import draw_shop
from rca.engines import build_engine
from rca.model import FaultType
from rca.sources.datasets import find_cases
from tests.conftest import monitoring


@pytest.fixture(scope="module")
def prometheus() -> None:
    monitoring()


def _lab_processes() -> list[str]:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if "lab.service" in line and "ps -eo" not in line]


def test_a_recorded_cpu_hog_is_labelled_read_back_and_named(prometheus: None, tmp_path: Path) -> None:
    shop = draw_shop(7, size=3)
    victim = next(s.name for s in shop.services if s.name != shop.entry)
    plan = (PlannedFault(0.0, 75.0, victim, "cpu"),)
    lines: list[str] = []
    before = _lab_processes()
    out = record_shop(shop, plan, tmp_path, warmup=60.0, tail=20.0, rate=8.0, progress=lines.append)
    assert out == tmp_path / "lab-7" and any("fault 1/1 cpu" in line for line in lines)
    # nothing of the run is left: no service process, no raw run folder, no Prometheus data
    assert _lab_processes() == before
    assert not any((tmp_path / ".runs").iterdir())
    (case,) = find_cases(out)
    assert case.label.service == victim and case.label.fault_type is FaultType.CPU
    assert case.incident.symptom == shop.entry
    assert {"metrics", "logs", "traces"} <= {str(m) for m, ok in case.incident.sources.modalities().items() if ok}
    diagnosis = asyncio.run(build_engine("lats").investigate(case.incident))
    assert diagnosis.ranking[0].service == victim


def test_ports_are_free_again_after_the_run(prometheus: None, tmp_path: Path) -> None:
    shop = draw_shop(8, size=2)
    with running(shop, tmp_path / "run") as lab:
        ports = [*lab.ports.values(), int(lab.prometheus.rsplit(":", 1)[1])]
    for port in ports:
        with socket.socket() as s:  # as a server binds: connections closing (TIME_WAIT) do not count
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))  # raises if anything still listens there
            s.listen()
    assert not (tmp_path / "run" / "tsdb").exists()
