"""Loki and Jaeger through local stand-ins speaking their JSON; log files, OTLP files and a
topology file; hostile service names; a slow backend."""

from __future__ import annotations

import asyncio
import gzip
import json
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest
from aiohttp import web

from bot.config import LiveConfig
from bot.telemetry import telemetry_from
from rca.engines import build_engine
from rca.errors import DataError, InputError
from rca.evidence.toolbox import Toolbox
from rca.model import CaseId, Incident, Modality, Normal, Sources
from rca.sources.jaeger import JaegerTraces, OtlpFiles, read_otlp, topology_file
from rca.sources.logfiles import LogDirectory
from rca.sources.loki import LokiLogs
from rca.sources.memory import StaticTopology
from rca.sources.prometheus import PrometheusMetrics, load_mapping
from rca.sources.protocols import LogQuery, MetricQuery, SpanQuery
from rca.telemetry import Severity, Window
from rca.timestamps import parse_timestamp
from tests.bot.slack_standin import free_port

T0 = parse_timestamp("2024-01-05T10:00:00Z")
NS = 1_000_000_000


class StandIn:
    """A tiny HTTP server whose routes are handlers given by the test; records every query."""

    def __init__(self, routes: dict[str, Callable[[web.Request], Awaitable[web.Response]]]) -> None:
        self.routes = routes
        self.queries: list[dict[str, str]] = []
        self.port = free_port()

    async def __aenter__(self) -> str:
        app = web.Application()
        for path, handler in self.routes.items():

            async def record(request: web.Request, handler=handler) -> web.Response:  # type: ignore[no-untyped-def]
                self.queries.append(dict(request.query))
                return await handler(request)

            app.router.add_get(path, record)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()
        return f"http://127.0.0.1:{self.port}"

    async def __aexit__(self, *exc: object) -> None:
        await self.runner.cleanup()


def loki_streams(request: web.Request) -> dict[str, Any]:
    """Loki's query_range answer for the streams whose service label the selector matches."""
    streams = [
        {
            "stream": {"service": "orders", "pod": "orders-7d9f"},
            "values": [
                [str(int((T0 + 60) * NS)), "2024-01-05T10:01:00Z ERROR payment call failed status=503"],
                [str(int((T0 + 60) * NS) + 1), "java.net.SocketTimeoutException: Read timed out"],
                [str(int((T0 + 60) * NS) + 2), "\tat okhttp3.Call.execute(Call.java:10)"],
                [str(int((T0 + 61) * NS)), "no stamp of its own, loki dates it"],
            ],
        },
        {
            "stream": {"service": "payments"},
            "values": [
                [
                    str(int((T0 + 70) * NS)),
                    '{"level":"warn","msg":"pool exhausted","trace_id":"0af7651916cd43dd8448eb211c80319c"}',
                ],
            ],
        },
    ]
    m = re.fullmatch(r'\{service(=~?)"((?:[^"\\]|\\.)*)"\}', request.query["query"])
    assert m, request.query["query"]  # the selector is one well-formed matcher, whatever the names
    value = m.group(2).encode().decode("unicode_escape")
    keep = [
        st
        for st in streams
        if (re.fullmatch(value, st["stream"]["service"]) if m.group(1) == "=~" else st["stream"]["service"] == value)
    ]
    return {
        "status": "success",
        "data": {"resultType": "streams", "result": keep, "stats": {"summary": {"totalEntriesReturned": 5}}},
    }


def test_loki_query_range_normalised_and_escaped() -> None:
    async def query_range(request: web.Request) -> web.Response:
        return web.json_response(loki_streams(request))

    async def values(request: web.Request) -> web.Response:
        return web.json_response({"status": "success", "data": ["orders", "payments"]})

    routes = {"/loki/api/v1/query_range": query_range, "/loki/api/v1/label/service/values": values}

    async def go() -> None:
        stand_in = StandIn(routes)
        async with stand_in as url:
            loki = LokiLogs(url)
            assert await loki.entities() == ("orders", "payments")
            records = await loki.records(LogQuery(Window(T0, T0 + 600), ("orders",)))
            assert [r.time for r in records] == [T0 + 60, T0 + 61]  # the stack trace joined into one record
            first = records[0]
            assert first.severity is Severity.ERROR and first.error_code == "503" and "okhttp3" in first.message
            assert first.instance == "orders-7d9f"
            q = stand_in.queries[-1]
            assert q["query"] == '{service="orders"}' and q["direction"] == "forward"
            assert int(q["start"]) == int(T0 * NS)
            both = await loki.records(LogQuery(Window(T0, T0 + 600)))
            assert {r.entity for r in both} == {"orders", "payments"}
            for hostile in ('orders"} |= "x', "orders|payments", ".*", 'a\\"b'):
                assert await loki.records(LogQuery(Window(T0, T0 + 600), (hostile,))) == []  # matches no stream
            assert await loki.records(LogQuery(Window(T0, T0 + 600), ("orders", ".*"))) == records  # ".*" quoted
            assert loki.selector(["a.b", "c"]) == '{service=~"a\\\\.b|c"}'

    asyncio.run(go())


def _stored_lines() -> dict[str, list[tuple[float, str]]]:
    """An hour of steady lines before T0, then ten minutes in which payments fails."""
    lines: dict[str, list[tuple[float, str]]] = {"orders": [], "payments": []}
    for minute in range(-60, 10):
        for service in lines:
            lines[service] += [(T0 + minute * 60 + 5, "INFO served"), (T0 + minute * 60 + 35, "INFO served")]
        if minute >= 0:
            lines["payments"] += [(T0 + minute * 60 + 40 + i, "ERROR payment FAILED: card declined") for i in range(5)]
    return lines


def loki_counts(request: web.Request, lines: dict[str, list[tuple[float, str]]]) -> dict[str, Any]:
    """Loki's matrix answer to `sum by (service) (count_over_time({service=~".+"} [|~ "re"] [1m]))`,
    evaluated over the stored lines: at each step t, the lines in (t - 60 s, t]."""
    m = re.fullmatch(
        r'sum by \(service\) \(count_over_time\(\{service=~"\.\+"\}(?: \|~ "((?:[^"\\]|\\.)*)")?\[1m\]\)\)',
        request.query["query"],
    )
    assert m, request.query["query"]
    keep = re.compile(m.group(1).encode().decode("unicode_escape")) if m.group(1) else None
    start, end, step = int(request.query["start"]) / NS, int(request.query["end"]) / NS, float(request.query["step"])
    result = []
    for service, stored in lines.items():
        values = []
        t = start
        while t <= end:
            n = sum(1 for at, text in stored if t - 60 < at <= t and (keep is None or keep.search(text)))
            if n:
                values.append([t, str(n)])
            t += step
        if values:
            result.append({"metric": {"service": service}, "values": values})
    return {"status": "success", "data": {"resultType": "matrix", "result": result}}


def stored_streams(request: web.Request, lines: dict[str, list[tuple[float, str]]]) -> dict[str, Any]:
    """Loki's streams answer to a query_range over the stored lines: every service's lines in
    the asked range."""
    start, end = int(request.query["start"]) / NS, int(request.query["end"]) / NS
    result = [
        {
            "stream": {"service": service},
            "values": [[str(int(at * NS)), text] for at, text in stored if start <= at <= end],
        }
        for service, stored in lines.items()
    ]
    return {"status": "success", "data": {"resultType": "streams", "result": result}}


def counting_loki() -> StandIn:
    """A Loki stand-in holding `_stored_lines` that answers count queries over them."""
    lines = _stored_lines()

    async def query_range(request: web.Request) -> web.Response:
        return web.json_response(loki_counts(request, lines))

    return StandIn({"/loki/api/v1/query_range": query_range})


def test_loki_counts_lines_without_returning_them() -> None:
    async def go() -> None:
        stand_in = counting_loki()
        async with stand_in as url:
            counts = await LokiLogs(url).line_counts(Window(T0, T0 + 600))
        assert counts.lines == {"orders": 20, "payments": 70} and counts.errors == {"payments": 50}
        assert counts.minutes == 10
        assert all(q["query"].startswith("sum by (service)") for q in stand_in.queries)
        with pytest.raises(InputError):
            LokiLogs(url, label="service) or vector(1) (")

    asyncio.run(go())


def test_a_budgeted_logs_glance_on_loki_reads_no_line() -> None:
    """Short of reads, the logs scan asks Loki to count each service's lines and failing lines
    (window and look-back) and names the service whose failures rose; no line is fetched."""

    async def go() -> None:
        stand_in = counting_loki()
        async with stand_in as url:
            loki = LokiLogs(url)
            window = Window(T0, T0 + 600)
            graph = StaticTopology(nx.DiGraph([("orders", "payments")]))
            incident = Incident(
                CaseId("live/orders"),
                "live",
                "orders",
                window,
                Sources(logs=loki, topology=graph),
                {Modality.LOGS: Normal(Window(T0 - 3600, T0), Sources(logs=loki))},
            )
            box = Toolbox(incident, budget=1)
            result = await box.scan("logs")
        assert result.leads == ("payments",) and box.reads == 1
        assert stand_in.queries and all(q["query"].startswith("sum by (service)") for q in stand_in.queries)
        assert {int(q["start"]) for q in stand_in.queries} == {int((T0 - 3600 + 60) * NS), int((T0 + 60) * NS)}

    asyncio.run(go())


def test_a_read_of_a_service_loki_holds_no_line_of_costs_nothing() -> None:
    """Loki names the services with lines in a window (the label's values over it) without
    returning a line: a budgeted read of a service it does not name is free, one it names is
    charged."""
    lines = _stored_lines()

    async def values(request: web.Request) -> web.Response:
        start, end = int(request.query["start"]) / NS, int(request.query["end"]) / NS
        held = sorted(s for s, stored in lines.items() if any(start <= at <= end for at, _ in stored))
        return web.json_response({"status": "success", "data": held})

    async def query_range(request: web.Request) -> web.Response:
        return web.json_response(stored_streams(request, lines))

    async def go() -> None:
        stand_in = StandIn({"/loki/api/v1/label/service/values": values, "/loki/api/v1/query_range": query_range})
        async with stand_in as url:
            loki = LokiLogs(url)
            window = Window(T0, T0 + 600)
            graph = StaticTopology(nx.DiGraph([("orders", "payments"), ("orders", "quiet")]))
            incident = Incident(
                CaseId("live/orders"),
                "live",
                "orders",
                window,
                Sources(logs=loki, topology=graph),
                {Modality.LOGS: Normal(Window(T0 - 3600, T0), Sources(logs=loki))},
            )
            box = Toolbox(incident, budget=1)
            quiet = await box.logs("quiet")
            assert quiet.status == "no_data" and box.reads == 0
            assert (await box.logs("payments")).status == "ok" and box.reads == 1
        asked = stand_in.queries[0]
        assert (int(asked["start"]), int(asked["end"])) == (int(T0 * NS), int((T0 + 600) * NS))

    asyncio.run(go())


def test_a_loki_that_cannot_count_still_gets_its_glance_from_lines() -> None:
    """Count queries refused (an older Loki, a proxy): the glance reads the lines, says so,
    and logs stay available."""
    lines = _stored_lines()

    async def query_range(request: web.Request) -> web.Response:
        if request.query["query"].startswith("sum by"):
            return web.json_response({"status": "error", "error": "metric queries are disabled"}, status=400)
        return web.json_response(stored_streams(request, lines))

    async def go() -> None:
        async with StandIn({"/loki/api/v1/query_range": query_range}) as url:
            loki = LokiLogs(url)
            graph = StaticTopology(nx.DiGraph([("orders", "payments")]))
            incident = Incident(
                CaseId("live/orders"),
                "live",
                "orders",
                Window(T0, T0 + 600),
                Sources(logs=loki, topology=graph),
                {Modality.LOGS: Normal(Window(T0 - 3600, T0), Sources(logs=loki))},
            )
            box = Toolbox(incident, budget=1)
            result = await box.scan("logs")
        assert result.leads == ("payments",) and box.reads == 1
        assert any("line counts unavailable" in m for m in box.missing) and "logs" not in box.failed

    asyncio.run(go())


def test_loki_pages_until_a_short_page() -> None:
    pages = iter([5000, 5000, 3])

    async def query_range(request: web.Request) -> web.Response:
        n = next(pages)
        start = int(request.query["start"])
        values = [[str(start + i), f"2024-01-05T10:00:{i % 60:02d}Z INFO line {i}"] for i in range(n)]
        return web.json_response(
            {
                "status": "success",
                "data": {"resultType": "streams", "result": [{"stream": {"service": "a"}, "values": values}]},
            }
        )

    async def go() -> None:
        stand_in = StandIn({"/loki/api/v1/query_range": query_range})
        async with stand_in as url:
            records = await LokiLogs(url).records(LogQuery(Window(T0, T0 + 3600), ("a",)))
        assert len(records) == 10003 and len(stand_in.queries) == 3
        assert int(stand_in.queries[1]["start"]) == int(stand_in.queries[0]["start"]) + 4999 + 1

    asyncio.run(go())


def test_log_directory_reads_text_json_and_gzip(tmp_path: Path) -> None:
    (tmp_path / "orders.log").write_text(
        "2024-01-05T10:01:00Z ERROR boom\n\tat x.y(Z.java:1)\n2024-01-05T10:02:00Z INFO ok\n"
    )
    with gzip.open(tmp_path / "payments.jsonl.gz", "wt") as fh:
        fh.write(json.dumps({"time": "2024-01-05T10:03:00+01:00", "level": "SEVERE", "msg": "x"}) + "\n")
    (tmp_path / "users").mkdir()
    (tmp_path / "users" / "app.log.1").write_text("2024/01/05 10:04:00 WARN slow\n")

    async def go() -> None:
        logs = LogDirectory(tmp_path)
        assert await logs.entities() == ("orders", "payments", "users")
        records = await logs.records(LogQuery(Window(T0 - 7200, T0 + 600)))
        assert [(r.entity, r.severity) for r in records] == [
            ("payments", Severity.ERROR),
            ("orders", Severity.ERROR),
            ("orders", Severity.INFO),
            ("users", Severity.WARNING),
        ]
        assert "x.y(Z.java:1)" in records[1].message
        assert await logs.records(LogQuery(Window(T0, T0 + 600), ("users",))) == [records[3]]
        # a live service's file grows, another appears: the next read sees both
        with (tmp_path / "orders.log").open("a") as fh:
            fh.write("2024-01-05T10:05:00Z ERROR again\n")
        (tmp_path / "cart.log").write_text("2024-01-05T10:06:00Z INFO new\n")
        later = await logs.records(LogQuery(Window(T0 - 7200, T0 + 600)))
        assert len(later) == len(records) + 2 and {"again", "new"} <= {r.message for r in later}
        assert await logs.entities() == ("cart", "orders", "payments", "users")

    asyncio.run(go())


def jaeger_trace() -> dict[str, Any]:
    us = int(T0 * 1e6)
    return {
        "traceID": "t1",
        "processes": {"p1": {"serviceName": "frontend"}, "p2": {"serviceName": "orders"}},
        "spans": [
            {
                "traceID": "t1",
                "spanID": "s1",
                "operationName": "GET /",
                "references": [],
                "startTime": us + 10,
                "duration": 300000,
                "processID": "p1",
                "tags": [],
            },
            {
                "traceID": "t1",
                "spanID": "s2",
                "operationName": "place",
                "startTime": us + 20,
                "duration": 250000,
                "references": [{"refType": "CHILD_OF", "traceID": "t1", "spanID": "s1"}],
                "processID": "p2",
                "tags": [{"key": "error", "type": "bool", "value": True}],
            },
        ],
    }


def test_jaeger_spans_and_call_graph() -> None:
    async def services(request: web.Request) -> web.Response:
        return web.json_response({"data": ["frontend", "orders", "jaeger-query"], "total": 3, "errors": None})

    async def traces(request: web.Request) -> web.Response:
        return web.json_response({"data": [jaeger_trace()], "total": 1, "errors": None})

    async def go() -> None:
        stand_in = StandIn({"/api/services": services, "/api/traces": traces})
        async with stand_in as url:
            jaeger = JaegerTraces(url)
            assert await jaeger.services() == ("frontend", "orders")
            spans = await jaeger.spans(SpanQuery(Window(T0, T0 + 60)))
            assert [(s.entity, s.parent_id, s.status.value) for s in spans] == [
                ("frontend", "", "ok"),
                ("orders", "s1", "error"),
            ]
            assert {q["service"] for q in stand_in.queries if "service" in q} == {"frontend", "orders"}
            assert stand_in.queries[-1]["start"] == str(int(T0 * 1e6))

    asyncio.run(go())


def test_otlp_files_and_topology_file(tmp_path: Path) -> None:
    def span(sid: str, parent: str, service: str) -> dict[str, Any]:
        return {
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
            "scopeSpans": [
                {
                    "spans": [
                        {
                            "traceId": "ab",
                            "spanId": sid,
                            "parentSpanId": parent,
                            "name": "op",
                            "startTimeUnixNano": str(int(T0 * NS)),
                            "endTimeUnixNano": str(int((T0 + 1) * NS)),
                            "status": {"code": 2 if service == "db" else 0},
                        }
                    ]
                }
            ],
        }

    (tmp_path / "traces.jsonl").write_text(
        "\n".join(
            json.dumps({"resourceSpans": [span(s, p, svc)]}) for s, p, svc in (("1", "", "api"), ("2", "1", "db"))
        )
    )
    (tmp_path / "topology.yaml").write_text("calls:\n  frontend: [api]\n  api: [db, cache]\n")

    async def go() -> None:
        traces = read_otlp([tmp_path / "traces.jsonl"])
        spans = await traces.spans(SpanQuery(Window(T0, T0 + 10)))
        assert [(s.entity, s.status.value) for s in spans] == [("api", "unset"), ("db", "error")]
        # the same files read live: a span appended later is seen at the next read
        live = OtlpFiles(tmp_path / "traces.jsonl")
        assert await live.services() == ("api", "db")
        with (tmp_path / "traces.jsonl").open("a") as fh:
            fh.write("\n" + json.dumps({"resourceSpans": [span("3", "1", "cache")]}))
        assert await live.services() == ("api", "cache", "db")
        assert len(await live.spans(SpanQuery(Window(T0, T0 + 10)))) == 3
        graph = topology_file(tmp_path / "topology.yaml")
        assert set(graph.edges) == {("frontend", "api"), ("api", "db"), ("api", "cache")}

    asyncio.run(go())


def test_a_slow_loki_leaves_a_partial_result(nezha_slice: Path) -> None:
    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(5)
        return web.json_response({"status": "success", "data": {"resultType": "streams", "result": []}})

    async def go() -> None:
        stand_in = StandIn({"/loki/api/v1/query_range": slow, "/loki/api/v1/label/service/values": slow})
        async with stand_in as url:
            live = LiveConfig(loki_url=url, timeout=1)
            t = telemetry_from(data=nezha_slice, now=parse_timestamp("2023-01-29T13:36:00Z"), live=live)
            incident = await t.incident("Frontend", await t.window("10m"))
            diagnosis = await build_engine("lats").investigate(incident)
        assert any(m.startswith("logs: unavailable (loki at") for m in diagnosis.missing)
        assert diagnosis.ranking and diagnosis.ranking[0].service == "ts-contacts-service"  # metrics still find it
        assert diagnosis.trace is not None and diagnosis.trace["evidence_package"]["modalities"]["logs"] is False

    asyncio.run(go())


def test_backends_answering_garbage_leave_a_partial_result(nezha_slice: Path) -> None:
    async def html(request: web.Request) -> web.Response:
        return web.Response(text="<html>502 Bad Gateway</html>", status=502, content_type="text/html")

    async def wrong_shape(request: web.Request) -> web.Response:
        return web.json_response({"status": "success", "data": {"resultType": "vector", "result": [1, 2]}})

    async def go() -> None:
        prom = StandIn({"/api/v1/query_range": wrong_shape, "/api/v1/label/container/values": html})
        jaeger = StandIn({"/api/services": html, "/api/traces": html})
        async with prom as prom_url, jaeger as jaeger_url:
            live = LiveConfig(prometheus_url=prom_url, jaeger_url=jaeger_url, timeout=2)
            t = telemetry_from(data=nezha_slice, now=parse_timestamp("2023-01-29T13:36:00Z"), live=live)
            incident = await t.incident("Frontend", await t.window("10m"))
            diagnosis = await build_engine("lats").investigate(incident)
        missing = " ".join(diagnosis.missing)
        assert "metrics: unavailable (prometheus at" in missing
        assert "traces: unavailable (jaeger at" in missing
        assert diagnosis.ranking  # the recorded logs still rank

    asyncio.run(go())


def test_a_time_budget_bounds_the_search(nezha_slice: Path) -> None:
    async def go() -> None:
        t = telemetry_from(data=nezha_slice, now=parse_timestamp("2023-01-29T13:36:00Z"), live=LiveConfig())
        incident = await t.incident("Frontend", await t.window("10m"))
        # a budget below one iteration's work: spent whatever the machine's speed (0.2 s was not,
        # once reads were memoised and the whole search took less)
        diagnosis = await build_engine("lats", time_budget=0.001).investigate(incident)
        assert any("time budget of 0.001 s spent" in m for m in diagnosis.missing)
        assert diagnosis.cost.seconds < 5

    asyncio.run(go())


def test_a_matrix_whose_samples_are_not_pairs_is_a_clear_error() -> None:
    def matrix(values: list[Any]) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def answer(request: web.Request) -> web.Response:
            result = [{"metric": {"container": "orders", "pod": "orders-0"}, "values": values}]
            return web.json_response({"status": "success", "data": {"resultType": "matrix", "result": result}})

        return answer

    async def read(values: list[Any]) -> list[Any]:
        async with StandIn({"/api/v1/query_range": matrix(values)}) as url:
            source = PrometheusMetrics(url, load_mapping(), timeout=2)
            return await source.series(MetricQuery(Window(T0, T0 + 60), ("orders",), ("CpuUsageRate(%)",)))

    (good,) = asyncio.run(read([[T0, "1.5"], [T0 + 15, "NaN"], [T0 + 30, "+Inf"], [T0 + 45, "oops"]]))
    assert good.timestamps.tolist() == [T0, T0 + 15, T0 + 30, T0 + 45]
    assert good.values[0] == 1.5 and np.isnan(good.values[1]) and good.values[2] == np.inf and np.isnan(good.values[3])
    for hostile in ([[T0]], [[T0, "1", "2"]], [["soon", "1"]], [{"t": 1}]):
        with pytest.raises(DataError, match="not \\[time, value\\] pairs"):
            asyncio.run(read(hostile))
