"""Log evidence: templates mined with Drain3, compared with the normal period per service."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from drain3 import TemplateMiner
from drain3.masking import MaskingInstruction
from drain3.template_miner_config import TemplateMinerConfig

from rca.model import LogRecord, Severity

_MASKS = (
    (r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", "UUID"),
    (r"\b[0-9a-fA-F]{16,}\b", "HEX"),
    (r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b", "IP"),
    (r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?Z?\b", "TIME"),
    (r"(?<![A-Za-z])[-+]?\d+(?:\.\d+)?(?![A-Za-z])", "NUM"),
)
MAX_MESSAGE = 2000


def new_miner() -> TemplateMiner:
    """A Drain3 miner that masks ids, addresses, times and numbers; no persistence."""
    config = TemplateMinerConfig()
    config.drain_sim_th = 0.5
    config.drain_depth = 4
    config.drain_max_children = 100
    config.drain_max_clusters = 4096
    config.masking_instructions = [MaskingInstruction(p, name) for p, name in _MASKS]
    config.profiling_enabled = False
    return TemplateMiner(config=config)


@dataclass(frozen=True, slots=True)
class MinedLog:
    record: LogRecord
    template_id: str
    template: str


def mine(miner: TemplateMiner, records: Sequence[LogRecord]) -> list[MinedLog]:
    """Each record with its template; the same miner keeps ids stable across calls."""
    out = []
    cache: dict[str, tuple[str, str]] = {}
    for r in records:
        text = r.message[:MAX_MESSAGE]
        key = f"{r.entity}\x00{text}"
        hit = cache.get(key)
        if hit is None:
            result = miner.add_log_message(text)
            hit = (f"T{result['cluster_id']}", str(result["template_mined"]))
            cache[key] = hit
        out.append(MinedLog(r, hit[0], hit[1]))
    return out


@dataclass(frozen=True, slots=True)
class TemplateShift:
    """How often one service wrote one template, now against normal (per minute)."""

    entity: str
    template_id: str
    template: str
    severity: Severity
    now_per_min: float
    normal_per_min: float
    expected_per_min: float  # the normal rate scaled by the service's change of volume
    is_new: bool
    score: float
    first_seen: float


def _minutes(logs: Sequence[MinedLog]) -> float:
    minutes = {int(m.record.time // 60) for m in logs}
    return float(max(1, len(minutes)))


_ERROR_WORDS = ("exception", "threw", "error", "fail", "refused", "timeout", "unavailable")


def is_error(template: str, severity: Severity) -> bool:
    """A template that reports a failure: by its level, or by its words where the level is low."""
    return severity >= Severity.WARNING or any(w in template.lower() for w in _ERROR_WORDS)


def template_shifts(normal: Sequence[MinedLog], now: Sequence[MinedLog]) -> list[TemplateShift]:
    """Per (service, template): the rate change, scored as a Poisson deviation.

    Rates are scaled by the change of the service's total volume, so that more traffic alone
    is not an anomaly; a template never seen in the normal period counts as new, and one
    that stopped keeps its text so that its silence can be shown.
    """
    n_min, c_min = _minutes(normal), _minutes(now)
    base = Counter((m.record.entity, m.template_id) for m in normal)
    base_total = Counter(m.record.entity for m in normal)
    now_count: Counter[tuple[str, str]] = Counter()
    now_total: Counter[str] = Counter()
    info: dict[tuple[str, str], tuple[str, Severity, float]] = {}
    for m in normal:  # a template that stopped keeps its text and severity, with no first sighting
        info.setdefault((m.record.entity, m.template_id), (m.template, m.record.severity, math.nan))
    for m in now:
        key = (m.record.entity, m.template_id)
        now_count[key] += 1
        now_total[m.record.entity] += 1
        t, sev, first = info.get(key, (m.template, m.record.severity, m.record.time))
        info[key] = (t, max(sev, m.record.severity), m.record.time if math.isnan(first) else min(first, m.record.time))
    out = []
    for key in set(now_count) | set(base):
        entity, tid = key
        template, sev, first = info.get(key, ("", Severity.UNKNOWN, math.nan))
        normal_rate = base[key] / n_min
        volume = (now_total[entity] / c_min) / (base_total[entity] / n_min) if base_total[entity] and now_total[entity] else 1.0
        expected = normal_rate * c_min * min(max(volume, 0.2), 5.0)
        observed = now_count[key]
        score = (observed - expected) / math.sqrt(expected + 1.0)
        out.append(TemplateShift(entity, tid, template, sev, observed / c_min, normal_rate,
                                 expected / c_min, normal_rate == 0 and observed > 0, score, first))  # fmt: skip
    return sorted(out, key=lambda s: -abs(s.score))


# a look-back minute whose error lines exceed what the fault-free stretch predicts by this
# many Poisson deviations held a fault of its own (an earlier incident's tail, say)
UNHEALTHY_Z = 3.0


def normal_logs(lookback: Sequence[MinedLog], fault_free: Sequence[MinedLog]) -> list[MinedLog]:
    """The normal period: the fault-free stretch and the look-back minutes that were normal.

    Faults follow each other, so the hour before an incident may hold another one; measured
    against it, a fault that repeats looks normal. Where a fault-free stretch exists, a
    service's look-back minute is left out when its share of error lines stands out from that
    stretch's; a service the stretch never saw keeps all of its minutes.
    """
    if not fault_free:
        return list(lookback)
    known: dict[tuple[str, Severity], bool] = {}

    def erring(m: MinedLog) -> bool:
        key = (m.template, m.record.severity)
        if key not in known:
            known[key] = is_error(*key)
        return known[key]

    free_lines: Counter[str] = Counter()
    free_errors: Counter[str] = Counter()
    for m in fault_free:
        free_lines[m.record.entity] += 1
        free_errors[m.record.entity] += erring(m)
    minutes = [(m.record.entity, int(m.record.time // 60)) for m in lookback]
    lines = Counter(minutes)
    errors: Counter[tuple[str, int]] = Counter()
    for key, m in zip(minutes, lookback, strict=True):
        errors[key] += erring(m)
    unhealthy = set()
    for (entity, minute), n in lines.items():
        if free_lines[entity]:
            expected = n * free_errors[entity] / free_lines[entity]
            if errors[(entity, minute)] > expected + UNHEALTHY_Z * math.sqrt(expected + 1.0):
                unhealthy.add((entity, minute))
    return list(fault_free) + [m for key, m in zip(minutes, lookback, strict=True) if key not in unhealthy]
