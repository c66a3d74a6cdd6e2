"""One normalisation pipeline for log lines from any backend (Loki, files, datasets).

    raw lines -> records (multi-line stack traces joined into the record they belong to)
              -> fields (JSON lines: known keys; text lines: a leading timestamp and level)
              -> LogRecord: UTC time, one severity scale, service, trace id, error code

Timestamps in any common form (ISO 8601 with offsets, epoch s/ms/us/ns, Go, Java, Apache,
syslog), severities from any vocabulary (SEVERE/WARNING, CRITICAL/ERROR, syslog and
OpenTelemetry numbers, pino/bunyan levels). A line that cannot be dated is dated by the line
before it (or skipped when it is the first), and counted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rca.errors import InputError
from rca.telemetry import LogRecord, Severity
from rca.timestamps import parse_timestamp

_WORDS: dict[str, Severity] = {
    "trace": Severity.DEBUG,
    "debug": Severity.DEBUG,
    "dbg": Severity.DEBUG,
    "fine": Severity.DEBUG,
    "finer": Severity.DEBUG,
    "finest": Severity.DEBUG,
    "config": Severity.DEBUG,
    "info": Severity.INFO,
    "information": Severity.INFO,
    "informational": Severity.INFO,
    "notice": Severity.INFO,
    "i": Severity.INFO,
    "d": Severity.DEBUG,
    "w": Severity.WARNING,
    "e": Severity.ERROR,
    "f": Severity.CRITICAL,
    "warn": Severity.WARNING,
    "warning": Severity.WARNING,
    "err": Severity.ERROR,
    "error": Severity.ERROR,
    "severe": Severity.ERROR,
    "exception": Severity.ERROR,
    "crit": Severity.CRITICAL,
    "critical": Severity.CRITICAL,
    "fatal": Severity.CRITICAL,
    "alert": Severity.CRITICAL,
    "emerg": Severity.CRITICAL,
    "emergency": Severity.CRITICAL,
    "panic": Severity.CRITICAL,
}
_SYSLOG_NUMBERS = (
    Severity.CRITICAL,
    Severity.CRITICAL,
    Severity.CRITICAL,
    Severity.ERROR,
    Severity.WARNING,
    Severity.INFO,
    Severity.INFO,
    Severity.DEBUG,
)  # 0 emerg .. 7 debug

_TIME_KEYS = ("timestamp", "time", "ts", "@timestamp", "date", "datetime", "asctime", "observedTimestamp", "t")
_LEVEL_KEYS = (
    "level",
    "severity",
    "severity_text",
    "severityText",
    "loglevel",
    "log_level",
    "lvl",
    "priority",
    "levelname",
    "severity_number",
    "severityNumber",
)
_MESSAGE_KEYS = ("message", "msg", "log", "body", "text", "event")
# where a structured line keeps its stack trace (python-json-logger, structlog, OpenTelemetry's
# exception.stacktrace, ECS's error.stack_trace, pino's and bunyan's err.stack, zap's stacktrace)
_STACK_KEYS = (
    "stack",
    "stack_trace",
    "stacktrace",
    "exc_info",
    "exception",
    "traceback",
    "exception.stacktrace",
    "error.stack_trace",
    "error.stack",
    "err.stack",
)
_SERVICE_KEYS = ("service.name", "service_name", "serviceName", "service")
_TRACE_KEYS = ("trace_id", "traceId", "traceID", "trace.id", "TraceId", "dd.trace_id", "otelTraceID")
_CODE_KEYS = (
    "error_code",
    "errorCode",
    "error.code",
    "code",
    "status",
    "status_code",
    "http.status_code",
    "http.response.status_code",
    "statusCode",
)

# A text line: an optional timestamp, an optional level, the rest.
_STAMP = re.compile(
    r"^\[?(?P<ts>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:\s?(?:Z|[+-]\d{2}:?\d{2}))?"
    r"|\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?"
    r"|\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4}"
    r"|[A-Z][a-z]{2}\s+\d{1,2} \d{2}:\d{2}:\d{2}"
    r"|\d{10}(?:\.\d+)?|\d{13}|\d{16}|\d{19})\]?\s*"
)
_LEVEL = re.compile(
    r"^\[?(?P<level>TRACE|DEBUG|INFO|NOTICE|WARN(?:ING)?|ERROR|ERR|SEVERE|CRITICAL|CRIT|FATAL|PANIC)\]?[:\s]\s*",
    re.IGNORECASE,
)
_CONTINUATION = re.compile(
    r"^(\s+|\tat |Caused by:|\.\.\. \d+ (more|common frames)|Traceback \(most recent|"
    r"[A-Za-z_][\w.]*(Error|Exception)(:|$)|During handling of the above)"
)
_TRACE_IN_TEXT = re.compile(r"(?i)\btrace[_-]?id[=:\s\"]+([0-9a-f-]{16,36})\b|\b00-([0-9a-f]{32})-[0-9a-f]{16}-0[01]\b")
_CODE_IN_TEXT = re.compile(
    r"(?i)\b(?:status(?:_code)?|code|http_status)[=:\s\"]+([1-5]\d\d)\b"
    r"|\b(HTTP/\d(?:\.\d)?\"?\s+)([45]\d\d)\b"
    r"|\b((?:[a-z_$][\w$]*\.)+[A-Z]\w*(?:Exception|Error))\b"
)


@dataclass(frozen=True, slots=True)
class Normalised:
    records: list[LogRecord]
    undated: int  # lines dated by the record before them, or dropped when first


def severity_of(value: Any, *, key: str = "") -> Severity:
    """One scale from any vocabulary: words, syslog 0-7, OpenTelemetry 1-24, pino 10-60."""
    if isinstance(value, bool) or value is None:
        return Severity.UNKNOWN
    if isinstance(value, int | float) or (isinstance(value, str) and value.strip().isdigit()):
        n = int(float(value))
        if "number" in key.lower() or "Number" in key:  # OpenTelemetry severity_number
            return _otel(n)
        if n in (10, 20, 30, 40, 50, 60):  # pino / bunyan
            return {
                10: Severity.DEBUG,
                20: Severity.DEBUG,
                30: Severity.INFO,
                40: Severity.WARNING,
                50: Severity.ERROR,
                60: Severity.CRITICAL,
            }[n]
        if 0 <= n <= 7:
            return _SYSLOG_NUMBERS[n]
        return _otel(n)
    return _WORDS.get(str(value).strip().strip("[]").lower(), Severity.UNKNOWN)


def _otel(n: int) -> Severity:
    if n <= 0:
        return Severity.UNKNOWN
    if n <= 8:
        return Severity.DEBUG
    return (Severity.INFO, Severity.WARNING, Severity.ERROR, Severity.CRITICAL)[min(3, (n - 9) // 4)]


def join_lines(lines: Iterable[str]) -> list[tuple[str, int]]:
    """Records from raw lines, each with the index of its first line: continuation lines
    (stack frames, `Caused by:`) join the record before them; a line that opens with a
    timestamp, a level or `{` starts a new one."""
    records: list[tuple[str, int]] = []
    for i, raw in enumerate(lines):
        line = raw.rstrip("\r\n")
        if not line.strip():
            continue
        starts = line.startswith("{") or _STAMP.match(line) is not None or _LEVEL.match(line) is not None
        if records and not starts and _CONTINUATION.match(line):
            records[-1] = (records[-1][0] + "\n" + line, records[-1][1])
        else:
            records.append((line, i))
    return records


def normalise(
    lines: Iterable[str],
    *,
    service: str,
    instance: str = "",
    year: int | None = None,
    times: Sequence[float] | None = None,
) -> Normalised:
    """LogRecords from raw lines of one source (a file, a Loki stream) whose service is known;
    a record's own service field, when it has one, wins. `times`, one per line (Loki's own
    stamps), date the records that carry no timestamp of their own."""
    out: list[LogRecord] = []
    undated = 0
    last: float | None = None
    for text, first in join_lines(lines):
        if times is not None and first < len(times):
            last = times[first]
        fields = _json_fields(text) if text.startswith("{") else None
        record = (
            _from_json(fields, text, service, instance, year)
            if fields is not None
            else _from_text(text, service, instance, year)
        )
        if record.time != record.time:  # NaN: no timestamp of its own
            undated += 1
            if last is None:
                continue
            record = _with_time(record, last)
        last = record.time
        out.append(record)
    return Normalised(out, undated)


def _json_fields(text: str) -> dict[str, Any] | None:
    first_line = text.split("\n", 1)[0]
    try:
        doc = json.loads(first_line)
    except json.JSONDecodeError:
        return None
    return _flatten(doc) if isinstance(doc, dict) else None


def _flatten(doc: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in doc.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and len(out) < 200:
            out.update(_flatten(v, key + "."))
        out[key] = v
    return out


def _pick(fields: Mapping[str, Any], keys: Iterable[str], kind: type = object) -> tuple[str, Any] | None:
    """The first of `keys` the line fills (with a value of `kind`), and its value."""
    for k in keys:
        v = fields.get(k)
        if v not in (None, "") and isinstance(v, kind):
            return k, v
    return None


def _time(value: Any, year: int | None) -> float:
    try:
        return parse_timestamp(value if isinstance(value, int | float) else str(value), year=year)
    except InputError:
        return float("nan")


def _from_json(fields: dict[str, Any], text: str, service: str, instance: str, year: int | None) -> LogRecord:
    when = _pick(fields, _TIME_KEYS)
    level = _pick(fields, _LEVEL_KEYS)
    message = _pick(fields, _MESSAGE_KEYS)
    body = str(message[1]) if message else text.split("\n", 1)[0]
    extra = text.split("\n", 1)[1] if "\n" in text else ""
    if extra:
        body += "\n" + extra
    stack = _pick(fields, _STACK_KEYS, str)
    if stack:  # a structured line's stack is part of its record, as a text line's is
        body += "\n" + stack[1]
    own_service = _pick(fields, _SERVICE_KEYS)
    trace = _pick(fields, _TRACE_KEYS)
    code = _pick(fields, _CODE_KEYS)
    error_code = str(code[1]) if code and _is_error_code(code[1]) else _code_in(body)
    severity = severity_of(level[1], key=level[0]) if level else Severity.UNKNOWN
    if severity is Severity.UNKNOWN:
        severity = _severity_in(body, error_code)
    return LogRecord(
        time=_time(when[1], year) if when else float("nan"),
        entity=str(own_service[1]) if own_service and isinstance(own_service[1], str) else service,
        severity=severity,
        message=body,
        trace_id=str(trace[1]) if trace else _trace_in(body),
        instance=instance,
        error_code=error_code,
    )


def _from_text(text: str, service: str, instance: str, year: int | None) -> LogRecord:
    rest = text
    stamp = _STAMP.match(rest)
    when = float("nan")
    if stamp:
        when = _time(stamp.group("ts"), year)
        rest = rest[stamp.end() :]
    level = _LEVEL.match(rest)
    severity = Severity.UNKNOWN
    if level:
        severity = severity_of(level.group("level"))
        rest = rest[level.end() :]
    code = _code_in(rest)
    if severity is Severity.UNKNOWN:
        severity = _severity_in(rest, code)
    return LogRecord(
        time=when,
        entity=service,
        severity=severity,
        message=rest,
        trace_id=_trace_in(rest),
        instance=instance,
        error_code=code,
    )


_PRI = re.compile(r"<(\d{1,3})>")  # syslog priority: facility * 8 + severity


def _severity_in(text: str, code: str = "") -> Severity:
    head = text.split("\n", 1)[0]
    upper = head.upper()
    if any(w in upper for w in ("FATAL", "CRITICAL", "PANIC")):
        return Severity.CRITICAL
    if any(w in upper for w in ("EXCEPTION", "ERROR", "SEVERE", "TRACEBACK")):
        return Severity.ERROR
    if "WARN" in upper:
        return Severity.WARNING
    pri = _PRI.search(head)
    if pri and int(pri.group(1)) < 192:
        return _SYSLOG_NUMBERS[int(pri.group(1)) % 8]
    if code.isdigit():  # an access log line: a 5xx is an error, a 4xx a warning
        return Severity.ERROR if int(code) >= 500 else Severity.WARNING
    return Severity.UNKNOWN


def _trace_in(text: str) -> str:
    m = _TRACE_IN_TEXT.search(text)
    return (m.group(1) or m.group(2) or "") if m else ""


def _code_in(text: str) -> str:
    m = _CODE_IN_TEXT.search(text)
    if not m:
        return ""
    code = m.group(1) or m.group(3) or m.group(4) or ""
    return code if not code.isdigit() or _is_error_code(code) else ""


def _is_error_code(value: Any) -> bool:
    text = str(value)
    return not text.isdigit() or int(text) >= 400


def _with_time(record: LogRecord, t: float) -> LogRecord:
    return LogRecord(
        t,
        record.entity,
        record.severity,
        record.message,
        record.trace_id,
        record.template_id,
        record.instance,
        record.location,
        record.error_code,
    )
