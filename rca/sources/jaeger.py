"""Spans from a live Jaeger (its HTTP query API, the one its UI uses) and from OTLP JSON files;
the call graph discovered from them (rca.sources.memory.topology_from_spans)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import aiohttp
import networkx as nx
import yaml

from rca.errors import DataError, MalformedFile
from rca.sources import http
from rca.sources.files import signature
from rca.sources.memory import InMemoryTraces, topology_from_spans
from rca.sources.protocols import SpanQuery
from rca.telemetry import Span, SpanStatus, SpanTable, Window

TRACES_PER_SERVICE = 1500  # Jaeger's search limit per service and window


class JaegerTraces:
    """A TraceSource over Jaeger's query API (`/api/services`, `/api/traces`)."""

    def __init__(self, url: str, *, timeout: float = 10.0, concurrency: int = 4) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.concurrency = concurrency

    async def services(self) -> tuple[str, ...]:
        async with self._session() as session:
            data = await self._get(session, "/api/services", {})
        return tuple(sorted(str(s) for s in data or [] if isinstance(s, str) and s != "jaeger-query"))

    async def spans(self, query: SpanQuery) -> list[Span]:
        services = query.entities or await self.services()
        limit = asyncio.Semaphore(self.concurrency)
        async with self._session() as session:

            async def one(service: str) -> list[dict[str, Any]]:
                params = {
                    "service": service,
                    "start": str(int(query.window.start * 1e6)),
                    "end": str(int(query.window.end * 1e6)),
                    "limit": str(TRACES_PER_SERVICE),
                }
                async with limit:
                    return list(await self._get(session, "/api/traces", params) or [])

            batches = await asyncio.gather(*(one(s) for s in services))
        seen: dict[tuple[str, str], Span] = {}
        for trace in (t for batch in batches for t in batch):  # one trace may come back for several services
            for span in jaeger_spans(trace):
                seen[(span.trace_id, span.span_id)] = span
        wanted = set(query.entities)
        return sorted(
            (s for s in seen.values() if query.window.contains(s.start) and (not wanted or s.entity in wanted)),
            key=lambda s: s.start,
        )

    def _session(self) -> aiohttp.ClientSession:
        return http.session(self.timeout)

    async def _get(self, client: aiohttp.ClientSession, path: str, params: dict[str, str]) -> Any:
        def ok(status: int, body: Any) -> str | None:
            good = status == 200 and isinstance(body, dict) and not body.get("errors")
            return None if good else str(body)

        body = await http.get_json(client, self.url + path, params, who=f"jaeger at {self.url}", what=path, ok=ok)
        return body.get("data")


def jaeger_spans(trace: dict[str, Any]) -> list[Span]:
    """Spans of one trace in Jaeger's JSON (microsecond times, processes by id)."""
    processes = trace.get("processes", {})
    out = []
    for s in trace.get("spans", []):
        parent = next((r.get("spanID", "") for r in s.get("references", []) if r.get("refType") == "CHILD_OF"), "")
        tags = {t.get("key"): t.get("value") for t in s.get("tags", [])}
        error = tags.get("error") in (True, "true") or str(tags.get("otel.status_code", "")).upper() == "ERROR"
        service = processes.get(s.get("processID"), {}).get("serviceName", "")
        start = float(s.get("startTime", 0)) / 1e6
        out.append(
            Span(
                str(s.get("traceID", trace.get("traceID", ""))),
                str(s.get("spanID", "")),
                str(parent),
                str(service),
                str(s.get("operationName", "")),
                start,
                start + float(s.get("duration", 0)) / 1e6,
                SpanStatus.ERROR if error else SpanStatus.OK,
            )
        )
    return out


def otlp_spans(doc: dict[str, Any]) -> list[Span]:
    """Spans of one OTLP/JSON export (`resourceSpans` -> `scopeSpans` -> `spans`)."""
    out = []
    for rs in doc.get("resourceSpans", []):
        attrs = {a.get("key"): a.get("value", {}) for a in rs.get("resource", {}).get("attributes", [])}
        service = str(attrs.get("service.name", {}).get("stringValue", ""))
        instance = str(attrs.get("k8s.pod.name", attrs.get("service.instance.id", {})).get("stringValue", ""))
        for ss in rs.get("scopeSpans", rs.get("instrumentationLibrarySpans", [])):
            for s in ss.get("spans", []):
                code = s.get("status", {}).get("code", 0)
                status = (
                    SpanStatus.ERROR
                    if code in (2, "STATUS_CODE_ERROR")
                    else (SpanStatus.OK if code in (1, "STATUS_CODE_OK") else SpanStatus.UNSET)
                )
                out.append(
                    Span(
                        str(s.get("traceId", "")),
                        str(s.get("spanId", "")),
                        str(s.get("parentSpanId", "")),
                        service,
                        str(s.get("name", "")),
                        int(s.get("startTimeUnixNano", 0)) / 1e9,
                        int(s.get("endTimeUnixNano", 0)) / 1e9,
                        status,
                        instance,
                    )
                )
    return out


def read_otlp(paths: Iterable[Path]) -> InMemoryTraces:
    """Spans from OTLP/JSON files: one export per file, or one per line (the collector's file exporter)."""
    spans: list[Span] = []
    for path in paths:
        try:
            text = path.read_text()
        except OSError as exc:
            raise DataError(f"{path}: cannot be read ({exc})") from exc
        docs: list[Any] = []
        try:
            docs = [json.loads(text)]
        except json.JSONDecodeError:
            try:
                docs = [json.loads(line) for line in text.splitlines() if line.strip()]
            except json.JSONDecodeError as exc:
                raise MalformedFile(path, f"not OTLP JSON ({exc})") from exc
        for doc in docs:
            if not isinstance(doc, dict) or "resourceSpans" not in doc:
                raise MalformedFile(path, "no resourceSpans: not an OTLP/JSON trace export")
            spans.extend(otlp_spans(doc))
    return InMemoryTraces(spans)


class OtlpFiles:
    """A SpanSource over OTLP/JSON files (one file, or every `*.json*` in a directory), kept in
    memory and read again when a file appears, grows or changes (a collector's file exporter
    keeps appending)."""

    def __init__(self, path: Path) -> None:
        if not path.exists():
            raise DataError(f"{path}: no OTLP/JSON trace file or directory there")
        self.path = path
        self._spans: InMemoryTraces | None = None
        self._read_at: tuple[tuple[str, int, int], ...] = ()
        self._lock = asyncio.Lock()

    def files(self) -> list[Path]:
        return sorted(self.path.glob("*.json*")) if self.path.is_dir() else [self.path]

    async def _current(self) -> InMemoryTraces:
        async with self._lock:
            files = self.files()
            now = signature(files)
            if self._spans is None or now != self._read_at:
                self._spans, self._read_at = await asyncio.to_thread(read_otlp, files), now
            return self._spans

    async def spans(self, query: SpanQuery) -> SpanTable:
        return await (await self._current()).spans(query)

    async def services(self) -> tuple[str, ...]:
        every = await (await self._current()).spans(SpanQuery(Window(0, 2**33)))
        return tuple(sorted(set(every.entity.tolist())))


class TraceTopology:
    """The call graph read from the spans of a window (the look-back hour before it)."""

    def __init__(self, traces: JaegerTraces | InMemoryTraces | OtlpFiles, window: Window) -> None:
        self.traces = traces
        self.window = window

    async def topology(self) -> nx.DiGraph:
        return topology_from_spans(await self.traces.spans(SpanQuery(self.window)))


def topology_file(path: Path) -> nx.DiGraph:
    """A call graph from YAML: `calls: {caller: [callee, ...]}`."""
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise MalformedFile(path, f"not a readable YAML topology ({exc})") from exc
    calls = doc.get("calls") if isinstance(doc, dict) else None
    if not isinstance(calls, dict):
        raise MalformedFile(path, "expected `calls: {caller: [callee, ...]}`")
    graph = nx.DiGraph()
    for caller, callees in calls.items():
        graph.add_node(str(caller))
        for callee in callees or []:
            graph.add_edge(str(caller), str(callee), calls=1)
    return graph
