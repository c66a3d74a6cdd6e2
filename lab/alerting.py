"""The lab's alerting: Prometheus rules over what its services export, and Debian's
Alertmanager routing what fires to a webhook (the bot's `/alerts/alertmanager`).

The rules are the kind an SRE writes first: a saturated CPU, a share of 5xx answers, a slow
99th percentile, each per service and held for a while before it fires.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lab.processes import free_port, stop_process

RULES = """\
groups:
  - name: lab
    interval: 5s
    rules:
      - alert: ServiceCpuSaturated
        expr: 100 * rate(process_cpu_seconds_total{job="lab"}[30s]) > 30
        for: 1m
        labels: {severity: warning, team: lab}
        annotations: {summary: "CPU of {{ $labels.service }} above 30 % of a core for a minute"}
      - alert: ServiceErrors
        expr: >-
          sum by (service) (rate(lab_http_server_request_duration_seconds_count{job="lab", code=~"5.."}[1m]))
          / sum by (service) (rate(lab_http_server_request_duration_seconds_count{job="lab"}[1m])) > 0.05
        for: 1m
        labels: {severity: critical, team: lab}
        annotations: {summary: "{{ $labels.service }} answers more than 5 % of requests with 5xx"}
      - alert: ServiceSlow
        expr: >-
          histogram_quantile(0.99, sum by (service, le)
          (rate(lab_http_server_request_duration_seconds_bucket{job="lab"}[1m]))) > 0.5
        for: 1m
        labels: {severity: warning, team: lab}
        annotations: {summary: "99th percentile latency of {{ $labels.service }} above 0.5 s"}
"""


def alertmanager_binary() -> str | None:
    return shutil.which("alertmanager") or shutil.which("prometheus-alertmanager")


def prometheus_alerting(workdir: Path, alertmanager_url: str) -> str:
    """The lines of prometheus.yml that load the rules and send to the Alertmanager."""
    rules = workdir / "rules.yml"
    workdir.mkdir(parents=True, exist_ok=True)
    rules.write_text(RULES)
    target = alertmanager_url.removeprefix("http://")
    return f"rule_files: ['{rules}']\nalerting:\n  alertmanagers:\n    - static_configs: [{{targets: ['{target}']}}]\n"


def alertmanager_config(
    webhook: str, token: str, *, group_by: tuple[str, ...] = ("alertname", "service"), wait: str = "1s"
) -> str:
    return f"""\
route:
  receiver: rcabot
  group_by: [{", ".join(group_by)}]
  group_wait: {wait}
  group_interval: {wait}
  repeat_interval: 1h
receivers:
  - name: rcabot
    webhook_configs:
      - url: {webhook}
        send_resolved: true
        http_config:
          authorization:
            type: Bearer
            credentials: {token}
"""


@contextmanager
def alertmanager(workdir: Path, config: str) -> Iterator[str]:
    """A running Alertmanager (127.0.0.1, a free port, no cluster) with this configuration;
    yields its URL and stops it on the way out."""
    binary = alertmanager_binary()
    if binary is None:
        raise RuntimeError("alertmanager is not installed: run scripts/ensure-prometheus.sh (as root)")
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "alertmanager.yml").write_text(config)
    port = free_port()
    out = workdir / "alertmanager.log"
    with out.open("w") as log:
        proc = subprocess.Popen(
            [
                binary,
                f"--config.file={workdir / 'alertmanager.yml'}",
                f"--storage.path={workdir / 'am-data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--cluster.listen-address=",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"alertmanager exited: {out.read_text()[-800:]}")
                try:
                    with urllib.request.urlopen(f"{url}/api/v2/status", timeout=2) as r:
                        json.loads(r.read())
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"alertmanager not ready within 30 s: {out.read_text()[-800:]}") from None
                    time.sleep(0.2)
            yield url
        finally:
            stop_process(proc)
            shutil.rmtree(workdir / "am-data", ignore_errors=True)
