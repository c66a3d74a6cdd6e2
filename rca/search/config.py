"""Search constants, with the LATS-RCA paper's defaults."""

from __future__ import annotations

from dataclasses import dataclass, field

from rca.rules.config import ScoringConfig


@dataclass(frozen=True, slots=True)
class SearchConfig:
    c_uct: float = 1.0  # exploration constant of UCT
    n_candidates: int = 5  # N actions sampled per expansion
    temperature: float = 0.7  # sampling temperature of proposals
    w: float = 0.5  # R = w r + (1 - w) sc
    max_depth: int = 6  # depth limit of a tree
    iterations_per_agent: int = 6  # budget of one agent's turn
    rounds: int = 3  # turns each agent may get from the supervisor
    handoff_r: float = 0.7  # hand off when r falls below this ...
    handoff_c_comp: float = 0.6  # ... or completeness below this
    min_iterations_before_handoff: int = 2
    confirm_value: float = 0.6  # a hypothesis is confirmed at this value ...
    confirm_c_comp: float = 0.85  # ... with this completeness
    seed: int = 0
    backprop: bool = True  # ablation switch
    reflection: bool = True  # ablation switch
    check_top: int = 3  # before deciding, read the neighbourhoods of this many leading suspects
    time_budget: float | None = None  # seconds; past it the search stops and decides on what it has
    read_budget: int | None = None  # reads (rca.evidence.toolbox.Toolbox.cost); spent, it decides likewise
    glance: bool = True  # ablation switch: a logs scan over the read budget glances at error counts (one read)
    peer_spread: bool = True  # ablation switch: a metric normal that never moved is measured in its peers' spread
    silences: bool = True  # ablation switch: a run of a template's lines ends at a silence its rate did not expect
    wrong_answers: bool = True  # ablation switch: calls a callee answered well that its caller failed are its evidence
    repeats: bool = (
        True  # ablation switch: calls a service gave up on and sent again more often than normally are its evidence
    )
    scoring: ScoringConfig = field(default_factory=ScoringConfig)
