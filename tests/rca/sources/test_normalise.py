import json
from datetime import UTC, datetime

import pytest

from rca.sources.normalise import join_lines, normalise, severity_of
from rca.telemetry import Severity
from rca.timestamps import parse_timestamp

T = datetime(2024, 1, 5, 10, 11, 12, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("stamp", "expected"),
    [
        ("2024-01-05T10:11:12Z", T),
        ("2024-01-05T12:11:12+02:00", T),
        ("2024-01-05T05:11:12.000-05:00", T),
        ("2024-01-05 10:11:12,000", T),  # Java (logback, log4j)
        ("2024-01-05 10:11:12.000000000 +0000 UTC m=+13260.230634824", T),  # Go's time.String()
        ("2024/01/05 10:11:12", T),  # Go's log package
        ("05/Jan/2024:11:11:12 +0100", T),  # Apache / nginx
        ("Jan  5 10:11:12", T),  # syslog, no year
        ("Fri Jan  5 10:11:12 2024", T),  # asctime
        ("1704449472", T),
        ("1704449472000", T),
        ("1704449472000000", T),
        ("1704449472000000000", T),
    ],
)
def test_every_timestamp_form(stamp: str, expected: float) -> None:
    assert parse_timestamp(stamp, year=2024) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("value", "key", "expected"),
    [
        ("SEVERE", "level", Severity.ERROR),
        ("WARNING", "level", Severity.WARNING),
        ("CRITICAL", "", Severity.CRITICAL),
        ("ERROR", "", Severity.ERROR),
        ("warn", "", Severity.WARNING),
        ("notice", "", Severity.INFO),
        (3, "priority", Severity.ERROR),
        (4, "level", Severity.WARNING),
        (6, "level", Severity.INFO),  # syslog
        (17, "severity_number", Severity.ERROR),
        (9, "severityNumber", Severity.INFO),
        (21, "severity_number", Severity.CRITICAL),
        (50, "level", Severity.ERROR),
        (30, "level", Severity.INFO),
        (60, "level", Severity.CRITICAL),  # pino / bunyan
        ("nonsense", "", Severity.UNKNOWN),
    ],
)
def test_every_severity_vocabulary(value: object, key: str, expected: Severity) -> None:
    assert severity_of(value, key=key) is expected


def test_text_lines_with_stack_traces_joined() -> None:
    lines = [
        "2024-01-05T10:11:12Z ERROR Failed to place order trace_id=4bf92f3577b34da6a3ce929d0e0e4736",
        "java.lang.IllegalStateException: stock service unavailable",
        "\tat com.shop.Orders.place(Orders.java:42)",
        "Caused by: java.net.ConnectException: Connection refused",
        "\t... 12 more",
        "2024-01-05T10:11:13Z INFO next request",
        "Traceback (most recent call last):",
        '  File "app.py", line 3, in <module>',
        "ValueError: bad input",
    ]
    assert [i for _, i in join_lines(lines)] == [0, 5]
    out = normalise(lines, service="orders")
    first, second = out.records
    assert first.severity is Severity.ERROR and first.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert first.error_code == "java.lang.IllegalStateException" and "Caused by" in first.message
    assert second.time == T + 1 and "ValueError: bad input" in second.message


def test_json_lines_of_several_shapes() -> None:
    lines = [
        '{"ts": 1704449472123, "level": 50, "msg": "db down", "service": {"name": "payments"}, "traceId": "abc123abc123abc1"}',
        '{"time": "2024-01-05T10:11:12Z", "severity_number": 17, "body": "otel error", "http.response.status_code": 500}',
        '{"@timestamp": "2024-01-05T10:11:12.5+00:00", "log.level": "warn", "message": "slow", "status": 200}',
        '{"asctime": "2024-01-05 10:11:12,250", "levelname": "CRITICAL", "message": "oom"}',
    ]
    a, b, c, d = normalise(lines, service="api").records
    assert (a.entity, a.severity, a.trace_id, a.time) == ("payments", Severity.ERROR, "abc123abc123abc1", T + 0.123)
    assert (b.entity, b.severity, b.error_code, b.message) == ("api", Severity.ERROR, "500", "otel error")
    assert c.error_code == "" and c.time == T + 0.5  # a 200 is not an error code
    assert d.severity is Severity.CRITICAL and d.time == T + 0.25


@pytest.mark.parametrize(
    "field",
    ["stack", "exc_info", "exception", "stack_trace", "error.stack_trace", "exception.stacktrace", "err.stack"],
)
def test_a_structured_line_keeps_its_stack_trace_as_a_text_line_does(field: str) -> None:
    stack = 'Traceback (most recent call last):\n  File "shop.py", line 9, in discount\nKeyError: 3'
    head, _, rest = field.partition(".")
    value: object = {rest: stack} if rest else stack  # a dotted key as its logger nests it
    line = json.dumps({"time": "2024-01-05T10:11:12Z", "level": "ERROR", "message": "request failed: 3", head: value})
    (structured,) = normalise([line], service="shop").records
    (text,) = normalise(["2024-01-05T10:11:12Z ERROR request failed: 3", *stack.split("\n")], service="shop").records
    assert structured.message == text.message == "request failed: 3\n" + stack


def test_access_syslog_and_undated_lines() -> None:
    lines = [
        "Jan  5 10:11:12 host app[12]: <3> disk gone",
        '05/Jan/2024:10:11:13 +0000 "GET /x HTTP/1.1" 502 12',
        "a line with no time of its own, WARN",
    ]
    out = normalise(lines, service="edge", year=2024)
    syslog, access, undated = out.records
    assert syslog.severity is Severity.ERROR and syslog.time == T
    assert access.severity is Severity.ERROR and access.error_code == "502"
    assert undated.time == access.time and undated.severity is Severity.WARNING and out.undated == 1
    assert normalise(["no time at all"], service="x").records == []  # nothing to date it by
    assert normalise(["no time at all"], service="x", times=[T]).records[0].time == T  # Loki's own stamp
