"""The scoring rules: each holds in any call graph, states its principle in one sentence that
names no system, and can be switched off (`rcabot eval --ablate rule:NAME`) to measure what
it is worth.

A rule reads a `Board` (per-service values, fault types, and what the evidence says about
time and calls) and returns adjusted values; `rca.hypotheses.score_hypotheses` applies them
in a fixed order. Their effect per dataset is in docs/notes/09-the-scoring-rules-each-switched-off.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from rca.errors import InputError


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    principle: str


RULES: tuple[Rule, ...] = (
    Rule(
        "timing",
        "The incident asked about is the one the symptom shows: an anomaly over before it, begun "
        "well after it alerted or after the window opened on it already degraded, or going on since "
        "before the data while the symptom was not, belongs to another.",
    ),
    Rule(
        "unseen",
        "A part of a fault's footprint that only a missing modality could show is as likely absent "
        "as present: it counts at half the strength of the parts that were seen.",
    ),
    Rule(
        "background",
        "A signal that moved in most services at once is background: what points at a service "
        "is how far it stands above the others.",
    ),
    Rule("footprint", "Memory that rose with the CPU, not before it, is the CPU fault's footprint."),
    Rule(
        "delays",
        "A delay is time lost where the service is: on its way in, or in its own work where no "
        "anomalous callee and none of its own resources can account for it.",
    ),
    Rule(
        "raised",
        "An error a service answered with is one it raised: the error lines it wrote while its own "
        "answers failed report an exception, whatever their words.",
    ),
    Rule("comovement", "A cause's metrics move with the symptom's."),
    Rule("reach", "A service the symptom does not call, even indirectly, cannot have caused it."),
    Rule(
        "endpoints",
        "An endpoint seen only from its callers' side that moves with a sibling callee is that "
        "sibling seen through a proxy.",
    ),
    Rule(
        "victims",
        "A service whose anomaly an anomalous callee can explain (one begun no later and still "
        "going, not one it gave up on calls to and sent them again) is that callee's victim.",
    ),
    Rule(
        "calls",
        "A callee's slowness reaches its caller only through their calls: where traces time those "
        "calls and they are not slowed on the callee's side while the caller's anomaly goes on, it "
        "does not explain the caller.",
    ),
    Rule(
        "named_callees",
        "Where a service's failed calls name their callee, only that callee, or what lies behind it, explains them.",
    ),
    Rule(
        "answers",
        "A callee whose anomaly began well after an anomalous caller's work (its calls, answers and logs, "
        "not its process's own resources), or that the calls that caller gave up on and sent again "
        "reach (sent to it, or to a service whose calls reach it), is answering the caller's changed calls.",
    ),
    Rule(
        "changes",
        "The latest change right after which harm to its service began in this incident and lasted while "
        "the change stood (not what a restart moves by itself), before any other service's and before the "
        "symptom was degraded or once an earlier change's harm had all ended, is the first suspect and its "
        "fault the change, unless a neighbour whose anomaly began with it explains that harm; a change with "
        "no harm right after it explains nothing.",
    ),
    Rule(
        "dominance",
        "A service whose own resources shifted an order of magnitude more than any other "
        "service's is the first suspect, whatever else the rules say.",
    ),
)
RULE_NAMES = tuple(r.name for r in RULES)


def principle_of(name: str) -> str:
    """The one-sentence principle of a rule."""
    for r in RULES:
        if r.name == name:
            return r.principle
    raise InputError(f"unknown rule {name!r}; choose from {', '.join(RULE_NAMES)}")


def parse_rules(names: str) -> frozenset[str]:
    """Rule names joined by commas or plus signs, each checked (`rule:NAME`, as `--ablate`
    writes them, or NAME)."""
    out = frozenset(n.strip().removeprefix("rule:") for n in names.replace("+", ",").split(",") if n.strip())
    for n in out:
        principle_of(n)
    return out
