"""Integration: a three-service shop runs as real processes under Debian's Prometheus; a CPU
hog injected into one service is recorded, labelled apart from the telemetry, and read back by
the dataset adapter like any publisher's recording, its CPU risen where it was injected and
nowhere else. Nothing of the run is left behind. (That the bot then names the service is the
live test's claim, tests/lab/test_live.py.)"""

from __future__ import annotations

import asyncio
import socket
import subprocess
from pathlib import Path

import numpy as np
import pytest

from lab.faults import PlannedFault
from lab.record import record_shop, running
from lab.shop import draw_shop
from rca.model import FaultType, Incident
from rca.sources.datasets import find_cases
from rca.sources.protocols import MetricQuery
from rca.telemetry import Window
from tests.conftest import monitoring


@pytest.fixture(scope="module")
def prometheus() -> None:
    monitoring()


def _lab_processes() -> list[str]:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
    return [
        line for line in out.splitlines() if ("lab.service" in line or "lab.relay" in line) and "ps -eo" not in line
    ]


def test_a_recorded_cpu_hog_is_labelled_read_back_and_named(prometheus: None, tmp_path: Path) -> None:
    shop = draw_shop(7, size=3)
    victim = next(s.name for s in shop.services if s.name != shop.entry)
    plan = (PlannedFault(0.0, 60.0, victim, "cpu"),)
    lines: list[str] = []
    before = _lab_processes()
    out = record_shop(shop, plan, tmp_path, warmup=45.0, tail=10.0, rate=8.0, progress=lines.append)
    assert out == tmp_path / "lab-7" and any("fault 1/1 cpu" in line for line in lines)
    assert any("of the warm-up kept as its fault-free stretch" in line for line in lines)  # lab.normal
    # nothing of the run is left: no service process, no raw run folder, no Prometheus data
    assert _lab_processes() == before
    assert not any((tmp_path / ".runs").iterdir())
    (case,) = find_cases(out)
    assert case.label.service == victim and case.label.fault_type is FaultType.CPU
    assert case.incident.symptom == shop.entry
    assert {"metrics", "logs", "traces"} <= {str(m) for m, ok in case.incident.sources.modalities().items() if ok}
    assert case.label.start is not None
    rise = asyncio.run(_cpu_rise(case.incident, case.label.start))
    assert set(rise) == {s.name for s in shop.services}
    assert max(rise, key=lambda name: rise[name]) == victim and rise[victim] > 10  # percentage points of a core


async def _cpu_rise(incident: Incident, start: float) -> dict[str, float]:
    """Per service, its median CPU over the fault's first minute less that of the half minute before."""
    assert incident.sources.metrics is not None
    series = await incident.sources.metrics.series(
        MetricQuery(Window(start - 45, start + 60), (), ("CpuUsageRate(%)",))
    )
    out = {}
    for s in series:
        before = s.values[(s.timestamps < start) & (s.timestamps >= start - 30)]
        during = s.values[s.timestamps >= start + 30]  # the rate looks back 30 s
        out[s.entity] = float(np.nanmedian(during) - np.nanmedian(before))
    return out


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
    with pytest.raises(RuntimeError, match="save failed"), running(shop, tmp_path / "failed"):
        raise RuntimeError("save failed")
    assert (tmp_path / "failed" / "tsdb").is_dir()  # a failed run keeps its metrics to write out again


def test_a_recording_stopped_by_sigterm_leaves_no_process_behind(prometheus: None, tmp_path: Path) -> None:
    """`rcabot lab record` told to stop (SIGTERM, as a service manager or CI does; SIGINT is the
    same) stops every shop's services and Prometheus, says so, and exits 130: its processes
    run in sessions of their own, so nothing else would stop them."""
    import os
    import signal
    import sys
    import time

    cmd = [
        sys.executable,
        "-m",
        "bot.cli",
        "lab",
        "record",
        "--out",
        str(tmp_path),
        "--seeds",
        "7",
        "--faults",
        "1",
        "--warmup",
        "10m",
        "--parallel",
        "1",
    ]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2])
    assert proc.stderr is not None
    deadline = time.monotonic() + 120
    lines = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        lines.append(line)
        if "services up" in line or not line:
            break
    assert any("services up" in line for line in lines), lines

    def of_this_run() -> list[str]:  # its services and its Prometheus (whose files lie under tmp_path)
        out = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True, check=True).stdout
        return [line for line in out.splitlines() if str(tmp_path / ".runs") in line]

    assert any("lab.service" in p for p in of_this_run()) and any("prometheus" in p for p in of_this_run())
    proc.send_signal(signal.SIGTERM)
    rest = proc.communicate(timeout=60)[1]
    assert proc.returncode == 130, rest
    assert "stopped by a signal" in rest
    assert of_this_run() == []
    assert os.path.isdir(tmp_path / ".runs" / "lab-7")  # the raw run is kept, as on any failure


def test_a_faulty_release_is_deployed_rolled_back_and_journalled(prometheus: None, tmp_path: Path) -> None:
    """A deploy fault restarts the service as a new version carrying its defect, and rolls it
    back at its end; a harmless deploy restarts a bystander. Each change is in the recording's
    changes.jsonl as a pipeline would post it, the label types as a release, and the defect
    shows in the telemetry (the errors it logs), nothing written for it."""
    import json

    from lab.faults import PlannedChange

    shop = draw_shop(7, size=3)
    victim, other = (s.name for s in shop.services if s.name != shop.entry)
    plan = (PlannedFault(0.0, 40.0, victim, "deploy", "error"),)
    before = _lab_processes()
    out = record_shop(
        shop, plan, tmp_path, warmup=30.0, tail=10.0, rate=8.0, progress=lambda _: None,
        bystanders=(PlannedChange(15.0, other),),
    )  # fmt: skip
    assert _lab_processes() == before  # the redeployed processes are stopped too
    (case,) = find_cases(out)
    assert case.label.service == victim and case.label.fault_type is FaultType.RELEASE
    (changes_file,) = out.glob("rca_data/*/changes.jsonl")
    changes = [json.loads(line) for line in changes_file.read_text().splitlines()]
    assert [(c["service"], c["kind"], c["before"], c["after"]) for c in changes] == [
        (victim, "deploy", "1.0.0", "1.0.1"),
        (other, "deploy", "1.0.0", "1.0.1"),
        (victim, "rollback", "1.0.1", "1.0.0"),
    ]
    assert case.label.start is not None and abs(_epoch(changes[0]["time"]) - case.label.start) < 1.0
    assert [(c.service, c.kind.value) for c in case.incident.changes] == [(c["service"], c["kind"]) for c in changes]
    errors = [
        line
        for path in out.glob("rca_data/*/log/*.csv")
        for line in path.read_text().splitlines()
        if victim in line and "quota exceeded" in line
    ]
    assert errors  # the faulty version refused requests, and said so in its own log


def _epoch(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def _served(lab: object, service: str) -> float:
    """The requests the service has answered, from its own metrics."""
    import re
    import urllib.request

    with urllib.request.urlopen(lab.url(service, "/metrics"), timeout=5) as r:  # type: ignore[attr-defined]
        text = r.read().decode()
    return sum(
        float(m) for m in re.findall(r'lab_http_server_request_duration_seconds_count\{code="\d+"\} (\S+)', text)
    )


def _fault(lab: object, service: str, kind: str) -> None:
    """Starts a fault of the kind in the service, for two minutes."""
    import json
    import urllib.request

    body = json.dumps({"kind": kind, "seconds": 120}).encode()
    req = urllib.request.Request(lab.url(service, "/admin/fault"), data=body, method="POST")  # type: ignore[attr-defined]
    with urllib.request.urlopen(req, timeout=5) as r:
        assert r.status == 200


def test_a_retry_storm_sends_each_slow_call_again_and_the_callee_serves_them_all(
    prometheus: None, tmp_path: Path
) -> None:
    """Under a retry storm begun before any call was answered a caller gives up on a call after
    50 ms and sends it again, up to three more times: a callee slowed past that serves four
    requests for each of the caller's."""
    import time
    import urllib.error
    import urllib.request

    shop = draw_shop(8, size=2)
    callee = next(s.name for s in shop.services if s.name != shop.entry)
    with running(shop, tmp_path / "run") as lab:
        _fault(lab, callee, "latency")  # every request held 0.15-0.45 s: past the storm's 50 ms
        _fault(lab, shop.entry, "retry")
        before = _served(lab, callee), _served(lab, shop.entry)
        for item in range(5):
            with pytest.raises(urllib.error.HTTPError, match="502"):  # every try given up on: a bad gateway
                urllib.request.urlopen(lab.url(shop.entry) + f"?item={item}", timeout=10)
        time.sleep(1.0)  # the requests given up on finish on the callee's side
        after = _served(lab, callee), _served(lab, shop.entry)
    assert after[1] - before[1] == 5
    assert after[0] - before[0] == 20  # four for each of the caller's five


def test_the_way_to_a_store_paused_or_closed_fails_that_service_alone_and_it_recovers(
    prometheus: None, tmp_path: Path
) -> None:
    """Each store-backed service reaches the machine's shared store through a relay of its own:
    pausing it (SIGSTOP) or closing it fails that service's requests, and not another's; once
    it goes again the service reconnects; and no relay outlives the run."""
    import time
    import urllib.error
    import urllib.request

    from lab.shop import draw_shop as shop_of

    shop = next(s for s in (shop_of(seed) for seed in range(50)) if sum(bool(x.store) for x in s.services) >= 2)
    first, second = [s.name for s in shop.services if s.store][:2]
    before = _lab_processes()

    def status(lab: object, service: str) -> int:
        try:
            with urllib.request.urlopen(lab.url(service) + "?item=1", timeout=15) as r:  # type: ignore[attr-defined]
                return r.status
        except urllib.error.HTTPError as exc:
            return exc.code

    def becomes(lab: object, service: str, code: int) -> bool:  # a client notices a closed socket soon, not at once
        for _ in range(20):
            if status(lab, service) == code:
                return True
            time.sleep(0.5)
        return False

    with running(shop, tmp_path / "run") as lab:
        assert status(lab, first) == status(lab, second) == 200
        lab.pause_store(first)
        assert status(lab, first) == 502 and status(lab, second) == 200
        lab.pause_store(first, paused=False)
        assert becomes(lab, first, 200)
        lab.close_store(first)
        assert becomes(lab, first, 502) and status(lab, second) == 200
        lab.close_store(first, closed=False)
        assert becomes(lab, first, 200)
        assert len(_lab_processes()) == len(before) + len(shop.services) + sum(bool(s.store) for s in shop.services)
    assert _lab_processes() == before
