import pytest

from handlers.requests import DEFAULT_WINDOW, Kind, RcaCommand, parse_rca_command
from rca.errors import InputError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ts-order-service 30m", RcaCommand(Kind.INVESTIGATE, "ts-order-service", "30m")),
        ("ts-order-service", RcaCommand(Kind.INVESTIGATE, "ts-order-service", "30m")),
        ("  `ts-order-service`   1h 30m ", RcaCommand(Kind.INVESTIGATE, "ts-order-service", "1h 30m")),
        ("ts-order-service 14:05 - 14:35", RcaCommand(Kind.INVESTIGATE, "ts-order-service", "14:05 - 14:35")),
        ("ts-order-service 14:05 to 14:35", RcaCommand(Kind.INVESTIGATE, "ts-order-service", "14:05 - 14:35")),
        ("checkout last 1 hour", RcaCommand(Kind.INVESTIGATE, "checkout", "1 hour")),
        ("ts-order-service last 90s", RcaCommand(Kind.INVESTIGATE, "ts-order-service", "90s")),
        (
            "api 2026-01-29T13:00Z/2026-01-29T13:30Z",
            RcaCommand(Kind.INVESTIGATE, "api", "2026-01-29T13:00Z/2026-01-29T13:30Z"),
        ),
        ("", RcaCommand(Kind.HELP)),
        ("help", RcaCommand(Kind.HELP)),
        ("STATUS", RcaCommand(Kind.STATUS)),
        ("summary", RcaCommand(Kind.SUMMARY)),
        ("summary daily 09:00", RcaCommand(Kind.SUBSCRIBE, at="09:00", tz="UTC")),
        ("Summary DAILY 7:30 Europe/Berlin", RcaCommand(Kind.SUBSCRIBE, at="7:30", tz="Europe/Berlin")),
        ("summary off", RcaCommand(Kind.UNSUBSCRIBE)),
    ],
)
def test_parses(text: str, expected: RcaCommand) -> None:
    assert parse_rca_command(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "<@U123> 10m",
        "$(rm -rf) 5m",
        "svc a b c d",
        "x" * 400,
        '{job=~".+"} 5m',
        "ü-service",
        "summary weekly 09:00",
        "summary daily",
        "summary daily 09:00 UTC extra",
    ],
)
def test_refuses_with_a_reason(text: str) -> None:
    with pytest.raises(InputError) as err:
        parse_rca_command(text)
    assert str(err.value)


@pytest.mark.parametrize(
    ("typed", "seconds"),
    [
        ("1 hour", 3600),
        ("1h 30m", 5400),
        ("90 minutes", 5400),
        ("2 days", 172800),
        ("45 secs", 45),
        ("14:05 - 14:35", 1800),
        ("hour", 3600),
        ("an hour", 3600),
    ],
)
@pytest.mark.parametrize("said", ["last", "past", "the last", "for the past", "over the last"])
def test_windows_read_as_people_type_them(typed: str, seconds: int, said: str) -> None:
    from rca.windows import parse_window

    window = parse_rca_command(f"checkout {said} {typed}").window
    assert parse_window(window, now=1_700_000_000.0).seconds == seconds


def test_a_bad_window_is_named_as_typed() -> None:
    from rca.errors import WindowError
    from rca.windows import parse_window

    with pytest.raises(WindowError, match="'1 fortnight'"):
        parse_window(parse_rca_command("checkout last 1 fortnight").window, now=1_700_000_000.0)


def test_changes_take_an_optional_service_and_window() -> None:
    assert parse_rca_command("changes") == RcaCommand(Kind.CHANGES, "", DEFAULT_WINDOW)
    assert parse_rca_command("changes 2h") == RcaCommand(Kind.CHANGES, "", "2h")
    assert parse_rca_command("changes 14:05-14:35") == RcaCommand(Kind.CHANGES, "", "14:05-14:35")
    assert parse_rca_command("changes orders") == RcaCommand(Kind.CHANGES, "orders", DEFAULT_WINDOW)
    assert parse_rca_command("changes orders last 1 hour") == RcaCommand(Kind.CHANGES, "orders", "1 hour")
    with pytest.raises(InputError, match="not a service name"):
        parse_rca_command("changes <!channel> 1h")
