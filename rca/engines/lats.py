"""LATS-RCA and the paper's comparisons as engines over the same tools and reasoner."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, replace

from rca.errors import InputError
from rca.model import Candidate, Diagnosis, FaultType, Incident
from rca.reasoners import Reasoner
from rca.reasoners.offline import OfflineReasoner
from rca.rules import parse_rules
from rca.rules.answers import DOWNSTREAM
from rca.rules.changes import UNDONE, WAITS
from rca.rules.timing import ASKED_LATE, REOPEN, RESIDUE
from rca.search.actions import AgentKind
from rca.search.config import SearchConfig
from rca.search.events import Event, Finished
from rca.search.supervisor import run_search
from rca.trace_json import cost_from_json


@dataclass(frozen=True, slots=True)
class Variant:
    """How an engine drives the search."""

    name: str
    order: tuple[AgentKind, ...]
    config: SearchConfig


def linear_config(base: SearchConfig, *, steps: int) -> SearchConfig:
    """A ReAct-style trajectory: one action per step, no branching, no tree to select in, and
    no closing check of the suspects' neighbourhoods."""
    return replace(
        base,
        n_candidates=1,
        iterations_per_agent=steps,
        max_depth=steps,
        rounds=1,
        handoff_r=0.0,
        handoff_c_comp=0.0,
        check_top=0,
    )


VARIANTS: dict[str, Variant] = {
    "lats": Variant("lats", (AgentKind.METRIC, AgentKind.TRACE, AgentKind.LOG), SearchConfig()),
    "linear": Variant("linear", (AgentKind.METRIC,), linear_config(SearchConfig(), steps=8)),
    "linear-multi": Variant(
        "linear-multi", (AgentKind.LOG, AgentKind.METRIC, AgentKind.TRACE), linear_config(SearchConfig(), steps=4)
    ),
}

ABLATIONS = (
    "batching",
    "backprop",
    "reflection",
    "check",
    "glance",
    "peer-spread",
    "silences",
    "wrong-answers",
    "repeats",
    ASKED_LATE,
    REOPEN,
    RESIDUE,
    UNDONE,
    WAITS,
    DOWNSTREAM,
)


def ablate(config: SearchConfig, what: str) -> SearchConfig:
    """The paper's ablations (one candidate per expansion, no backpropagation, no reflection),
    ours (no closing check of the leading suspects' neighbourhoods; no glance at every
    service's error-line counts where the budget cannot pay for their lines; a metric normal that
    never moved measured at the floor, not in its peers' spread; one run of a log template's lines
    across every silence; no callee's wrong answers read
    from the calls its callers failed; no calls a service gave up on and sent again read as its own), and any scoring rule (`rule:NAME`, see rca.rules)."""
    if what.startswith("rule:"):
        rules = parse_rules(what.removeprefix("rule:"))
        return replace(config, scoring=replace(config.scoring, off=config.scoring.off | rules))
    if what == "batching":
        return replace(config, n_candidates=1)
    if what == "backprop":
        return replace(config, backprop=False)
    if what == "reflection":
        return replace(config, reflection=False)
    if what == "check":
        return replace(config, check_top=0)
    if what == "glance":
        return replace(config, glance=False)
    if what == "peer-spread":
        return replace(config, peer_spread=False)
    if what == "silences":
        return replace(config, silences=False)
    if what == "wrong-answers":
        return replace(config, wrong_answers=False)
    if what == "repeats":
        return replace(config, repeats=False)
    if what in (ASKED_LATE, REOPEN, RESIDUE, UNDONE, WAITS, DOWNSTREAM):
        return replace(config, scoring=replace(config.scoring, off=config.scoring.off | {what}))
    raise InputError(f"unknown ablation {what!r}; choose from {', '.join(ABLATIONS)} or rule:NAME")


class SearchEngine:
    """An engine that runs the supervised search and reads its trace."""

    def __init__(self, variant: Variant, *, reasoner: Reasoner | None = None, name: str | None = None) -> None:
        self.variant = variant
        self.reasoner = reasoner or OfflineReasoner(temperature=variant.config.temperature)
        self.name = name or variant.name

    def stream(self, incident: Incident) -> AsyncIterator[Event]:
        """The investigation's progress events, ending with Finished."""
        return run_search(
            incident, reasoner=self.reasoner, config=self.variant.config, order=self.variant.order, engine=self.name
        )

    async def investigate(self, incident: Incident) -> Diagnosis:
        finished: Finished | None = None
        async for event in self.stream(incident):
            if isinstance(event, Finished):
                finished = event
        assert finished is not None
        return diagnosis_of(incident, self.name, finished.trace)


def diagnosis_of(incident: Incident, engine: str, trace: dict) -> Diagnosis:
    """The Diagnosis an evaluation reads, from a trace's decision report."""
    hyps = {h["id"]: h for h in trace["hypothesis_set"]["hypotheses"]}
    details = {ev["id"]: ev["detail"] for ev in trace["evidence_package"]["evidence"]}
    ranking = tuple(
        Candidate(
            service=r["service"],
            score=r["confidence"],
            fault_type=FaultType(r["fault_type"]),
            evidence=tuple(dict.fromkeys(details[i] for i in hyps[r["hypothesis"]]["evidence"] if i in details))[:3],
        )
        for r in trace["decision_report"]["ranking"]
    )
    cost = cost_from_json(trace["cost"])
    missing = tuple(trace["evidence_package"]["missing"])
    return Diagnosis(incident.id, engine, ranking, missing, cost, trace)
