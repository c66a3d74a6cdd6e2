"""Running a shop and recording its incidents.

`running(shop, workdir)` starts every service as its own process and Debian's Prometheus
scraping them every few seconds, and stops all of it on the way out (no process, port or
file of the run's is left but the recording). `record(...)` drives load through the entry
service, injects the seeded faults, journals each label as it is injected, and at the end
reads the telemetry back the way the bot reads a live system (Prometheus over its HTTP API,
the JSON log files, the OTLP/JSON trace files) into the Nezha layout that `rcabot eval`
reads:

    OUT/lab-<seed>/rca_data/<day>/{metric,log,trace}/...   the telemetry
    OUT/lab-<seed>/rca_data/<day>/lab-fault_list.json      the labels, apart from it
    OUT/lab-<seed>/rca_data/<day>/changes.jsonl            the changes made, as a deploy pipeline posts them
    OUT/lab-<seed>/construct_data/<day>/{log,trace,metric}/...  the warm-up's, a fault-free stretch (lab.normal)
    OUT/lab-<seed>/lab.json                                the shop, its schedule, what was missing

A deploy restarts the service's process as a new version (the old one stopped, the new one
started on the same port, as a single replica is rolled), a config push is posted to the
running process; each is journalled as a change the moment it is made, faulty or harmless.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import aiohttp

from lab.faults import (
    CALL_TIMEOUT,
    CONFIG_TIMEOUT,
    FAMILIES,
    UNDONE_AT_END,
    PlannedChange,
    PlannedFault,
    bystander_changes,
    schedule,
)
from lab.normal import described, keep_normal
from lab.processes import binaries, free_port, wait_ready
from lab.shop import STORE_PORTS, Shop, draw_shop
from rca.changes import Change, ChangeKind, write_changes
from rca.model import Sources
from rca.sources.change_files import CHANGES_FILE
from rca.sources.jaeger import read_otlp
from rca.sources.logfiles import LogDirectory
from rca.sources.prometheus import PrometheusMetrics, load_mapping
from rca.sources.snapshot import write_days
from rca.telemetry import Window

SCRAPE_SECONDS = 5
HEALTHY_SHARE = 0.9  # of the entry's answers before the first fault: below it the shop is broken, not faulty
FIRST_VERSION = "1.0.0"
_PORTS_LOCK = threading.Lock()
_PORTS_GIVEN: set[int] = set()
Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Running:
    shop: Shop
    workdir: Path
    ports: dict[str, int]
    prometheus: str  # its URL
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)  # each service's, now
    versions: dict[str, str] = field(default_factory=dict)  # the version each service runs
    timeouts: dict[str, float] = field(default_factory=dict)  # call timeouts pushed by config
    relays: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)  # each store's way in (lab.relay)

    def url(self, service: str, path: str = "/work") -> str:
        return f"http://127.0.0.1:{self.ports[service]}{path}"

    def pause_store(self, service: str, *, paused: bool = True) -> None:
        """The way to the service's store paused (SIGSTOP: connections open, nothing answered),
        or going again (SIGCONT)."""
        self.relays[service].send_signal(signal.SIGSTOP if paused else signal.SIGCONT)

    def close_store(self, service: str, *, closed: bool = True) -> None:
        """The way to the service's store closed (connections refused and reset), or open again."""
        if closed:
            stop([self.relays[service]])
        else:
            self.relays[service] = _start_relay(self.ports[store_key(service)], self.shop.service(service).store)

    def redeploy(self, service: str, version: str, *, defect: str = "") -> None:
        """The service's process stopped and a new one started on its port as `version` (with
        a built-in `defect`, or none), as a single replica is rolled; returns once it answers."""
        stop([self.processes[service]])
        proc = _start_service(self.workdir, service, version=version, defect=defect)
        self.processes[service] = proc
        _wait_service(service, self.ports[service], proc)
        self.versions[service] = version


def mapping_file() -> Path:
    return Path(str(resources.files("lab") / "prometheus-mapping.yaml"))


def prometheus_config(shop: Shop, ports: dict[str, int], *, extra: str = "") -> str:
    targets = "".join(
        f"      - targets: ['127.0.0.1:{ports[s.name]}']\n        labels: {{service: '{s.name}', pod: '{s.name}-0'}}\n"
        for s in shop.services
    )
    return (
        f"global:\n  scrape_interval: {SCRAPE_SECONDS}s\n  evaluation_interval: {SCRAPE_SECONDS}s\n{extra}"
        f"scrape_configs:\n  - job_name: lab\n    static_configs:\n{targets}"
    )


@contextmanager
def running(shop: Shop, workdir: Path, *, prometheus_extra: str = "") -> Iterator[Running]:
    """The shop's services and a Prometheus scraping them, until the block ends. Its metrics
    (the Prometheus store) go with it, unless the block failed: then they stay in `workdir`
    beside the logs and spans, so a failed save can be written out again."""
    found = binaries()
    if found is None:
        raise RuntimeError("prometheus is not installed: run scripts/ensure-prometheus.sh (as root)")
    workdir.mkdir(parents=True, exist_ok=True)
    ports = {s.name: _port() for s in shop.services}
    ports |= {store_key(s.name): _port() for s in shop.services if s.store}  # each store's relay
    (workdir / "shop.json").write_text(shop.to_json())
    (workdir / "ports.json").write_text(json.dumps(ports))
    (workdir / "proc").mkdir(exist_ok=True)
    services: dict[str, subprocess.Popen[bytes]] = {}
    relays: dict[str, subprocess.Popen[bytes]] = {}
    procs: list[subprocess.Popen[bytes]] = []
    outputs = []
    done = False
    try:
        for s in shop.services:
            if s.store:
                relays[s.name] = _start_relay(ports[store_key(s.name)], s.store)
        for s in shop.services:
            services[s.name] = _start_service(workdir, s.name, version=FIRST_VERSION)
        for s in shop.services:
            _wait_service(s.name, ports[s.name], services[s.name])
        (workdir / "prometheus.yml").write_text(prometheus_config(shop, ports, extra=prometheus_extra))
        port = _port()
        log = (workdir / "proc" / "prometheus.out").open("wb")
        outputs.append(log)
        procs.append(
            subprocess.Popen(
                [
                    found[0],
                    f"--config.file={workdir / 'prometheus.yml'}",
                    f"--storage.tsdb.path={workdir / 'tsdb'}",
                    f"--web.listen-address=127.0.0.1:{port}",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, procs[-1], workdir / "proc" / "prometheus.out")
        yield Running(
            shop, workdir, ports, url, services, {s.name: FIRST_VERSION for s in shop.services}, relays=relays
        )
        done = True
    finally:
        stop([*services.values(), *relays.values(), *procs])  # as they run now, redeployed or not
        for f in outputs:
            f.close()
        if done:
            shutil.rmtree(workdir / "tsdb", ignore_errors=True)
            shutil.rmtree(workdir / "data", ignore_errors=True)


def store_key(service: str) -> str:
    """The ports.json key of the relay to a service's store (lab.service reads it)."""
    return f"{service}:store"


def _start_relay(port: int, store: str, *, seconds: float = 10.0) -> subprocess.Popen[bytes]:
    """A relay on `port` to the machine's `store` (lab.relay), once it accepts connections."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "lab.relay", str(port), str(STORE_PORTS[store])],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the relay to {store} on port {port} exited with {proc.returncode} (port taken?)")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return proc
        time.sleep(0.1)
    stop([proc])
    raise RuntimeError(f"the relay to {store} did not listen on port {port} within {seconds:.0f} s")


def _start_service(workdir: Path, name: str, *, version: str, defect: str = "") -> subprocess.Popen[bytes]:
    """One service's process, its output appended to proc/NAME.out (a redeploy adds to it)."""
    with (workdir / "proc" / f"{name}.out").open("ab") as out:  # the child keeps its own descriptor
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "lab.service",
                str(workdir / "shop.json"),
                name,
                str(workdir / "ports.json"),
                str(workdir),
                "--version",
                version,
                *(("--defect", defect) if defect else ()),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop(procs: list[subprocess.Popen[bytes]], *, grace: float = 15.0) -> None:
    """SIGTERM (services flush their spans), then SIGKILL what is still there after `grace`."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGCONT)  # a paused process cannot act on SIGTERM
            p.terminate()
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def _port() -> int:
    """A free port never handed out before by this process (shops start side by side)."""
    with _PORTS_LOCK:
        while (port := free_port()) in _PORTS_GIVEN:
            pass
        _PORTS_GIVEN.add(port)
        return port


def _wait_service(name: str, port: int, proc: subprocess.Popen[bytes], *, seconds: float = 30.0) -> None:
    """Until the service answers its health check with its own name; a process that exited,
    or another one answering on its port, fails the run."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode} before it answered (port {port} taken?)")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                answered = json.loads(r.read()).get("service")
            if answered != name:
                raise RuntimeError(f"port {port} of {name} is answered by {answered!r}")
            return
        except (OSError, ValueError):
            time.sleep(0.2)
    raise RuntimeError(f"{name} did not answer on port {port} within {seconds:.0f} s")


async def load(
    lab: Running, until: float, *, rate: float, seed: int, counts: dict[str, int] | None = None
) -> dict[str, int]:
    """Requests to the entry service, Poisson arrivals at a rate with a slow daily-like swell
    and short bursts, until `until` (epoch seconds); counts answers by status."""
    rng = random.Random(f"load-{seed}")
    counts = counts if counts is not None else {}
    limit = asyncio.Semaphore(64)
    tasks: set[asyncio.Task[None]] = set()
    burst_until = 0.0
    start = time.time()
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as client:

        async def one(item: int) -> None:
            async with limit:
                try:
                    async with client.get(lab.url(lab.shop.entry), params={"item": str(item)}) as r:
                        await r.read()
                        counts[str(r.status)] = counts.get(str(r.status), 0) + 1
                except (aiohttp.ClientError, TimeoutError):
                    counts["failed"] = counts.get("failed", 0) + 1

        while (now := time.time()) < until:
            if now > burst_until and rng.random() < 0.002:
                burst_until = now + rng.uniform(10, 30)
            swell = 1 + 0.4 * math.sin(2 * math.pi * (now - start) / 1800)
            current = rate * swell * (2.0 if now < burst_until else 1.0)
            task = asyncio.create_task(one(rng.randrange(1000)))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            await asyncio.sleep(rng.expovariate(current))
        if tasks:
            await asyncio.wait(tasks, timeout=15)
    return dict(counts)


async def inject(lab: Running, fault: PlannedFault) -> list[Change]:
    """The fault begun; the changes it made, where it is a change (a deploy, a config push)."""
    if fault.family == "deploy":
        return [await deploy(lab, fault.service, defect=fault.defect)]
    if fault.family == "config":
        return [await push_config(lab, fault.service, CONFIG_TIMEOUT)]
    if fault.family == "pause":
        lab.pause_store(fault.service)
        return []
    if fault.family == "refuse":
        await asyncio.to_thread(lab.close_store, fault.service)
        return []
    await _post(lab, fault.service, "/admin/fault", {"kind": fault.family, "seconds": fault.seconds})
    return []


async def undo(lab: Running, fault: PlannedFault, made: list[Change]) -> list[Change]:
    """A fault the recorder made undone at its end: the version before it rolled back, the
    config reverted (each a change), the way to the store going or open again."""
    if fault.family == "deploy":
        return [await deploy(lab, fault.service, version=made[0].before, kind=ChangeKind.ROLLBACK)]
    if fault.family == "config":
        return [await push_config(lab, fault.service, CALL_TIMEOUT)]
    if fault.family == "pause":
        lab.pause_store(fault.service, paused=False)
    if fault.family == "refuse":
        await asyncio.to_thread(lab.close_store, fault.service, closed=False)
    return []


async def deploy(
    lab: Running, service: str, *, defect: str = "", version: str = "", kind: ChangeKind = ChangeKind.DEPLOY
) -> Change:
    """The service redeployed as `version` (default: the next patch version), journalled as a
    pipeline would post it, at the moment the old process is stopped."""
    before = lab.versions[service]
    major, minor, patch = before.split(".")
    after = version or f"{major}.{minor}.{int(patch) + 1}"
    at = time.time()
    await asyncio.to_thread(lab.redeploy, service, after, defect=defect)
    return Change(service, kind, at, before=before, after=after, who="lab-ci", source="marker")


async def push_config(lab: Running, service: str, timeout: float) -> Change:
    """A config push: the service's call timeout set, journalled as a pipeline would post it."""
    before = lab.timeouts.get(service, CALL_TIMEOUT)
    at = time.time()
    await _post(lab, service, "/admin/config", {"call_timeout": timeout})
    lab.timeouts[service] = timeout
    return Change(
        service,
        ChangeKind.CONFIG,
        at,
        before=f"call_timeout={before:g}s",
        after=f"call_timeout={timeout:g}s",
        who="lab-ci",
        source="marker",
    )


async def _post(lab: Running, service: str, path: str, body: dict[str, object]) -> None:
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as client,
        client.post(lab.url(service, path), json=body) as r,
    ):
        if r.status != 200:
            raise RuntimeError(f"{service} refused {path} {body}: {await r.text()}")


class Interrupted(RuntimeError):
    """The recording was asked to stop (SIGINT or SIGTERM) before its shop was done."""


async def _until(moment: float, stop: threading.Event | None) -> None:
    """Sleep until `moment`, or raise Interrupted as soon as `stop` is set."""
    while True:
        if stop is not None and stop.is_set():
            raise Interrupted("stopped by a signal before the shop was done")
        left = moment - time.time()
        if left <= 0:
            return
        await asyncio.sleep(min(left, 0.5))


async def drive(
    lab: Running,
    faults: tuple[PlannedFault, ...],
    *,
    warmup: float,
    tail: float,
    rate: float,
    progress: Progress,
    stop: threading.Event | None = None,
    bystanders: tuple[PlannedChange, ...] = (),
) -> tuple[list[dict[str, str]], list[Change], Window, dict[str, int]]:
    """Load all along; each fault, its undoing and each harmless change at its time. Returns
    the labels, the changes made, the recorded span and the load's answers by status;
    Interrupted once `stop` is set."""
    began = time.time()
    first = began + warmup
    end = first + max(f.offset + f.seconds for f in faults) + tail
    answers: dict[str, int] = {}
    loader = asyncio.create_task(load(lab, end, rate=rate, seed=lab.shop.seed, counts=answers))
    try:
        labels, changes = await _faults(lab, faults, bystanders, first, answers, progress, stop)
        await _until(end, stop)
    except BaseException:
        loader.cancel()
        raise
    counts = await loader
    return labels, changes, Window(began, time.time()), counts


_START, _UNDO, _BYSTANDER = range(3)


async def _faults(
    lab: Running,
    faults: tuple[PlannedFault, ...],
    bystanders: tuple[PlannedChange, ...],
    first: float,
    answers: dict[str, int],
    progress: Progress,
    stop: threading.Event | None,
) -> tuple[list[dict[str, str]], list[Change]]:
    """Each fault injected at its time and journalled as its label; a change-fault undone at
    its end; each harmless change made at its time; every change journalled as it is made."""
    labels: list[dict[str, str]] = []
    changes: list[Change] = []
    made: dict[int, list[Change]] = {}
    journal, change_journal = lab.workdir / "faults.jsonl", lab.workdir / "changes.jsonl"
    events = sorted(
        [(f.offset, _START, i) for i, f in enumerate(faults)]
        + [(f.offset + f.seconds, _UNDO, i) for i, f in enumerate(faults) if f.family in UNDONE_AT_END]
        + [(c.offset, _BYSTANDER, j) for j, c in enumerate(bystanders)]
    )

    def journalled(new: list[Change]) -> list[Change]:
        changes.extend(new)
        with change_journal.open("a") as f:
            f.writelines(json.dumps(c.to_json()) + "\n" for c in new)
        return new

    for offset, what, i in events:
        await _until(first + offset, stop)
        if what == _UNDO:
            journalled(await undo(lab, faults[i], made[i]))
            continue
        if what == _BYSTANDER:
            (change,) = journalled([await deploy(lab, bystanders[i].service)])
            progress(f"lab-{lab.shop.seed}: harmless {change.describe()}")
            continue
        fault = faults[i]
        if i == 0 and answers.get("200", 0) < HEALTHY_SHARE * max(1, sum(answers.values())):
            raise RuntimeError(
                f"lab-{lab.shop.seed} was not healthy before its first fault (the entry answered "
                f"{answers}); no incident is labelled on a broken shop"
            )
        at = time.time()
        made[i] = journalled(await inject(lab, fault))
        label = {
            "inject_time": datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S"),
            "inject_timestamp": f"{at:.3f}",
            "inject_pod": f"{fault.service}-0",
            "inject_type": fault.label,
            "seconds": f"{fault.seconds:.0f}",
        }
        labels.append(label)
        with journal.open("a") as f:
            f.write(json.dumps(label) + "\n")
        progress(
            f"lab-{lab.shop.seed}: fault {i + 1}/{len(faults)} {fault.family} on {fault.service} "
            f"for {fault.seconds:.0f} s"
        )
    return labels, changes


async def save(
    lab: Running, span: Window, labels: list[dict[str, str]], out: Path, changes: list[Change] | None = None
) -> list[Path]:
    """The run's telemetry, read back as the bot reads a live system, in the Nezha layout, with
    the changes made beside it (each day's own)."""
    traces = sorted((lab.workdir / "traces").glob("*.otlp.jsonl"))
    sources = Sources(
        metrics=PrometheusMetrics(lab.prometheus, load_mapping(mapping_file()), timeout=60),
        logs=LogDirectory(lab.workdir / "logs"),
        traces=read_otlp(traces) if traces else None,
    )
    days = await write_days(sources, span, out, symptom=lab.shop.entry)
    for day in days:
        hours: dict[str, list[dict[str, str]]] = defaultdict(list)
        for label in labels:
            if label["inject_time"].startswith(day.name):
                hours[label["inject_time"][11:13]].append(label)
        (day / "lab-fault_list.json").write_text(json.dumps(hours, indent=1) + "\n")
        if changes:
            own = [c for c in changes if datetime.fromtimestamp(c.time, UTC).strftime("%Y-%m-%d") == day.name]
            write_changes(own, day / CHANGES_FILE)
    return days


def record_shop(
    shop: Shop,
    plan: tuple[PlannedFault, ...],
    out: Path,
    *,
    warmup: float,
    tail: float,
    rate: float,
    progress: Progress = print,
    stop: threading.Event | None = None,
    bystanders: tuple[PlannedChange, ...] = (),
) -> Path:
    """One shop's recording under out/lab-<seed>; the raw run stays in out/.runs/lab-<seed> only on failure.
    Once `stop` is set, its processes are stopped and Interrupted raised (a save under way
    is finished first: nothing recorded is lost)."""
    seed = shop.seed
    target = out / f"lab-{seed}"
    if target.exists():
        raise FileExistsError(f"{target} exists: remove it or record another seed")
    workdir = out / ".runs" / f"lab-{seed}"
    shutil.rmtree(workdir, ignore_errors=True)
    with running(shop, workdir) as lab:
        progress(
            f"lab-{seed}: {len(shop.services)} services up, entry {shop.entry}; "
            f"{len(plan)} faults after {warmup:.0f} s of normal load"
        )
        labels, changes, span, counts = asyncio.run(
            drive(lab, plan, warmup=warmup, tail=tail, rate=rate, progress=progress, stop=stop, bystanders=bystanders)
        )
        time.sleep(2 * SCRAPE_SECONDS)  # the last scrape lands
        staging = out / ".runs" / f"lab-{seed}.saving"
        shutil.rmtree(staging, ignore_errors=True)
        asyncio.run(save(lab, span, labels, staging, changes))
    kept = keep_normal(staging)  # the warm-up, kept apart as the layout's fault-free stretch
    meta = {
        "seed": seed,
        "shop": json.loads(shop.to_json()),
        "faults": [asdict(f) for f in plan],
        "harmless_changes": [asdict(c) for c in bystanders],
        "recorded": {"start": span.start, "end": span.end},
        "load": counts,
        "scrape_seconds": SCRAPE_SECONDS,
    }
    (staging / "lab.json").write_text(json.dumps(meta, indent=1) + "\n")
    staging.rename(target)
    shutil.rmtree(workdir, ignore_errors=True)
    progress(
        f"lab-{seed}: recorded {len(labels)} incidents in {target} (answers {counts}; "
        f"{described(kept)} of the warm-up kept as its fault-free stretch)"
    )
    return target


def record(
    seeds: list[int],
    out: Path,
    *,
    faults: int = 8,
    warmup: float = 360.0,
    tail: float = 240.0,
    rate: float = 10.0,
    spacing: tuple[float, float] = (240.0, 420.0),
    duration: tuple[float, float] = (120.0, 240.0),
    families: tuple[str, ...] = FAMILIES,
    harmless: int = 0,
    parallel: int = 3,
    progress: Progress = print,
    stop: threading.Event | None = None,
) -> list[Path]:
    """Several shops, `parallel` at a time (each its own processes and Prometheus); a shop
    that fails is reported and the others go on. Once `stop` is set, every running shop is
    stopped and no other begins."""
    from concurrent.futures import ThreadPoolExecutor

    out.mkdir(parents=True, exist_ok=True)

    def one(seed: int) -> Path | None:
        if stop is not None and stop.is_set():
            return None
        try:
            shop = draw_shop(seed)
            plan = schedule(shop, faults, spacing=spacing, duration=duration, families=families)
            return record_shop(
                shop,
                plan,
                out,
                warmup=warmup,
                tail=tail,
                rate=rate,
                progress=progress,
                stop=stop,
                bystanders=bystander_changes(shop, plan, harmless),
            )
        except (RuntimeError, OSError, ValueError) as exc:
            progress(f"lab-{seed}: failed: {exc}")
            return None

    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        done = list(pool.map(one, seeds))
    return [p for p in done if p is not None]


FIXED_SEEDS = range(100)  # the seeds rules may be developed on; fresh ones are drawn above them


def seeds_of(text: str) -> list[int]:
    """`0-2` -> [0, 1, 2]; `5,7`; `fresh:3` -> three seeds drawn now above the fixed range."""
    text = text.strip()
    if text.startswith("fresh:"):
        count = int(text.removeprefix("fresh:"))
        rng = random.SystemRandom()
        return sorted(rng.sample(range(FIXED_SEEDS.stop, 1_000_000), count))
    seeds: list[int] = []
    try:
        for part in text.split(","):
            low, _, high = part.partition("-")
            seeds.extend(range(int(low), int(high or low) + 1))
    except ValueError as exc:
        raise ValueError(f"seeds: {text!r} is not like 0-2, 5,7 or fresh:3") from exc
    if not seeds:
        raise ValueError("seeds: none given")
    return seeds
