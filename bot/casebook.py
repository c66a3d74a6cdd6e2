"""The investigations as the desk reads them back: a stored run's incident, its trace with the
audit stored beside it, and the verdict the fronts show; the workers that keep the engine's
CPU work off the application's event loop.

The engine's CPU work runs in a small pool of worker threads, each with its own event loop, so
the application's loop stays free to acknowledge Slack within its three seconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bot.telemetry import Telemetry
from bot.verdicts import Standing, Verdict
from rca.calibration import Features, shipped
from rca.errors import InputError
from rca.model import Incident
from rca.star.audit import Audit, audit
from rca.star.context import audit_context
from rca.star.criteria import AuditContext
from rca.telemetry import Window
from rca.trace import Trace
from rca.trace_json import from_json
from storage.investigations import Store
from storage.rows import InvestigationRow

KEPT = 64  # recent incidents and audit contexts kept in memory; older ones are rebuilt when asked


class Casebook:
    def __init__(self, *, telemetry: Telemetry, store: Store, workers: int = 2) -> None:
        self.telemetry = telemetry
        self.store = store
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rca-worker")
        self.slots = asyncio.Semaphore(workers)  # held by whatever runs on a worker
        self._incidents: dict[str, Incident] = {}  # recent investigations' incidents, by id
        self._contexts: dict[str, AuditContext] = {}  # their audit contexts, by incident id

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def row(self, id: str) -> InvestigationRow:
        row = await asyncio.to_thread(self.store.investigation, id)
        if row is None:
            raise InputError(f"no investigation {id!r}")
        return row

    async def incident(self, row: InvestigationRow) -> Incident:
        if row.id not in self._incidents:
            window = Window(row.window_start, row.window_end)
            self.remember(row.id, await self.telemetry.incident(row.service, window))
        return self._incidents[row.id]

    def remember(self, id: str, incident: Incident) -> None:
        self._incidents[id] = incident
        while len(self._incidents) > KEPT:  # the oldest are rebuilt from the store when asked
            self._incidents.pop(next(iter(self._incidents)))

    async def verdict(self, id: str) -> Verdict:
        """A finished investigation with its audit and earlier incidents like it."""
        return (await self.verdict_and_incident(id))[0]

    async def verdict_and_incident(self, id: str) -> tuple[Verdict, Incident]:
        """The verdict and the incident it was read from: one lookup, one audit."""
        row = await self.row(id)
        if row.trace is None:
            raise InputError(f"investigation {id} has no result ({row.status}{': ' + row.error if row.error else ''})")
        incident = await self.incident(row)
        trace, verdict_audit = await self.audited(incident, row.trace, stored=row.audit)
        similar = await asyncio.to_thread(
            self.store.similar,
            channel=row.channel,
            top_service=row.top_service,
            top_fault=row.top_fault,
            before=row.created,
        )
        earlier = await asyncio.to_thread(self.store.trusts, before=row.created)
        marks = await asyncio.to_thread(self.store.marks, before=row.created)
        learnt = shipped().adapted([(Features.from_json(f), right) for f, right in marks])
        verdict = Verdict(
            row.id,
            row.service,
            Window(row.window_start, row.window_end),
            trace,
            verdict_audit,
            tuple(similar),
            Standing.among(verdict_audit.trust, earlier),
            learnt,
        )
        return verdict, incident

    async def audit_context(self, incident: Incident) -> AuditContext:
        """The audit's view of an incident (a scan of its telemetry), read once per incident."""
        ctx = self._contexts.get(incident.id)
        if ctx is None:  # a scan of every modality: seconds of CPU, kept off the event loop (acks wait on it)
            ctx = self._contexts[incident.id] = await self.in_thread(audit_context, incident)
            while len(self._contexts) > KEPT:
                self._contexts.pop(next(iter(self._contexts)))
        return ctx

    async def audited(
        self, incident: Incident, doc: dict[str, Any], stored: Mapping[str, Any] | None = None
    ) -> tuple[Trace, Audit]:
        """A stored trace read back (schema-checked) with its audit, off the event loop: the
        audit stored with it where that one is whole (no scan of the telemetry), else audited
        again (one stored before audits were kept whole)."""
        if stored is not None:
            try:
                kept = Audit.from_json(stored)
            except (KeyError, TypeError, ValueError):
                pass
            else:
                return await asyncio.to_thread(from_json, doc), kept
        ctx = await self.audit_context(incident)

        def read() -> tuple[Trace, Audit]:
            trace = from_json(doc)
            return trace, audit(trace, ctx)

        return await asyncio.to_thread(read)

    async def in_worker(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run fn (sync, or async in a fresh loop) on one of the investigation workers."""
        async with self.slots:
            return await asyncio.get_running_loop().run_in_executor(self._pool, call, fn, *args)

    def submit(self, fn: Callable[[], None]) -> asyncio.Future[None]:
        """Start fn on a worker, for a caller that holds a slot and awaits it later."""
        return asyncio.get_running_loop().run_in_executor(self._pool, fn)

    @staticmethod
    async def in_thread(fn: Callable[..., Any], *args: Any) -> Any:
        """Run short follow-up work (sync, or async in a fresh loop) off the event loop."""
        return await asyncio.to_thread(call, fn, *args)


def call(fn: Callable[..., Any], *args: Any) -> Any:
    """fn(*args), run to its end in a fresh event loop where it is a coroutine function."""
    out = fn(*args)
    return asyncio.run(out) if asyncio.iscoroutine(out) else out
