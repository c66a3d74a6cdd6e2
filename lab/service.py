"""One service of the shop, run as its own OS process: `python -m lab.service SHOP.json NAME PORTS.json DIR`.

On `GET /work?item=N` it spends its own CPU, reads or writes its store, calls the services
below it (W3C trace context passed on) and checks what they answer. It exports:
- Prometheus metrics on `/metrics`: request latency by status code, client calls by peer and
  outcome, and the process's CPU, memory, open files, GC and disk writes (`/proc/self/io`);
- JSON log lines in DIR/logs/NAME.log (every warning and error, a quarter of the successes);
- OpenTelemetry spans of a fifth of the requests, one OTLP/JSON export per line, in DIR/traces/NAME.otlp.jsonl.

`POST /admin/fault {"kind", "seconds"}` turns a fault on inside the process (lab.faults names
them); the telemetry then shows whatever the fault really does, nothing is written for it.
`POST /admin/config {"call_timeout"}` is a config push: how long a call out may take. A
version (`--version`, exported as `lab_build_info`) may carry a defect (`--defect KIND`): one
of the in-process faults, on for as long as the version runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import random
import statistics
import threading
import time
from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from aiohttp import ClientError, ClientSession, ClientTimeout, TCPConnector, web
from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import SpanKind, Status, StatusCode
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from lab.faults import CALL_TIMEOUT, IN_PROCESS
from lab.shop import STORE_PORTS, ServiceSpec, Shop

TRACE_SHARE = 0.2  # share of requests traced, decided at the entry and kept downstream
LEAK_STEP = 4 * 1024 * 1024  # bytes a memory leak keeps each second
LEAK_CAP = 600 * 1024 * 1024
DISK_STEP = 8 * 1024 * 1024  # bytes a disk fill writes each second
SLOW_SECONDS = 0.3  # what a slow handler adds to each request
FAILING_SHARE = 0.5  # share of requests an error-rate fault fails
POOL_HOLD = 0.05  # seconds an exhausted pool holds each connection beyond the call
CONNECT_TIMEOUT = 5.0  # seconds a new connection to a store may take (handshake and table included)
RETRY_TIMEOUT = 0.05  # seconds a call may take under a retry storm, before any call to its callee was answered
RETRIES = 3  # times a call is sent again under a retry storm
ANSWERS_KEPT = 200  # per callee, the answer times of the latest calls kept: how long it normally takes

REQUESTS = Histogram(
    "lab_http_server_request_duration_seconds",
    "Requests served, by status code",
    ["code"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
)
CALLS = Histogram(
    "lab_http_client_request_duration_seconds",
    "Calls to other services",
    ["peer", "outcome"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
)
STORE_OPS = Counter("lab_store_operations_total", "Operations on the backing store", ["store", "outcome"])
BUILD = Gauge("lab_build_info", "The version this process runs", ["version"])


class ProcessIO(Collector):
    """Bytes this process read from and wrote to storage, from the kernel's /proc/self/io."""

    def collect(self) -> Iterable[CounterMetricFamily]:
        try:
            fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
        except (OSError, ValueError):
            return
        for name, key in (("process_io_read_bytes", "read_bytes"), ("process_io_write_bytes", "write_bytes")):
            yield CounterMetricFamily(name, f"{key} of /proc/self/io", value=float(fields.get(key, 0)))


class OtlpJsonLines(SpanExporter):
    """Spans as OTLP/JSON (hex ids, nanosecond strings), one export request per line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        by_resource: dict[int, tuple[Resource, list[dict[str, Any]]]] = {}
        for s in spans:
            by_resource.setdefault(id(s.resource), (s.resource, []))[1].append(_span_json(s))
        doc = {
            "resourceSpans": [
                {
                    "resource": {"attributes": _attributes(r.attributes)},
                    "scopeSpans": [{"scope": {"name": "lab"}, "spans": out}],
                }
                for r, out in by_resource.values()
            ]
        }
        with self._lock, self.path.open("a") as f:
            f.write(json.dumps(doc, separators=(",", ":")) + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def _attributes(attrs: Any) -> list[dict[str, Any]]:
    out = []
    for key, value in (attrs or {}).items():
        kind = "intValue" if isinstance(value, int) and not isinstance(value, bool) else "stringValue"
        out.append({"key": key, "value": {kind: str(value)}})
    return out


def _span_json(s: ReadableSpan) -> dict[str, Any]:
    ctx = s.get_span_context()
    assert ctx is not None
    return {
        "traceId": f"{ctx.trace_id:032x}",
        "spanId": f"{ctx.span_id:016x}",
        "parentSpanId": f"{s.parent.span_id:016x}" if s.parent is not None else "",
        "name": s.name,
        "kind": int(s.kind.value) + 1,
        "startTimeUnixNano": str(s.start_time),
        "endTimeUnixNano": str(s.end_time),
        "attributes": _attributes(s.attributes),
        "status": {"code": {StatusCode.UNSET: 0, StatusCode.OK: 1, StatusCode.ERROR: 2}[s.status.status_code]},
    }


class JsonLines(logging.Formatter):
    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        doc = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "service": self.service,
            "logger": record.name,
            "trace_id": getattr(record, "trace_id", ""),
            "message": record.getMessage(),
        }
        if record.exc_info:
            doc["stack"] = self.formatException(record.exc_info)
        return json.dumps(doc)


class Faults:
    """The faults this process is under, each until its end time (monotonic seconds)."""

    def __init__(self, data: Path, *, built_in: str = "") -> None:
        if built_in and built_in not in IN_PROCESS:
            raise ValueError(f"unknown defect {built_in!r}; known: {', '.join(sorted(IN_PROCESS))}")
        self.until: dict[str, float] = {}
        self.data = data
        self.built_in = built_in  # a defect of the version: on as long as the process runs
        self._threads: dict[str, threading.Thread] = {}

    def on(self, kind: str) -> bool:
        return kind == self.built_in or time.monotonic() < self.until.get(kind, 0.0)

    def start(self, kind: str, seconds: float) -> None:
        if kind not in IN_PROCESS:
            raise ValueError(f"unknown in-process fault {kind!r}; known: {', '.join(sorted(IN_PROCESS))}")
        self.until[kind] = time.monotonic() + seconds
        worker = {"cpu": self._hog, "memory": self._leak, "disk": self._fill}.get(kind)
        if worker is not None and not (kind in self._threads and self._threads[kind].is_alive()):
            self._threads[kind] = threading.Thread(target=worker, name=f"fault-{kind}", daemon=True)
            self._threads[kind].start()

    def stop(self) -> None:
        self.until.clear()

    def _hog(self) -> None:
        while self.on("cpu"):
            sum(i * i for i in range(20_000))

    def _leak(self) -> None:
        kept: list[bytes] = []
        while self.on("memory"):
            if len(kept) * LEAK_STEP < LEAK_CAP:
                kept.append(os.urandom(16) * (LEAK_STEP // 16))
            time.sleep(1.0)
        kept.clear()

    def _fill(self) -> None:
        path = self.data / "fill.bin"
        chunk = os.urandom(DISK_STEP)
        with path.open("wb") as f:
            while self.on("disk"):
                f.write(chunk)
                f.flush()
                os.fsync(f.fileno())
                time.sleep(1.0)
        path.unlink(missing_ok=True)


class Broken(Exception):
    """A call answered with an error or with a body that is not what was asked."""


class Service:
    def __init__(self, shop: Shop, spec: ServiceSpec, ports: dict[str, int], out: Path, *, defect: str = "") -> None:
        self.shop, self.spec, self.ports = shop, spec, ports
        self.data = out / "data" / spec.name
        self.data.mkdir(parents=True, exist_ok=True)
        self.faults = Faults(self.data, built_in=defect)
        self.call_timeout = CALL_TIMEOUT
        self.log = logging.getLogger(spec.name)
        self.tracer = trace.get_tracer("lab")
        self.client: ClientSession | None = None
        self.pool = asyncio.Semaphore(64)
        self.store: Any = None
        self._next_connect = 0.0  # monotonic seconds before which the store is not connected to again
        self.rng = random.Random(f"{shop.seed}-{spec.name}")
        # per callee, how long the latest calls answered outside a retry storm took
        self.answer_times: defaultdict[str, deque[float]] = defaultdict(lambda: deque(maxlen=ANSWERS_KEPT))

    async def start(self, app: web.Application) -> None:
        self.client = ClientSession(connector=TCPConnector(limit=64), timeout=ClientTimeout(total=CALL_TIMEOUT))
        try:
            self.store = await self._connect()
        except Exception as exc:  # the service still runs; every request then reports the store
            self.log.warning("store %s unavailable at start: %s", self.spec.store, exc)

    async def _connect(self) -> Any:
        port = self.ports.get(f"{self.spec.name}:store")
        return await asyncio.wait_for(
            _connect(self.spec.store, f"lab{self.shop.seed}:{self.spec.name}", port), CONNECT_TIMEOUT
        )

    async def _reconnect(self) -> None:
        """A new connection to the store after the last one was lost, tried at most once a
        second; the old one is replaced only once the new one is up (requests meanwhile report
        the store)."""
        if time.monotonic() < self._next_connect:
            return
        self._next_connect = time.monotonic() + 1.0
        try:
            new = await self._connect()
        except Exception as exc:
            self.log.warning("store %s: no new connection: %s", self.spec.store, exc or type(exc).__name__)
            return
        old, self.store = self.store, new
        if old is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(old.close(), 1.0)

    async def stop(self, app: web.Application) -> None:
        if self.client is not None:
            await self.client.close()
        if self.store is not None:
            with contextlib.suppress(Exception):
                await self.store.close()

    async def work(self, request: web.Request) -> web.Response:
        started = time.perf_counter()
        code = 200
        with self.tracer.start_as_current_span(
            "GET /work", context=propagate.extract(request.headers), kind=SpanKind.SERVER
        ) as span:
            trace_id = f"{span.get_span_context().trace_id:032x}"
            extra = {"trace_id": trace_id}
            try:
                item = int(request.query.get("item", "0"))
                body = await self._handle(item, extra)
                if self.faults.on("wrong"):
                    body = {"service": self.spec.name, "items": None, "note": "\ufffd" * 3}
                if self.rng.random() < 0.25:
                    self.log.info(
                        "served item %d in %.1f ms", item, 1000 * (time.perf_counter() - started), extra=extra
                    )
                return web.json_response(body)
            except Broken as exc:
                code = 502
                self.log.error("upstream failure: %s", exc, extra=extra)
                span.set_status(Status(StatusCode.ERROR, str(exc)))
                return web.json_response({"error": str(exc)}, status=code)
            except Exception as exc:
                code = 500
                self.log.error("request failed: %s", exc, exc_info=not isinstance(exc, Refused), extra=extra)
                span.set_status(Status(StatusCode.ERROR, str(exc)))
                return web.json_response({"error": "internal error"}, status=code)
            finally:
                span.set_attribute("http.response.status_code", code)
                REQUESTS.labels(str(code)).observe(time.perf_counter() - started)

    async def _handle(self, item: int, extra: dict[str, str]) -> dict[str, Any]:
        if self.faults.on("latency"):
            await asyncio.sleep(SLOW_SECONDS * (0.5 + self.rng.random()))
        if self.faults.on("error") and self.rng.random() < FAILING_SHARE:
            raise Refused(f"quota exceeded for item {item}")
        if self.faults.on("exception") and item % 3 == 0:
            _apply_discount(item)  # the faulty code path
        _burn(self.spec.work_ms / 1000)
        parts: list[Any] = []
        if self.spec.store:
            parts.append(await self._store(item))
        if self.spec.calls:
            answers = await asyncio.gather(*(self._call(c, item) for c in self.spec.calls), return_exceptions=True)
            for callee, answer in zip(self.spec.calls, answers, strict=True):
                if isinstance(answer, BaseException):
                    raise Broken(f"{callee}: {answer}") from answer
                parts.append(answer)
        return {"service": self.spec.name, "item": item, "items": parts}

    async def _store(self, item: int) -> str:
        kind = self.spec.store
        if self.store is None:
            await self._reconnect()
        try:
            if self.store is None:
                raise ConnectionError(f"no connection to {kind}")
            value = await asyncio.wait_for(
                _store_op(kind, self.store, f"lab{self.shop.seed}:{self.spec.name}", item), CALL_TIMEOUT
            )
            STORE_OPS.labels(kind, "ok").inc()
            return value
        except Exception as exc:
            STORE_OPS.labels(kind, "error").inc()
            if _lost(exc):
                await self._reconnect()  # a lost connection is not used again (a slow answer is no loss)
            raise Broken(f"{kind} store: {exc or type(exc).__name__}") from exc

    async def _call(self, callee: str, item: int) -> Any:
        """A call out; under a retry storm each is cut short at the time the callee normally
        takes to answer (`storm_timeout`) and sent again at once, up to RETRIES more times,
        while the callee goes on with the ones given up on."""
        storm = self.faults.on("retry")
        timeout = self.storm_timeout(callee) if storm else self.call_timeout
        tries = 1 + RETRIES if storm else 1
        for attempt in range(tries):
            try:
                return await self._call_once(callee, item, timeout, timed=not storm)
            except Broken:
                if attempt == tries - 1:
                    raise
        raise AssertionError("unreachable")

    def storm_timeout(self, callee: str) -> float:
        """How long a call may take under a retry storm: the median time the latest calls to
        the callee answered outside one took, so that about half the calls are given up on and
        sent again whether or not the callee slows (a timeout set at its usual latency), or
        RETRY_TIMEOUT before any was answered; never past the call timeout."""
        kept = self.answer_times.get(callee)
        return min(self.call_timeout, statistics.median(kept) if kept else RETRY_TIMEOUT)

    async def _call_once(self, callee: str, item: int, timeout: float, *, timed: bool = True) -> Any:
        assert self.client is not None
        started = time.perf_counter()
        outcome = "ok"
        with self.tracer.start_as_current_span(
            "GET /work", kind=SpanKind.CLIENT, attributes={"peer.service": callee}
        ) as span:
            headers: dict[str, str] = {}
            propagate.inject(headers)
            try:
                async with self.pool:
                    url = f"http://127.0.0.1:{self.ports[callee]}/work?item={item}"
                    async with self.client.get(url, headers=headers, timeout=ClientTimeout(total=timeout)) as r:
                        body = await r.json(content_type=None)
                        if r.status >= 400:
                            raise Broken(f"status {r.status}")
                    if self.faults.on("pool"):
                        await asyncio.sleep(POOL_HOLD)
                if (
                    not isinstance(body, dict)
                    or body.get("service") != callee
                    or not isinstance(body.get("items"), list)
                ):
                    raise Broken("malformed response")
                if timed:  # how long the callee normally takes: what a retry storm cuts calls at
                    self.answer_times[callee].append(time.perf_counter() - started)
                return callee
            except (Broken, ClientError, TimeoutError, ValueError) as exc:
                outcome = "error"
                span.set_status(Status(StatusCode.ERROR, str(exc)))
                raise Broken(str(exc) or type(exc).__name__) from exc
            finally:
                CALLS.labels(callee, outcome).observe(time.perf_counter() - started)

    async def admin_fault(self, request: web.Request) -> web.Response:
        try:
            doc = await request.json()
            kind, seconds = str(doc["kind"]), float(doc["seconds"])
            if kind == "pool":
                self.pool = asyncio.Semaphore(1)
            self.faults.start(kind, seconds)
        except (ValueError, KeyError, TypeError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        if kind == "pool":
            asyncio.get_running_loop().call_later(seconds, self._pool_back)
        self.log.debug("fault %s for %.0f s", kind, seconds)
        return web.json_response({"ok": True})

    async def admin_config(self, request: web.Request) -> web.Response:
        try:
            doc = await request.json()
            timeout = float(doc["call_timeout"])
            if not 0 < timeout <= 60:
                raise ValueError(f"call_timeout {timeout} is not in (0, 60] seconds")
        except (ValueError, KeyError, TypeError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        self.call_timeout = timeout
        self.log.info("config: call timeout %.3f s", timeout)
        return web.json_response({"ok": True})

    def _pool_back(self) -> None:
        if not self.faults.on("pool"):
            self.pool = asyncio.Semaphore(64)

    async def metrics(self, request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(REGISTRY), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def health(self, request: web.Request) -> web.Response:
        return web.json_response({"service": self.spec.name})


class Refused(Exception):
    """The service refused a request (an error-rate fault): logged without a stack."""


def _apply_discount(item: int) -> None:
    rules: dict[int, float] = {}
    rate = rules[item % 7]  # KeyError: the discount table was shipped empty
    del rate


def _burn(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        sum(i * i for i in range(200))


async def _connect(kind: str, key: str, port: int | None = None) -> Any:
    """A connection to the store, through `port` (its relay, lab.relay) where one is given."""
    if kind not in STORE_PORTS:
        return None
    port = port or STORE_PORTS[kind]
    if kind == "redis":
        import redis.asyncio as redis

        client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=CALL_TIMEOUT)
        await client.ping()
        return client
    if kind == "postgres":
        import psycopg

        conn = await psycopg.AsyncConnection.connect(
            os.environ.get("LAB_POSTGRES", "postgresql://postgres@127.0.0.1/test"),
            autocommit=True,
            connect_timeout=3,
            port=port,
        )
        table = _table(key)
        await conn.execute(f"CREATE TABLE IF NOT EXISTS {table} (item int PRIMARY KEY, seen int NOT NULL)")
        return conn
    import nats

    # no reconnecting of its own: a server it learns of would be reached around the relay
    return await nats.connect(f"nats://127.0.0.1:{port}", connect_timeout=3, allow_reconnect=False)


def _lost(exc: BaseException) -> bool:
    """Whether a store operation failed because its connection is gone, not because the store
    was slow (a timeout: the connection may answer yet, as a paused store does once resumed)."""
    if isinstance(exc, TimeoutError):
        return False
    text = str(exc).lower()
    return isinstance(exc, ConnectionError) or "connection" in text or "closed" in text


def _table(key: str) -> str:
    return "lab_" + "".join(c if c.isalnum() else "_" for c in key).lower()


async def _store_op(kind: str, store: Any, key: str, item: int) -> str:
    if kind == "redis":
        await store.incr(f"{key}:{item % 100}")
        return "redis"
    if kind == "postgres":
        table = _table(key)
        await store.execute(
            f"INSERT INTO {table} (item, seen) VALUES (%s, 1) ON CONFLICT (item) DO UPDATE SET seen = {table}.seen + 1",
            (item % 100,),
        )
        return "postgres"
    await store.publish(f"{key}.items", str(item).encode())
    await store.flush(timeout=CALL_TIMEOUT)  # the server has it: a publish alone is only buffered
    return "nats"


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m lab.service")
    p.add_argument("shop", type=Path)
    p.add_argument("name")
    p.add_argument("ports", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--version", default="1.0.0", help="the version this process runs")
    p.add_argument("--defect", default="", help="an in-process fault built into the version")
    args = p.parse_args(argv)
    shop = Shop.from_json(args.shop.read_text())
    spec = shop.service(args.name)
    ports = {k: int(v) for k, v in json.loads(args.ports.read_text()).items()}
    for sub in ("logs", "traces"):
        (args.out / sub).mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(args.out / "logs" / f"{spec.name}.log")
    handler.setFormatter(JsonLines(spec.name))
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    provider = TracerProvider(
        resource=Resource.create({"service.name": spec.name, "service.instance.id": f"{spec.name}-0"}),
        sampler=ParentBased(TraceIdRatioBased(TRACE_SHARE)),
    )
    provider.add_span_processor(
        BatchSpanProcessor(OtlpJsonLines(args.out / "traces" / f"{spec.name}.otlp.jsonl"), schedule_delay_millis=2000)
    )
    trace.set_tracer_provider(provider)
    REGISTRY.register(ProcessIO())
    BUILD.labels(args.version).set(1)
    service = Service(shop, spec, ports, args.out, defect=args.defect)
    app = web.Application()
    app.router.add_get("/work", service.work)
    app.router.add_get("/metrics", service.metrics)
    app.router.add_get("/health", service.health)
    app.router.add_post("/admin/fault", service.admin_fault)
    app.router.add_post("/admin/config", service.admin_config)
    app.on_startup.append(service.start)
    app.on_cleanup.append(service.stop)
    try:
        web.run_app(app, host="127.0.0.1", port=ports[spec.name], print=None, access_log=None)
    finally:
        provider.shutdown()


if __name__ == "__main__":
    main()
