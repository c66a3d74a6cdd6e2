"""What the desk hands its fronts: a started run, a finished verdict with its audit and
calibrated probability, a chart, a channel's summary; and the pure reading of a verdict
(which metric shows it best, the verdict after a repair)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rca.calibration import Calibration, Features, features, shipped
from rca.decision import tied
from rca.errors import InputError
from rca.explain import ChartRequest
from rca.model import Incident, Modality
from rca.star.audit import Audit
from rca.star.repair import RepairResult
from rca.telemetry import Window
from rca.trace import Trace
from storage.rows import InvestigationRow

ALERTMANAGER = "alertmanager"  # the user an alert-started investigation is recorded under


@dataclass(frozen=True, slots=True)
class Run:
    """One investigation the desk has started."""

    id: str
    service: str
    window: Window
    channel: str
    user: str
    started: float
    incident: Incident = field(repr=False, compare=False)


class AlreadyRunning(InputError):
    """An investigation of this service is already running in this channel."""

    def __init__(self, run: Run | None, service: str) -> None:
        super().__init__(f"an investigation of {service} is already running here")
        self.run = run


@dataclass(frozen=True, slots=True)
class Standing:
    """Where a verdict's trust (rca.star.audit.Audit.trust) stands among the bot's earlier
    verdicts. The audit orders verdicts well by how likely they are wrong, but no principle
    sets a trust value below which one is: so the bot flags the quarter of its verdicts it
    trusts least (docs/notes/10-does-the-audit-say-when-the-answer-is-wrong.md: right about half the time, the rest about nine in ten),
    once it has given enough verdicts to tell a quarter."""

    above: int  # earlier verdicts the audit trusted more
    of: int  # earlier verdicts compared with

    MIN_PAST = 20
    DOUBTFUL_SHARE = 0.75

    @classmethod
    def among(cls, trust: float, earlier: Sequence[float]) -> Standing:
        return cls(sum(1 for t in earlier if t > trust), len(earlier))

    @property
    def doubtful(self) -> bool:
        return self.of >= self.MIN_PAST and self.above >= self.DOUBTFUL_SHARE * self.of


@dataclass(frozen=True, slots=True)
class Verdict:
    """A finished investigation: its trace and STAR's audit of it."""

    id: str
    service: str
    window: Window
    trace: Trace
    audit: Audit
    similar: tuple[InvestigationRow, ...] = ()  # earlier incidents with the same verdict
    standing: Standing | None = None  # where its trust stands among the bot's earlier verdicts
    calibration: Calibration | None = None  # learnt from the bot's marked verdicts (None: as shipped)

    @property
    def calibrated(self) -> Calibration:
        return self.calibration or shipped()

    @property
    def probability(self) -> float:
        """How often first places like this one were right (rca.calibration, as shipped, then
        shifted by what engineers marked of earlier verdicts)."""
        return self.calibrated.probability(self.features)

    @property
    def features(self) -> Features:
        """What the calibration reads of the verdict's ranking."""
        confidences = [confidence for _, _, confidence, _ in self.trace.decision.ranking]
        return features(confidences, sum(self.trace.evidence_package.modalities.values()))

    @property
    def leaders(self) -> tuple[str, ...]:
        """The services the evidence cannot tell apart at the top (one where it can)."""
        return tuple(h.service for h in tied(self.trace.hypotheses))

    @property
    def likely(self) -> bool:
        """Whether the first place may be called likely: no tie at the top, and first places
        like it were right at least 95 % of the time."""
        return self.calibrated.says_likely(self.features, len(self.leaders))


@dataclass(frozen=True, slots=True)
class Chart:
    png: bytes
    title: str


@dataclass(frozen=True, slots=True)
class Summary:
    start: float
    end: float
    rows: tuple[InvestigationRow, ...]
    repaired: frozenset[str]  # investigation ids with a repair
    feedback: dict[str, bool]  # investigation id -> last feedback: correct?

    @property
    def accuracy(self) -> float | None:
        return sum(self.feedback.values()) / len(self.feedback) if self.feedback else None

    @property
    def from_alerts(self) -> tuple[int, int, int]:
        """Investigations an alert started: how many, how many have feedback, how many marked right."""
        ids = [r.id for r in self.rows if r.user == ALERTMANAGER]
        judged = [self.feedback[i] for i in ids if i in self.feedback]
        return len(ids), len(judged), sum(judged)


def decisive_signal(trace: Trace) -> ChartRequest | None:
    """The root cause's most anomalous metric, or the strongest metric on its causal chain."""
    if not trace.hypotheses:
        return None
    lead = trace.hypotheses[0]
    metrics = [ev for ev in trace.evidence_package.evidence if ev.modality is Modality.METRICS]
    own = [ev for ev in metrics if ev.entity == lead.service]
    chain = next((c for c in trace.chains if c.hypothesis == lead.id), None)
    on_chain = {ln.source for ln in chain.links} | {ln.target for ln in chain.links} if chain else set()
    pool = own or [ev for ev in metrics if ev.entity in on_chain]
    if not pool:
        return None
    best = max(pool, key=lambda ev: ev.score)
    return ChartRequest(best.entity, best.subject)


def replace_verdict(before: Verdict, result: RepairResult) -> Verdict:
    return Verdict(
        before.id,
        before.service,
        before.window,
        result.trace,
        result.after,
        before.similar,
        calibration=before.calibration,
    )
