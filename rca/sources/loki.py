"""Logs from a live Loki: LogQL `query_range` per window, a label selector per service, lines
normalised by the one pipeline. Label values are escaped so no service name changes a query;
failures raise DataError naming the query (the toolbox reports logs as unavailable).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import aiohttp

from rca.errors import DataError, InputError
from rca.sources import http
from rca.sources.normalise import normalise
from rca.sources.prometheus import escape_value, services_regex
from rca.sources.protocols import ERROR_LINE_PATTERN, LogQuery
from rca.telemetry import LineCounts, LogRecord, Window

_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PAGE = 5000  # lines per request (Loki's default max_entries_limit_per_query)
MAX_LINES = 200_000  # per query; more is cut and said so


class LokiLogs:
    """A LogSource over Loki's HTTP API; `label` names the service in stream labels."""

    def __init__(self, url: str, *, label: str = "service", timeout: float = 10.0) -> None:
        if not _LABEL.fullmatch(label):  # it is written into queries unquoted (`sum by (label)`)
            raise InputError(f"loki: {label!r} is not a label name")
        self.url = url.rstrip("/")
        self.label = label
        self.timeout = timeout
        self.truncated = False

    def selector(self, services: Sequence[str]) -> str:
        """`{service="a"}`, `{service=~"a|b"}` (regex-quoted), or every service."""
        if len(services) == 1:
            return f'{{{self.label}="{escape_value(services[0])}"}}'
        return f'{{{self.label}=~"{services_regex(services)}"}}'

    async def entities(self) -> tuple[str, ...]:
        return await self._label_values({})

    async def services(self, window: Window) -> tuple[str, ...]:
        """The services with lines in the window, from the label's values over it: no line is
        returned."""
        return await self._label_values({"start": str(int(window.start * 1e9)), "end": str(int(window.end * 1e9))})

    async def _label_values(self, params: dict[str, str]) -> tuple[str, ...]:
        async with http.session(self.timeout) as client:
            data = await self._get(client, f"/loki/api/v1/label/{self.label}/values", params, what="label values")
        return tuple(sorted(str(v) for v in data or [] if isinstance(v, str)))

    async def line_counts(self, window: Window) -> LineCounts:
        """Every service's lines in the window and those that report a failure, from two
        LogQL metric queries (counts per minute, summed by service): no line is returned."""
        every = f'{{{self.label}=~".+"}}'
        failing = f'{every} |~ "{escape_value(ERROR_LINE_PATTERN)}"'
        # evaluated each minute over the minute before it: the first step ends the window's first minute
        params = {"start": str(int((window.start + 60) * 1e9)), "end": str(int(window.end * 1e9)), "step": "60"}
        async with http.session(self.timeout) as client:
            (lines, minutes), (errors, _) = [
                self._counts(
                    await self._get(
                        client,
                        "/loki/api/v1/query_range",
                        {**params, "query": f"sum by ({self.label}) (count_over_time({sel}[1m]))"},
                        what=f"line counts of {sel}",
                    )
                )
                for sel in (every, failing)
            ]
        return LineCounts(lines, errors, float(max(1, len(minutes))))

    def _counts(self, data: Any) -> tuple[dict[str, int], set[float]]:
        """Per service, the sum of a matrix's per-minute counts; and the minutes that held any."""
        if not isinstance(data, dict) or data.get("resultType") != "matrix":
            raise DataError("loki: expected a matrix result for a count query")
        counts: dict[str, int] = {}
        minutes: set[float] = set()
        for series in data.get("result", []):
            service = str(series.get("metric", {}).get(self.label, ""))
            for ts, value in series.get("values", []):
                n = int(float(value))
                if n > 0:
                    counts[service] = counts.get(service, 0) + n
                    minutes.add(float(ts))
        return counts, minutes

    async def records(self, query: LogQuery) -> list[LogRecord]:
        logql = self.selector(query.entities)
        start_ns, end_ns = int(query.window.start * 1e9), int(query.window.end * 1e9)
        out: list[LogRecord] = []
        async with http.session(self.timeout) as client:
            while start_ns < end_ns and len(out) < MAX_LINES:
                params = {
                    "query": logql,
                    "start": str(start_ns),
                    "end": str(end_ns),
                    "limit": str(PAGE),
                    "direction": "forward",
                }
                data = await self._get(client, "/loki/api/v1/query_range", params, what=logql)
                page, last_ns, lines = self._parse(data)
                out.extend(page)
                if lines < PAGE:
                    break
                start_ns = last_ns + 1  # the next page starts after the last line seen
        self.truncated = len(out) >= MAX_LINES
        return sorted(out, key=lambda r: r.time)

    def _parse(self, data: Any) -> tuple[list[LogRecord], int, int]:
        if not isinstance(data, dict) or data.get("resultType") != "streams":
            raise DataError("loki: expected a streams result")
        records: list[LogRecord] = []
        last, count = 0, 0
        for stream in data.get("result", []):
            labels = stream.get("stream", {})
            service = str(labels.get(self.label, ""))
            values = stream.get("values", [])
            count += len(values)
            stamps = [int(ts) for ts, _ in values]
            last = max([last, *stamps])
            # one pipeline over the stream, so stack traces join; Loki's stamps date undated lines
            result = normalise(
                [str(line) for _, line in values],
                service=service,
                instance=str(labels.get("pod", labels.get("instance", ""))),
                times=[t / 1e9 for t in stamps],
            )
            records.extend(result.records)
        return records, last, count

    async def _get(self, client: aiohttp.ClientSession, path: str, params: dict[str, str], *, what: str) -> Any:
        body = await http.get_json(
            client, self.url + path, params, who=f"loki at {self.url}", what=what, ok=http.status_success
        )
        return body.get("data")
