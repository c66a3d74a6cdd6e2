"""Log evidence: templates mined with Drain3, compared with the normal period per service."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from drain3 import TemplateMiner
from drain3.masking import MaskingInstruction
from drain3.template_miner_config import TemplateMinerConfig

from rca.evidence.runs import ONSET_Z
from rca.sources.protocols import is_error
from rca.telemetry import LineCounts, LogRecord, Severity
from rca.topology import ONSET_TOLERANCE

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


MAX_LOCATION = 200


def mine(miner: TemplateMiner, records: Sequence[LogRecord]) -> list[MinedLog]:
    """Each record with its template; the same miner keeps ids stable across calls.

    Where the format names the code location, lines of one template written at two places
    are two templates: two code paths that print alike (a loop's first and last step, say)
    stop apart when one of them is cut short.

    Templates grow from the lines met first, so lines are met in one order: by time, then
    service, pod, code location and text, whatever order the backend gave the lines of one
    instant in.
    """
    out = []
    cache: dict[tuple[str, str], tuple[str, str]] = {}
    ids: dict[tuple[str, str], str] = {}  # (cluster, location) -> its template id, made once
    for r in sorted(records, key=lambda r: (r.time, r.entity, r.instance, r.location, r.message, r.severity.value)):
        text = r.message[:MAX_MESSAGE]
        key = (r.entity, text)
        hit = cache.get(key)
        if hit is None:
            result = miner.add_log_message(text)
            hit = (f"T{result['cluster_id']}", str(result["template_mined"]))
            cache[key] = hit
        template_id = hit[0]
        if r.location:
            template_id = ids.get((hit[0], r.location)) or ids.setdefault(
                (hit[0], r.location), f"{hit[0]}@{r.location[:MAX_LOCATION]}"
            )
        out.append(MinedLog(r, template_id, hit[1]))
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
    onset: float  # when the change began: the start of its run of excess (or of silence); nan if none
    until: float  # when that run ended; nan while it goes on to the last lines read
    under_way: bool = False  # the run began with the first lines read: it was under way before them


def _minutes(logs: Sequence[MinedLog]) -> float:
    minutes = {int(m.record.time // 60) for m in logs}
    return float(max(1, len(minutes)))


def _expected(normal_count: int, normal_total: int, now_total: int, n_min: float, c_min: float) -> float:
    """Lines expected in the window from a normal count, scaled by the change of the service's
    total volume (at most fivefold either way), so that more traffic alone is not an anomaly."""
    volume = (now_total / c_min) / (normal_total / n_min) if normal_total and now_total else 1.0
    return normal_count / n_min * c_min * min(max(volume, 0.2), 5.0)


def _error_test() -> Callable[[MinedLog], bool]:
    """is_error for mined lines, decided once per (template, severity)."""
    known: dict[tuple[str, Severity], bool] = {}

    def erring(m: MinedLog) -> bool:
        key = (m.template, m.record.severity)
        if key not in known:
            known[key] = is_error(*key)
        return known[key]

    return erring


ONSET_BIN_SECONDS = 10.0


def anomalous_run(
    counts: Mapping[int, int], expected: Mapping[int, float], direction: int, *, silences: bool = True
) -> tuple[int, int] | None:
    """The run of bins where the template departs from its expected counts (Kadane's
    maximum-sum run of the excess, or of the deficit when direction < 0), carried on to the
    last bin when the bins after it still depart on their own (three Poisson deviations): the
    anomaly goes on. A bin counts toward a run only by what exceeds half a Poisson deviation,
    so that a drift of the shares (another template's change) starts no run.

    Lines in excess that stopped for longer than the time forgiven between a cause and its
    effect (rca.topology.ONSET_TOLERANCE), where their own rate before expected three Poisson
    deviations of lines in that silence (ONSET_Z squared), ended their run: what comes after
    is another run, as a metric's run ends where its series stayed back (rca.evidence.runs).
    Of those runs the evidence is the one going on at the last bin, else the strongest
    (`silences=False` is the ablation: one run across every silence)."""
    bins = sorted(set(counts) | set(expected))
    parts = _apart(bins, counts, expected) if silences and direction > 0 else [bins]
    found = [run for part in parts if (run := _run(part, counts, expected, direction)) is not None]
    if not found:
        return None
    (start, end), _ = found[-1]
    if end >= bins[-1] - _GOING_BINS and _departs([b for b in bins if start <= b <= end], counts, expected, direction):
        return start, end  # the run going on at the last bin, where it departs on its own
    return max(found, key=lambda r: r[1])[0]


def _run(
    bins: Sequence[int], counts: Mapping[int, int], expected: Mapping[int, float], direction: int
) -> tuple[tuple[int, int], float] | None:
    """Kadane's run of `bins` (carried on to their last where the bins after it still depart)
    and its sum."""
    best, found, run, run_start = 0.0, None, 0.0, 0
    for b in bins:
        e = expected.get(b, 0.0)
        d = direction * (counts.get(b, 0) - e) - 0.5 * math.sqrt(e + 1.0)
        if run <= 0:
            run, run_start = 0.0, b
        run += d
        if run > best:
            best, found = run, (run_start, b)
    if (
        found is not None
        and found[1] != bins[-1]
        and _departs([b for b in bins if b > found[1]], counts, expected, direction)
    ):
        return (found[0], bins[-1]), best
    return (found, best) if found is not None else None


def _departs(bins: Sequence[int], counts: Mapping[int, int], expected: Mapping[int, float], direction: int) -> bool:
    """The bins' lines depart from their expected count on their own: three Poisson deviations."""
    seen, want = sum(counts.get(b, 0) for b in bins), sum(expected.get(b, 0.0) for b in bins)
    return direction * (seen - want) / math.sqrt(want + 1.0) >= ONSET_Z


def _apart(bins: Sequence[int], counts: Mapping[int, int], expected: Mapping[int, float]) -> list[list[int]]:
    """`bins` cut where the lines in excess stopped for longer than ONSET_TOLERANCE while
    their rate since the last cut expected ONSET_Z squared lines in that silence. Time is
    counted in the bins read (the service wrote lines in them): where it wrote none at all,
    nothing was read, and nothing stopped."""
    parts: list[list[int]] = [[]]
    lines, span, quiet = 0.0, 0, 0  # since the last cut: lines in excess, bins read to the last of them, and after it
    for b in bins:
        excess = counts.get(b, 0) - expected.get(b, 0.0)
        if excess > 0 and span:
            rate = lines / (span * ONSET_BIN_SECONDS)
            silence = quiet * ONSET_BIN_SECONDS
            if silence > ONSET_TOLERANCE and rate * silence >= ONSET_Z**2:
                parts.append(parts[-1][-quiet:])  # the silence opens the next part
                del parts[-2][-quiet:]
                lines, span, quiet = 0.0, 0, 0
        if excess > 0:
            lines, span, quiet = lines + excess, span + quiet + 1, 0
        elif span:
            quiet += 1
        parts[-1].append(b)
    return [p for p in parts if p]


# a run that ends within this many bins of the last lines read still goes on
_GOING_BINS = int(ONSET_TOLERANCE // ONSET_BIN_SECONDS)


def run_interval(run: tuple[int, int] | None, extent: tuple[int, int]) -> tuple[float, float, bool]:
    """A run of bins as (onset, until, under way) in seconds: until is nan while the run goes
    on to the last lines read (`extent`: the first and last bin with lines), and the run was
    already under way when it starts at the first of them; onset nan where there is none."""
    if run is None:
        return math.nan, math.nan, False
    until = math.nan if run[1] >= extent[1] - _GOING_BINS else (run[1] + 1) * ONSET_BIN_SECONDS
    return run[0] * ONSET_BIN_SECONDS, until, run[0] <= extent[0]


def template_shifts(
    normal: Sequence[MinedLog], now: Sequence[MinedLog], *, silences: bool = True
) -> list[TemplateShift]:
    """Per (service, template): the rate change, scored as a Poisson deviation (`silences`: a
    run of its lines ends at a silence its own rate did not expect, `anomalous_run`).

    Rates are scaled by the change of the service's total volume, so that more traffic alone
    is not an anomaly; a template never seen in the normal period counts as new, and one
    that stopped keeps its text so that its silence can be shown. Its onset is where, bin by
    bin, the template's count begins to depart from its normal share of the service's lines.
    """
    n_min, c_min = _minutes(normal), _minutes(now)
    base = Counter((m.record.entity, m.template_id) for m in normal)
    base_total = Counter(m.record.entity for m in normal)
    now_count: Counter[tuple[str, str]] = Counter()
    now_total: Counter[str] = Counter()
    info: dict[tuple[str, str], tuple[str, Severity]] = {}
    for m in normal:  # a template that stopped keeps its text and severity
        info.setdefault((m.record.entity, m.template_id), (m.template, m.record.severity))
    bins: dict[tuple[str, str], Counter[int]] = {}
    service_bins: dict[str, Counter[int]] = {}
    for m in now:
        key = (m.record.entity, m.template_id)
        now_count[key] += 1
        now_total[m.record.entity] += 1
        b = int(m.record.time // ONSET_BIN_SECONDS)
        bins.setdefault(key, Counter())[b] += 1
        service_bins.setdefault(m.record.entity, Counter())[b] += 1
        t, sev = info.get(key, (m.template, m.record.severity))
        info[key] = (t, max(sev, m.record.severity))

    def expect(entity: str, normal_count: int) -> float:
        return _expected(normal_count, base_total[entity], now_total[entity], n_min, c_min)

    # lines of one code location, whatever their shape: a template that fell while another
    # of the same statement rose (other arguments, masked otherwise) is not a path stopping
    place = {(m.record.entity, m.template_id): m.record.location for m in (*normal, *now) if m.record.location}
    place_base: Counter[tuple[str, str]] = Counter()
    place_now: Counter[tuple[str, str]] = Counter()
    for (entity, tid), loc in place.items():
        place_base[(entity, loc)] += base[(entity, tid)]
        place_now[(entity, loc)] += now_count[(entity, tid)]
    out = []
    for key in set(now_count) | set(base):
        entity, tid = key
        template, sev = info.get(key, ("", Severity.UNKNOWN))
        normal_rate = base[key] / n_min
        expected = expect(entity, base[key])
        observed = now_count[key]
        score = (observed - expected) / math.sqrt(expected + 1.0)
        if score < 0 and key in place:
            at = (entity, place[key])
            at_expected = expect(entity, place_base[at])
            score = max(score, (place_now[at] - at_expected) / math.sqrt(at_expected + 1.0))
        share = base[key] / base_total[entity] if base_total[entity] else 0.0
        lines = service_bins.get(entity, Counter())
        extent = (min(lines), max(lines)) if lines else (0, 0)
        onset, until, under_way = run_interval(
            anomalous_run(
                bins.get(key, Counter()),
                {b: share * n for b, n in lines.items()},
                1 if score >= 0 else -1,
                silences=silences,
            ),
            extent,
        )
        out.append(
            TemplateShift(
                entity,
                tid,
                template,
                sev,
                observed / c_min,
                normal_rate,
                expected / c_min,
                normal_rate == 0 and observed > 0,
                score,
                onset,
                until,
                under_way,
            )
        )
    return sorted(out, key=lambda s: (-abs(s.score), s.entity, s.template_id))  # ties in a fixed order, not a set's


def line_counts(mined: Sequence[MinedLog]) -> LineCounts:
    """Lines and failure lines per service, and the minutes that held lines."""
    failed = _error_test()
    return LineCounts(
        Counter(m.record.entity for m in mined), Counter(m.record.entity for m in mined if failed(m)), _minutes(mined)
    )


def error_volume(normal: LineCounts, now: LineCounts) -> dict[str, float]:
    """Per service, how far its error lines rose: the Poisson deviation of their count in the
    window from the normal rate, scaled by the change of the service's total volume (as
    `template_shifts` scales a template). It needs no template, only counts of lines by service
    and whether they report a failure: what an aggregate log query returns (LogQL `sum by
    (service) (count_over_time(...))`, with and without a failure filter), so a glance over
    every service's logs reads no line."""
    out = {}
    for entity, observed in now.errors.items():
        expected = _expected(
            normal.errors.get(entity, 0),
            normal.lines.get(entity, 0),
            now.lines.get(entity, 0),
            max(1.0, normal.minutes),
            max(1.0, now.minutes),
        )
        out[entity] = (observed - expected) / math.sqrt(expected + 1.0)
    return out


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
    erring = _error_test()
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


# an error line is a failed call to another service when at least this share of its lines
# in the window name one
PEER_SHARE = 0.5


def _peer_pattern(services: Iterable[str]) -> re.Pattern[str] | None:
    """Mentions of the system's services in a line: a name with a separator in it (such as
    `ts-order-service`) as a whole token, any name as a host (`//cart/`, `cart:7070`,
    `host='cart'`), or any name as a link of a wrapped error's chain (`checkout: cart: timeout`,
    the form Go's and Python's wrapped errors print), so that a plain word that happens to name
    a service is not a mention."""
    names = sorted({s for s in services if s}, key=len, reverse=True)
    if not names:
        return None
    joined = "|".join(re.escape(n) for n in names)
    parts = [
        rf"(?://|host=['\"]?)(?P<h1>{joined})(?=[:/'\"\s]|$)",
        rf"(?<![\w.-])(?P<h2>{joined}):\d",
        rf"(?:^|(?<=:\s))(?P<w>{joined})(?=:\s)",
    ]
    separated = "|".join(re.escape(n) for n in names if re.search(r"[-_.]", n))
    if separated:
        parts.append(rf"(?<![\w.-])(?P<s>{separated})(?![\w-])")
    return re.compile("|".join(parts))


def dependency_errors(now: Sequence[MinedLog], services: Iterable[str]) -> dict[tuple[str, str], frozenset[str]]:
    """Per (service, error template): the other services its lines name, where most do.

    "No instances available for ts-x-service", "I/O error on POST request for
    http://x:8080/..." or "HTTPConnectionPool(host='x', port=80)" report a failed call to x:
    the writer's symptom of a dependency, not an exception of its own code.
    """
    pattern = _peer_pattern(services)
    if pattern is None:
        return {}
    lines: Counter[tuple[str, str]] = Counter()
    naming: Counter[tuple[str, str]] = Counter()
    named: dict[tuple[str, str], set[str]] = {}
    erring = _error_test()
    for m in now:
        if not erring(m):
            continue
        key = (m.record.entity, m.template_id)
        lines[key] += 1
        peers = {next(g for g in match.groups() if g) for match in pattern.finditer(m.record.message[:MAX_MESSAGE])}
        peers.discard(m.record.entity)
        if peers:
            naming[key] += 1
            named.setdefault(key, set()).update(peers)
    return {key: frozenset(named[key]) for key, n in naming.items() if n >= PEER_SHARE * lines[key]}
