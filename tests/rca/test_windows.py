import pytest

from rca.errors import WindowError
from rca.timestamps import parse_timestamp
from rca.windows import parse_duration, parse_window

NOW = parse_timestamp("2023-01-29T14:40:00Z")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("15m", 900),
        ("1h30m", 5400),
        ("90s", 90),
        ("2d", 172800),
        (" 30M ", 1800),
        ("hour", 3600),
        ("an hour", 3600),
        ("a day", 86400),
        ("1 hour 30 minutes", 5400),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds
    w = parse_window(text, now=NOW)
    assert (w.start, w.end) == (NOW - seconds, NOW)


def test_clock_range_on_the_day_of_now() -> None:
    w = parse_window("14:05-14:35", now=NOW)
    assert w.start == parse_timestamp("2023-01-29T14:05:00Z")
    assert w.end == parse_timestamp("2023-01-29T14:35:00Z")


def test_clock_range_later_than_now_means_yesterday() -> None:
    w = parse_window("23:00-23:30", now=NOW)
    assert w.start == parse_timestamp("2023-01-28T23:00:00Z")


def test_clock_range_across_midnight() -> None:
    w = parse_window("13:50-00:10", now=NOW)
    assert w.seconds == 10 * 3600 + 20 * 60


def test_iso_range() -> None:
    w = parse_window("2023-01-29T08:40:00Z/2023-01-29T09:10:00Z", now=NOW)
    assert w.seconds == 1800


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "0m",
        "-5m",
        "5x",
        "m",
        "1h30",
        "25:00-26:00",
        "14:70-15:00",
        "10d",
        "2023-01-29T09:00Z/2023-01-29T08:00Z",
        "a/b",
        "x" * 200,
        "15m; drop table",
    ],
)
def test_bad_windows_raise_a_clear_error(bad: str) -> None:
    with pytest.raises(WindowError) as info:
        parse_window(bad, now=NOW)
    assert "bad window" in str(info.value)
