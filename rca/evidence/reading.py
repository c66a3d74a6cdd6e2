"""Bounded, budgeted reads of one incident's telemetry: what every evidence tool of a toolbox
(rca.evidence.toolbox) stands on. A backend read is bounded in time and a failure marks its
modality unavailable, saying why; a first read of a service is charged to the read budget,
a repeat is free and finds the same evidence; what the data lack is said, never hidden.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import networkx as nx
import numpy as np

from rca.errors import DataError
from rca.evidence import Evidence, EvidenceId, EvidenceKind
from rca.model import Incident, Modality
from rca.signals import Signal
from rca.sources.protocols import SpanQuery
from rca.telemetry import Series, Span, SpanTable, to_iso

T = TypeVar("T")
R = TypeVar("R", bound="Reader")
READ_TIMEOUT = 120.0  # the longest any one backend read may take; each source bounds its own queries first


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What one tool call returned: evidence, or a plain reason why there is none."""

    tool: str
    target: str
    query: str
    evidence: tuple[Evidence, ...]
    status: str = "ok"  # ok | no_data | unavailable
    leads: tuple[str, ...] = ()  # entities a scan ranked, most anomalous first


def memoised(tool: Callable[[R, str], Awaitable[ToolResult]]) -> Callable[[R, str], Awaitable[ToolResult]]:
    """A read repeated within an investigation costs nothing and finds the same evidence (the
    same ids): the window and sources do not change while it runs. A first read is charged to
    the read budget (see `Reader.cost`) unless the backend holds nothing of the service;
    past the budget it returns nothing, said once."""

    @functools.wraps(tool)
    async def read(self: R, entity: str) -> ToolResult:
        key = (tool.__name__, entity)
        if key not in self._done:
            if await self._listed(tool.__name__, entity) and not self._charge(self.cost(tool.__name__)):
                return ToolResult(tool.__name__, entity, f"{tool.__name__}{{entity={entity}}}", (), "budget")
            self._done[key] = await tool(self, entity)
        return self._done[key]

    return read


# What one read costs against the budget, as the live backends are queried: one PromQL range
# query reads every service's metrics at once (a scan of them, after which each service's
# metrics are already read); a Loki query covers one service's selector, a Jaeger search one
# service, so a scan of logs or traces costs one read per service it has not read yet.
BULK = frozenset(["metrics"])


class PlacedShift(Protocol):
    """A shift placed in time, as the tools' analyses give one (a metric's, a timing's)."""

    @property
    def score(self) -> float: ...
    @property
    def onset(self) -> float | None: ...
    @property
    def profile(self) -> tuple[tuple[float, float], ...]: ...
    @property
    def until(self) -> float | None: ...
    @property
    def under_way(self) -> bool: ...


class Reader:
    """What every tool of a toolbox shares: the incident, the bounded reads, the read budget,
    the evidence ids, the call graph, the spans (logs and traces both read them) and what is
    missing."""

    def __init__(self, incident: Incident, *, budget: int | None = None) -> None:
        self.incident = incident
        self.budget = budget  # reads an investigation may make; None: as many as it wants
        self.reads = 0  # reads made so far (repeats are free)
        self._ids = itertools.count(1)
        self._done: dict[tuple[str, str], ToolResult] = {}  # (tool, entity) -> its result, read once
        self._bulk: set[str] = set()  # tools a scan has read for every service at once
        self._lock = asyncio.Lock()
        self._read_spans: tuple[Sequence[Span], Sequence[Span]] | None = None
        self._graph: nx.DiGraph | None = None
        self.missing: list[str] = list(incident.missing())
        self.failed: set[str] = set()  # modalities whose backend failed while reading

    def modalities(self) -> frozenset[Modality]:
        """The modalities this incident has sources for and that could be read."""
        return frozenset(Modality(m) for m, ok in self.available().items() if ok)

    def available(self) -> dict[str, bool]:
        """Per modality: a source exists and has not failed."""
        return {m: ok and m not in self.failed for m, ok in self.incident.sources.modalities().items()}

    async def _read(self, modality: str, read: Awaitable[T], default: T) -> T:
        """A backend read, bounded; a failure marks the modality unavailable and says why."""
        try:
            async with asyncio.timeout(READ_TIMEOUT):
                return await read
        except (DataError, TimeoutError) as exc:
            if modality not in self.failed:
                self.failed.add(modality)
                reason = str(exc) or f"no answer within {READ_TIMEOUT:.0f} s"
                self.missing.append(f"{modality}: unavailable ({reason[:200]})")
            return default

    def _say_if_empty(self, modality: str, records: Sequence[object]) -> None:
        """A source that answered but holds nothing for the window is missing all the same."""
        if not records and modality not in self.failed:
            self.missing.append(f"{modality}: no records in the window")

    def _say_coverage(self, series: Sequence[Series]) -> None:
        """Where the data hold less of the window than was asked (a gap of more than two
        samples at either end), say which part they cover."""
        held = [s for s in series if len(s)]
        if not held:
            return
        first = min(float(s.timestamps[0]) for s in held)
        last = max(float(s.timestamps[-1]) for s in held)
        steps = [float(np.median(np.diff(s.timestamps))) for s in held if len(s) > 1]
        step = float(np.median(steps)) if steps else 0.0
        window = self.incident.window
        if first - window.start > 2 * step or window.end - last > 2 * step:
            self.missing.append(
                f"metrics cover only {to_iso(first)} to {to_iso(last)} of the window asked "
                f"({(last - first) / 60:.0f} of {window.seconds / 60:.0f} min)"
            )

    @property
    def exhausted(self) -> bool:
        return self.budget is not None and self.reads >= self.budget

    async def _listed(self, tool: str, entity: str) -> bool:
        """Whether the backend a tool reads holds the service at all, as the backends tell for
        free (each modality's tools say for theirs): a read of one it does not hold finds
        nothing and costs nothing."""
        return True

    def cost(self, tool: str) -> int:
        """Reads a first call of this tool on one service costs (0 after a bulk read of it)."""
        return 0 if tool in self._bulk else 1

    def _affordable(self, reads: int) -> bool:
        return self.budget is None or self.reads + reads <= self.budget

    def _charge(self, reads: int) -> bool:
        """Spend reads from the budget; False, and said once, when they are not there."""
        if not self._affordable(reads):
            note = f"read budget of {self.budget} spent: the search decided on what it had read"
            if note not in self.missing:
                self.missing.append(note)
            return False
        self.reads += reads
        return True

    def _next_id(self) -> EvidenceId:
        return EvidenceId(f"ev-{next(self._ids)}")

    def _placed(
        self,
        shift: PlacedShift,
        modality: Modality,
        kind: EvidenceKind,
        entity: str,
        subject: str,
        signal: Signal,
        query: str,
        detail: str,
        direction: int = 1,
    ) -> Evidence:
        """Evidence of a shift placed in time: its score and run (onset, profile, until)."""
        return Evidence(
            id=self._next_id(),
            modality=modality,
            kind=kind,
            entity=entity,
            subject=subject,
            score=shift.score,
            signal=signal,
            query=query,
            detail=detail,
            onset=shift.onset,
            direction=direction,
            profile=shift.profile,
            until=shift.until,
            under_way=shift.under_way,
        )

    async def topology(self) -> nx.DiGraph:
        """The call graph, caller -> callee; empty when no topology source exists."""
        if self._graph is None:
            src = self.incident.sources.topology
            graph = await self._read("topology", src.topology(), nx.DiGraph()) if src is not None else nx.DiGraph()
            if src is None:
                self.missing.append("topology: absent")
            elif "topology" not in self.failed and graph.number_of_edges() == 0:
                self.missing.append("topology: no calls seen")
            self._graph = graph
        return self._graph

    async def _span_reads(self) -> tuple[Sequence[Span], Sequence[Span]]:
        """The normal period's spans and the window's, read once (under the lock): the
        trace tool times them, the log tool finds the requests a service served silently."""
        if self._read_spans is None:
            ref: Sequence[Span] = []
            now: Sequence[Span] = []
            src = self.incident.sources.traces
            if src is not None:
                normal = self.incident.normal_for(Modality.TRACES)
                window = normal.window if normal is not None else self.incident.window
                readers = [p.traces for p in normal.parts() if p.traces is not None] if normal is not None else []
                ref = SpanTable.concat([await self._read("traces", r.spans(SpanQuery(window)), []) for r in readers])
                if not readers:
                    self.missing.append("normal traces: absent, no latency baseline")
                elif not len(ref) and "traces" not in self.failed:  # read, and empty: said, not passed over
                    self.missing.append("normal traces: none recorded before the window, no latency baseline")
                now = await self._read("traces", src.spans(SpanQuery(self.incident.window)), [])
                self._say_if_empty("traces", now)
            self._read_spans = (ref, now)
        return self._read_spans
