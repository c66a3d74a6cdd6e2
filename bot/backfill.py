"""A recorded incident's metrics as OpenMetrics text, for `promtool tsdb create-blocks-from
openmetrics`, and the mapping file that reads them back through PrometheusMetrics; and a real
Prometheus (Debian's binaries, 127.0.0.1, a free port) serving them.

`rcabot backfill-prometheus DATA --out DIR` writes DIR/metrics.om and DIR/mapping.yaml;
`backfilled(case, workdir)` runs Prometheus over them (the live integration test and
`make demo-live`).
"""

from __future__ import annotations

import asyncio
import math
import re
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import yaml

from lab.processes import binaries, free_port, stop_process, wait_ready
from rca.model import IncidentCase
from rca.sources.prometheus import escape_value
from rca.sources.protocols import MetricQuery
from rca.telemetry import Series, Window

PREFIX = "rcabot_"


def family(metric: str) -> str:
    """An OpenMetrics family name for any metric name: `CpuUsage(m)` -> `rcabot_cpuusage_m`."""
    return PREFIX + re.sub(r"_+", "_", re.sub(r"[^a-z0-9_]", "_", metric.lower())).strip("_")


def openmetrics(series: Iterable[Series]) -> str:
    """Gauge families, samples in time order, timestamps in seconds, `# EOF` at the end."""
    by_family: dict[str, list[Series]] = {}
    for s in series:
        by_family.setdefault(family(s.metric), []).append(s)
    lines: list[str] = []
    for name in sorted(by_family):
        lines.append(f"# TYPE {name} gauge")
        for s in by_family[name]:
            labels = f'service="{escape_value(s.entity)}",pod="{escape_value(s.instance or s.entity)}"'
            for t, v in zip(s.timestamps, s.values, strict=True):
                if math.isfinite(float(v)):
                    lines.append(f"{name}{{{labels}}} {float(v)!r} {float(t):.3f}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def mapping(metrics: Sequence[str], *, step: str = "60s") -> dict[str, object]:
    """The mapping that reads the backfilled families back under their original names."""
    return {
        "service_label": "service",
        "instance_label": "pod",
        "step": step,
        "metrics": {m: f"{family(m)}{{${{match}}}}" for m in sorted(set(metrics))},
    }


async def export_case(case: IncidentCase, out: Path, *, lookback: float = 3600.0) -> tuple[Path, Path, Window]:
    """Write the case's metrics (its window and the hour before) and their mapping into `out`."""
    metrics = case.incident.sources.metrics
    if metrics is None:
        raise ValueError(f"{case.id} has no metrics to backfill")
    w = case.incident.window
    span = Window(w.start - lookback, w.end)
    series = await metrics.series(MetricQuery(span))
    out.mkdir(parents=True, exist_ok=True)
    om, yml = out / "metrics.om", out / "mapping.yaml"
    om.write_text(openmetrics(series))
    yml.write_text(yaml.safe_dump(mapping([s.metric for s in series]), sort_keys=False, allow_unicode=True))
    return om, yml, span


CONFIG = "global:\n  scrape_interval: 1h\nscrape_configs: []\n"


@contextmanager
def backfilled(
    case: IncidentCase, workdir: Path, *, config: str = "", flags: Sequence[str] = ()
) -> Iterator[tuple[str, Path]]:
    """A running Prometheus holding the case's metrics; yields its URL and the mapping file.
    `config` replaces the minimal prometheus.yml (rule files, Alertmanager), `flags` are added."""
    om, mapping, _ = asyncio.run(export_case(case, workdir / "export"))
    with serving(om, workdir, config=config, flags=flags) as url:
        yield url, mapping


@contextmanager
def serving(
    om: Path, workdir: Path, *, config: str = "", flags: Sequence[str] = (), timeout: float = 120.0
) -> Iterator[str]:
    """A running Prometheus (Debian's, 127.0.0.1, a free port) holding an OpenMetrics file's
    samples as blocks; yields its URL. `timeout`: seconds promtool may take to write them."""
    found = binaries()
    if found is None:
        raise RuntimeError("prometheus and promtool are not installed (scripts/ensure-prometheus.sh)")
    prometheus, promtool = found
    data = workdir / "tsdb"
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(om), str(data)],
        check=True,
        capture_output=True,
        timeout=timeout,
    )
    (workdir / "prometheus.yml").write_text(config or CONFIG)
    port = free_port()
    log = (workdir / "prometheus.log").open("w")
    proc = subprocess.Popen(
        [
            prometheus,
            f"--config.file={workdir / 'prometheus.yml'}",
            f"--storage.tsdb.path={data}",
            "--storage.tsdb.retention.time=100y",
            f"--web.listen-address=127.0.0.1:{port}",
            *flags,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc, workdir / "prometheus.log")
        yield url
    finally:
        stop_process(proc)
        log.close()
