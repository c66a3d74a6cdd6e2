"""`make demo-live`: a real Prometheus serving the embedded TrainTicket incident's metrics
(backfilled with promtool), and an investigation that reads its metrics from it."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from bot.backfill import backfilled
from bot.telemetry import embedded_data
from lab.processes import binaries
from rca.sources.datasets import find_cases
from rca.telemetry import to_iso


def main() -> int:
    if binaries() is None:
        print("prometheus is not installed: run scripts/ensure-prometheus.sh (as root) first", file=sys.stderr)
        return 1
    case = find_cases(embedded_data())[0]
    window = case.incident.window
    with tempfile.TemporaryDirectory() as tmp, backfilled(case, Path(tmp)) as (url, mapping):
        print(f"Prometheus at {url} serves the metrics of {case.id} (Nezha's TrainTicket data, MIT)")
        print(f"mapping: engine metric -> PromQL in {mapping}; logs and traces come from the recording\n")
        return subprocess.call(
            [
                sys.executable,
                "-m",
                "bot.cli",
                "investigate",
                case.incident.symptom,
                f"{int(window.seconds // 60)}m",
                "--at",
                to_iso(window.end),
                "--data",
                str(embedded_data()),
                "--prometheus",
                url,
                "--prom-mapping",
                str(mapping),
            ]
        )


if __name__ == "__main__":
    raise SystemExit(main())
