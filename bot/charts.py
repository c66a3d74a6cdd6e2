"""PNG charts of one signal around the onset (matplotlib's Agg canvas: no screen, thread-safe)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.dates import DateFormatter, date2num
from matplotlib.figure import Figure

from rca.telemetry import Series, Window


def signal_chart(
    series: Sequence[Series], *, window: Window, title: str, onset: float | None = None, normal: Window | None = None
) -> bytes:
    """A line per series (instances of one metric), the investigated window shaded, the onset marked."""
    fig = Figure(figsize=(8, 3.2), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for s in series[:6]:
        times = [_num(t) for t in s.timestamps]
        ax.plot(times, np.asarray(s.values, dtype=float), linewidth=1.2, label=s.instance or s.entity)
    ax.axvspan(_num(window.start), _num(window.end), color="#f5d0c5", alpha=0.35, label="investigated window")
    if normal is not None:
        ax.axvspan(_num(normal.start), _num(normal.end), color="#cfe3f5", alpha=0.35, label="normal period")
    if onset is not None:
        ax.axvline(_num(onset), color="#c0392b", linestyle="--", linewidth=1.2, label="onset")
    ax.set_title(title[:120], fontsize=10)
    ax.xaxis.set_major_formatter(DateFormatter("%H:%M", tz=UTC))
    ax.set_xlabel("UTC", fontsize=8)
    ax.tick_params(labelsize=8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    out = io.BytesIO()
    fig.savefig(out, format="png")
    return out.getvalue()


def _num(t: float) -> float:
    """Epoch seconds as matplotlib's date number."""
    return float(date2num(datetime.fromtimestamp(float(t), UTC)))
