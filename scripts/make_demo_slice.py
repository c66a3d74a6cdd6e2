"""Cut the embedded demo incident out of a Nezha-layout dataset (run once; the slice is committed).

usage: python scripts/make_demo_slice.py NEZHA_ROOT DAY HH:MM:SS OUT_DIR
Keeps one fault of the day's fault list, the metric rows from 70 minutes before to 15 minutes
after it, its three minute files of logs, traces and trace ids, the day's normal data, and
the licence.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd


def main(root: Path, day: str, clock: str, out: Path) -> None:
    src = root / "rca_data" / day
    faults = json.loads((src / f"{day}-fault_list.json").read_text())
    keep = {h: [f for f in v if f["inject_time"].endswith(clock)] for h, v in faults.items()}
    keep = {h: v for h, v in keep.items() if v}
    inject = datetime.strptime(f"{day} {clock}", "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp()
    dst = out / "rca_data" / day
    for sub in ("metric", "log", "trace", "traceid"):
        (dst / sub).mkdir(parents=True, exist_ok=True)
    (dst / f"{day}-fault_list.json").write_text(json.dumps(keep, indent=4))
    for f in sorted((src / "metric").glob("*.csv.gz")):
        frame = pd.read_csv(f)
        frame = frame[(frame["TimeStamp"] >= inject - 70 * 60) & (frame["TimeStamp"] <= inject + 15 * 60)]
        with gzip.open(dst / "metric" / f.name, "wt") as fh:
            frame.to_csv(fh, index=False)
    for offset in range(3):
        stamp = datetime.fromtimestamp(inject + 60 * offset, tz=UTC).strftime("%H_%M")
        for sub in ("log", "trace", "traceid"):
            name = f"{stamp}_{sub}.csv.gz"
            if (src / sub / name).exists():
                shutil.copy(src / sub / name, dst / sub / name)
    normal = root / "construct_data" / day
    for sub in ("log", "trace"):  # its metric files repeat rca_data's whole-day series
        if (normal / sub).is_dir():
            shutil.copytree(normal / sub, out / "construct_data" / day / sub, dirs_exist_ok=True)
    shutil.copy(root / "LICENSE", out / "LICENSE")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], Path(sys.argv[4]))
