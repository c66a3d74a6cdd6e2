"""What each scoring rule does on the sets it is measured on: from `rcabot eval --ablate
rule:A,rule:B,...` results (one file per set and protocol, lats beside each
`lats-no-rule:NAME`), the first places and fault types each rule's absence gains and costs,
file by file, and which rules' absence costs nothing on any file (the candidates for removal
issue 40 asks for; one that also gains nowhere does no work on these sets).

    rcabot eval <set> --engine lats --ablate rule:timing,rule:unseen,... [--protocol P] --json F

usage: python -m bench.rules RESULT.json[.gz] [...] [--cases]
  (--cases: name the cases each rule's absence gains and loses)
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rca.evaluation.results import read, saved_outcome

BASE = "lats"
SWITCHED_OFF = "lats-no-rule:"  # how `rcabot eval --ablate rule:NAME` names the engine without it


@dataclass(frozen=True, slots=True)
class Delta:
    """What a rule's absence changed on one file's cases, against the engine with it."""

    first: int  # first places right without it, less those with it
    typed: int  # the same for first places whose fault type is the labelled one
    gained: tuple[str, ...]  # cases right without it and wrong with it
    lost: tuple[str, ...]  # cases right with it and wrong without it


Firsts = dict[str, dict[str, tuple[bool, bool]]]  # engine -> case -> (first place right, its type right)


def firsts(path: Path) -> Firsts:
    """Per engine and case of one `rcabot eval --json` file: whether its first place is the
    labelled service, and whether its type is the labelled one (as the results page counts
    them)."""
    out: Firsts = {}
    for case in read(path)["cases"]:
        o = saved_outcome(case)
        out.setdefault(o.engine, {})[o.case_id] = (o.right, o.top_fault == o.truth_fault)
    return out


def deltas(found: Firsts) -> dict[str, Delta]:
    """Per rule switched off in the file, what its absence changed (only cases both engines ran)."""
    base = found.get(BASE)
    if base is None:
        raise ValueError(f"no {BASE} results to weigh the rules against")
    out = {}
    for engine, cases in found.items():
        if not engine.startswith(SWITCHED_OFF):
            continue
        both = [c for c in cases if c in base]
        out[engine.removeprefix(SWITCHED_OFF)] = Delta(
            sum(cases[c][0] for c in both) - sum(base[c][0] for c in both),
            sum(cases[c][1] for c in both) - sum(base[c][1] for c in both),
            tuple(sorted(c for c in both if cases[c][0] and not base[c][0])),
            tuple(sorted(c for c in both if base[c][0] and not cases[c][0])),
        )
    return out


def free(table: Mapping[str, Mapping[str, Delta]]) -> list[str]:
    """The rules whose absence cost no first place and no fault type on any file that
    switched them off."""
    rules = {rule for per_file in table.values() for rule in per_file}
    return sorted(
        rule
        for rule in rules
        if all(d.first >= 0 and d.typed >= 0 for per_file in table.values() if (d := per_file.get(rule)) is not None)
    )


def _cell(d: Delta | None) -> str:
    return "" if d is None else f"{d.first:+d} / {d.typed:+d}"


def render(table: Mapping[str, Mapping[str, Delta]], *, cases: bool = False) -> str:
    """A markdown table: a row per rule, a column per file (first places / fault types its
    absence changed), then which rules cost nothing anywhere."""
    files = list(table)
    rules = sorted({rule for per_file in table.values() for rule in per_file})
    lines = [
        "| rule off | " + " | ".join(files) + " |",
        "|---|" + "---|" * len(files),
        *(f"| {rule} | " + " | ".join(_cell(table[f].get(rule)) for f in files) + " |" for rule in rules),
    ]
    costless = free(table)
    lines.append("")
    lines.append("costs nothing anywhere: " + (", ".join(costless) if costless else "none"))
    if cases:
        for f in files:
            for rule, d in sorted(table[f].items()):
                if d.gained or d.lost:
                    lines.append(f"{f} {rule}: gains {', '.join(d.gained) or '-'}; loses {', '.join(d.lost) or '-'}")
    return "\n".join(lines)


def label(path: Path) -> str:
    """A file's column: its name without `.json` and `.gz`."""
    return path.name.removesuffix(".gz").removesuffix(".json")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rules", description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path, help="rcabot eval --ablate rule:... --json files")
    parser.add_argument("--cases", action="store_true", help="name the cases each rule's absence gains and loses")
    args = parser.parse_args(argv)
    table = {label(p): deltas(firsts(p)) for p in args.results}
    print(render(table, cases=args.cases))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
