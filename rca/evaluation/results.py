"""The results page: one table of engine x set x protocol, and its plot, from the JSON files
`rcabot eval --json` writes (`rcabot report`).

A figure on the page is computed here from the saved per-case answers, never typed in, so the
page says what the saved runs say and nothing else. Files are laid out `<dir>/<set>/<name>.json`
(or `.json.gz`): the folder names the set, the file's own `protocol` names the protocol.
"""

from __future__ import annotations

import gzip
import io
import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rca.calibration import case_features, expected_calibration_error, shipped
from rca.errors import InputError
from rca.evaluation.metrics import AuditOutcome, Outcome, auroc, summarise
from rca.model import FaultType

PRODUCT_ENGINE = "lats"  # the engine the bot runs: its trust columns are the verdict's
BASELINES = ("linear-multi", "baro")  # shown beside it, first place only
OLDEST_FORMAT = 4  # the first format that says whether the verdict called it likely
LAB_PREFIX = "lab-"  # scripts/results.sh saves each lab recording as results/lab-<name>/
LAB_POOL = "lab, pooled"


@dataclass(frozen=True, slots=True)
class Row:
    """One engine on one set under one protocol."""

    set: str
    protocol: str
    engine: str
    cases: int
    ac1: float
    ac1_grounded: float | None  # right and resting on the labelled fault's time; None: not saved (format < 5)
    ac3: float
    fault_type: float  # share whose first place carries the true fault type
    ece: float  # expected calibration error of the first place's probability, as shipped
    ece_learnt: float  # the same where each probability learnt from the marks of the cases before it
    likely: float  # share of verdicts said as "Likely"
    likely_right: float | None  # how often those were right; None when none was said
    auroc: float | None  # the audit's trust against a wrong first place, when audited
    seconds: float  # median per case


def read(path: Path) -> dict:
    """One saved evaluation, plain or gzipped; a clear error for anything else."""
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        data = json.loads(raw)
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not an evaluation JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise InputError(f"{path}: not an evaluation JSON (no cases)")
    if int(data.get("version", 0)) < OLDEST_FORMAT:
        raise InputError(f"{path}: format {data.get('version')} is older than {OLDEST_FORMAT}; run the eval again")
    return data


def saved(root: Path) -> list[tuple[str, dict]]:
    """(set, evaluation) for every saved evaluation under `root`, in path order."""
    files = sorted([*root.glob("*/*.json"), *root.glob("*/*.json.gz")])
    if not files:
        raise InputError(f"{root}: no <set>/<name>.json evaluations")
    return [(f.parent.name, read(f)) for f in files]


def read_cases(evaluations: Iterable[tuple[str, dict]]) -> dict[tuple[str, str, str], list[_Read]]:
    """Per (set, protocol, engine), each saved case as the page reads it. A probability learns
    only from the marks of its own set's cases before it: each set is its own system."""
    groups: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for set_name, data in evaluations:
        for case in data["cases"]:
            groups[(set_name, str(data.get("protocol") or "realistic"), case["engine"])].append(case)
    cal = shipped()
    out: dict[tuple[str, str, str], list[_Read]] = {}
    for key, cases in groups.items():
        outcomes = [saved_outcome(c) for c in cases]
        feats = [case_features(c) for c in cases]
        right = [o.right for o in outcomes]
        out[key] = [
            _Read(
                o,
                cal.probability(f),
                cal.adapted(list(zip(feats[:i], right[:i], strict=True))).probability(f),
                cal.says_likely(f, c.get("tied_first", 1)),
                "grounded" in c,
            )
            for i, (c, o, f) in enumerate(zip(cases, outcomes, feats, strict=True))
        ]
    return out


def tabulate(
    cases: dict[tuple[str, str, str], list[_Read]], *, pool: Callable[[str], str] = lambda name: name
) -> list[Row]:
    """The rows of cases read by `read_cases`, a set's cases under the row `pool` names it."""
    pooled: dict[tuple[str, str, str], list[_Read]] = defaultdict(list)
    for (set_name, protocol, engine), reads in cases.items():
        pooled[(pool(set_name), protocol, engine)] += reads
    out = []
    for (set_name, protocol, engine), unordered in pooled.items():
        # in one order whatever order the sets were read in, so that a sum is the same to the bit
        reads = sorted(unordered, key=lambda r: (r.outcome.dataset, r.outcome.case_id, r.learnt, r.probability))
        outcomes = [r.outcome for r in reads]
        summary = summarise(set_name, engine, outcomes)
        right = [o.right for o in outcomes]
        likely = [r.outcome.right for r in reads if r.likely]
        out.append(
            Row(
                set_name,
                protocol,
                engine,
                summary.cases,
                summary.ac1,
                summary.ac1_grounded if all(r.dated for r in reads) else None,
                summary.ac3,
                summary.fault_acc,
                expected_calibration_error([r.probability for r in reads], right),
                expected_calibration_error([r.learnt for r in reads], right),
                len(likely) / len(reads),
                sum(likely) / len(likely) if likely else None,
                auroc(outcomes),
                summary.median_seconds,
            )
        )
    return sorted(out, key=lambda r: (r.set, _protocol_order(r.protocol), r.engine))


@dataclass(frozen=True, slots=True)
class _Read:
    """One saved case as the page reads it: its outcome, the probability shown (as shipped, and
    learnt from its set's earlier marks) and whether the verdict said "Likely"."""

    outcome: Outcome
    probability: float
    learnt: float
    likely: bool
    dated: bool  # saved with `grounded` (format 5 on): whether it rests on the fault's time was asked


def lab_pool(set_name: str) -> str:
    """The lab's recordings pooled into one row: each is a fresh system of a few incidents, too
    few to read alone (the per-set rows are on the lab's own page)."""
    return LAB_POOL if set_name.startswith(LAB_PREFIX) else set_name


def saved_outcome(case: dict) -> Outcome:
    """A saved case as the evaluation's own Outcome, so that every figure is computed one way."""
    ranking = case["ranking"]
    audit = case.get("audit")
    return Outcome(
        case["engine"],
        case["dataset"],
        case["case_id"],
        case["truth"]["service"],
        FaultType(case["truth"]["fault_type"]),
        tuple(c["service"] for c in ranking),
        FaultType(ranking[0]["fault_type"]) if ranking else FaultType.UNKNOWN,
        float(case["seconds"]),
        case.get("error"),
        AuditOutcome(float(audit["trust"]), str(audit.get("route", "")), audit.get("weakest_stage")) if audit else None,
        case.get("grounded"),
    )


def _protocol_order(protocol: str) -> tuple[int, str]:
    return (0 if protocol == "realistic" else 1, protocol)


def _f(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f}"


def render(table: Sequence[Row], *, commands: Sequence[str] = ()) -> str:
    """The page's table: a line per (set, protocol); the product engine's figures, then the
    baselines' first place."""
    by_key: dict[tuple[str, str], dict[str, Row]] = defaultdict(dict)
    for r in table:
        by_key[(r.set, r.protocol)][r.engine] = r
    baselines = [b for b in BASELINES if any(b in engines for engines in by_key.values())]
    head = [
        "set",
        "protocol",
        "cases",
        "AC@1",
        "AC@1 grounded",
        "AC@3",
        "fault type",
        "ECE",
        "ECE learnt",
        "said Likely",
        "Likely right",
        "audit AUROC",
        "s/case",
        *(f"{b} AC@1" for b in baselines),
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (set_name, protocol), engines in by_key.items():
        p = engines.get(PRODUCT_ENGINE)
        if p is None:
            continue
        cells = [
            set_name,
            protocol,
            str(p.cases),
            _f(p.ac1),
            _f(p.ac1_grounded),
            _f(p.ac3),
            _f(p.fault_type),
            _f(p.ece),
            _f(p.ece_learnt),
            f"{p.likely:.0%}",
            _f(p.likely_right),
            _f(p.auroc),
            f"{p.seconds:.2f}",
            *(_f(engines[b].ac1) if b in engines else "–" for b in baselines),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if commands:
        lines += ["", "Made by:", "", "```sh", *commands, "```"]
    return "\n".join(lines)


def plot(table: Sequence[Row]) -> bytes:
    """AC@1 per (set, protocol), one bar per engine, as SVG."""
    # matplotlib (about 20 MiB) is loaded where a plot is drawn, not by every command that
    # reads results (an evaluation only writes them)
    from matplotlib import rc_context
    from matplotlib.backends.backend_svg import FigureCanvasSVG
    from matplotlib.figure import Figure

    keys = sorted({(r.set, r.protocol) for r in table}, key=lambda k: (k[0], _protocol_order(k[1])))
    engines = [e for e in (PRODUCT_ENGINE, *BASELINES) if any(r.engine == e for r in table)]
    value = {(r.set, r.protocol, r.engine): r.ac1 for r in table}
    fig = Figure(figsize=(max(6.0, 0.55 * len(keys) + 2), 4.2), dpi=100)
    FigureCanvasSVG(fig)
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(engines))
    for i, engine in enumerate(engines):
        xs = [k + (i - (len(engines) - 1) / 2) * width for k in range(len(keys))]
        ax.bar(xs, [value.get((*key, engine), 0.0) for key in keys], width, label=engine)
    ax.set_xticks(range(len(keys)), [f"{s}\n{p}" for s, p in keys], rotation=60, ha="right", fontsize=7)
    ax.set_ylim(0, 1)
    ax.set_ylabel("AC@1")
    ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.StringIO()
    with rc_context({"svg.hashsalt": "rcabot-results"}):  # the same ids each run: the same data, the same bytes
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue().encode()


PAGE_HEAD = """# Results: where rcabot stands, in one page

Generated by `make results` (`rcabot report results --out docs/results.md --plot docs/results.svg`)
from the per-case answers `scripts/results.sh` saved under `results/<set>/`: every figure below is
computed from those files, none typed in. Offline, deterministic reasoner, this project's
2-core machine. The method is in [evaluation.md](evaluation.md); experiments that did and did
not land are in [notes/](notes/); the history is in [CHANGELOG.md](../CHANGELOG.md).

Columns: AC@1 and AC@3 = the labelled service first / in the first three; AC@1 grounded = first,
and citing an anomaly begun at the labelled fault's start or after (less the onset tolerance and a
sampling step), not only an earlier fault's (a set that faults one service several times in a
row is right by the earlier fault's evidence too; – where the saved run predates the count); fault type = the first
place's type is the labelled one; ECE = expected calibration error of the verdict's probability
(the shipped `rca/calibration.json` applied to each saved ranking, as a system never marked is
shown it); ECE learnt = the same where each probability has learnt from the marks of the set's
cases before it, as a system whose engineers mark every verdict; said Likely = share of verdicts
headed "Likely" (no tie at the top, probability at least the calibration's threshold), Likely
right = how often those were right;
audit AUROC = the audit's trust ranks right first places above wrong ones (runs with
`--audit`); s/case = median seconds. The last columns are the baselines' AC@1 on the same
windows.
"""


def page(table: Sequence[Row], *, plot_name: str | None = None, lab_page: str | None = None) -> str:
    """The whole results page, from rows with the lab pooled (`tabulate(read_cases(...), pool=lab_pool)`);
    `lab_page` names the page of the lab's sets one by one, where there is one."""
    sets = sorted({r.set for r in table} - {LAB_POOL})
    body = [PAGE_HEAD, f"Sets: {', '.join(sets)}."]
    if any(r.set == LAB_POOL for r in table):
        where = f" ([{lab_page}]({lab_page}) has each set's rows)" if lab_page else ""
        body.append(
            f"`{LAB_POOL}`: every recording of the lab (docs/lab.md), each a fresh system, new to the engine"
            f" when first measured (a round's development sets among them: docs/notes), pooled case by case{where}."
        )
    body += ["", render(table)]
    if plot_name:
        body += ["", f"![AC@1 per set and protocol]({plot_name})"]
    return "\n".join(body) + "\n"


LAB_HEAD = """# Results: the lab's recordings, set by set

Generated with [results.md](results.md) by `make results`, from the same saved answers and
with the same columns; there the sets are pooled. Each set is one `rcabot lab record` of a few
fresh systems (docs/lab.md); a set's figures move by 0.05 with each case of 20.
"""


def lab_page(table: Sequence[Row]) -> str:
    """The lab's sets one by one (rows as `rows` gives them, unpooled), columns as on the
    results page."""
    lab = [r for r in table if r.set.startswith(LAB_PREFIX)]
    sets = sorted({r.set for r in lab})
    return "\n".join([LAB_HEAD, f"Sets: {', '.join(sets)}.", "", render(lab)]) + "\n"
