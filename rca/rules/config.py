"""The rules' constants and switches, and the fault model they weigh: one frozen value, the
same for every system, that `bench/perturb.py` scales all at once and `--ablate rule:NAME`
switches a rule off in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from rca.fault_model import FaultModel, scaled_fields
from rca.rules.victims import VictimTerms


@dataclass(frozen=True, slots=True)
class ScoringConfig:
    """Constants of the hypothesis value; the same for every system. `off` names the rules
    (rca.rules.RULES) switched off, for ablations."""

    past_weight: float = 0.4  # an anomaly over, or under way before the data, is another incident's
    victim_factor: float = 0.55  # a service explained by an anomalous callee keeps this share
    victim_ratio: float = 0.7  # the callee must carry at least this share of the value
    victim_hops: int = 3
    # errors propagate to callers: a callee whose own errors carry a fifth of a service's value
    # explains that service's errors, and the service keeps less
    error_victim_factor: float = 0.3
    error_victim_ratio: float = 0.2
    # an endpoint seen only from outside is its sibling seen from the caller when their
    # anomalies move together this closely and the sibling carries this share of its value
    endpoint_comove: float = 0.5
    endpoint_sibling_ratio: float = 0.5
    # an erring service is explained by a callee that only slowed or starved when that callee
    # stands out about as much (most slowness never turns into failures)
    mismatch_victim_ratio: float = 0.85
    # a slow service is explained by a callee that only fails when that callee carries its
    # whole value (a failing call returns fast; it slows its caller only through retries)
    slow_by_errors_ratio: float = 1.0
    unreachable_factor: float = 0.5  # a service the symptom does not call, even indirectly
    comove_floor: float = 0.5  # a service whose series ignore the symptom's keeps this share
    background_quantile: float = 0.75  # a component's level in most services is background
    dominance_factor: float = 10.0  # "far more": an order of magnitude
    model: FaultModel = field(default_factory=FaultModel)
    off: frozenset[str] = frozenset()

    def on(self, rule: str) -> bool:
        """Whether a rule is applied."""
        return rule not in self.off

    def scaled(self, factor: Callable[[], float]) -> ScoringConfig:
        """Every float of the config and of its fault model times its own `factor()`; counts
        and switches as they are. Drawn at random, another sampling of the same reasoner (what
        an independent replay scores with; `bench/perturb.py` draws many)."""
        changes = scaled_fields(self, factor)  # drawn before the model's
        return replace(self, model=self.model.scaled(factor), **changes)  # type: ignore[arg-type]

    def victim_terms(self) -> VictimTerms:
        return VictimTerms(
            keep=self.victim_factor,
            error_keep=self.error_victim_factor,
            ratio=self.victim_ratio,
            error_ratio=self.error_victim_ratio,
            mismatch_ratio=self.mismatch_victim_ratio,
            slow_by_errors_ratio=self.slow_by_errors_ratio,
            hops=self.victim_hops,
            named_callees=self.on("named_callees"),
            calls=self.on("calls"),
        )
