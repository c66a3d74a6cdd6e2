import pytest

from handlers.requests import Kind, RcaCommand, parse_rca_command
from rca.errors import InputError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ts-order-service 30m", RcaCommand(Kind.INVESTIGATE, "ts-order-service", "30m")),
        ("ts-order-service", RcaCommand(Kind.INVESTIGATE, "ts-order-service", "30m")),
        ("  `ts-order-service`   1h 30m ", RcaCommand(Kind.INVESTIGATE, "ts-order-service", "1h30m")),
        ("ts-order-service 14:05 - 14:35", RcaCommand(Kind.INVESTIGATE, "ts-order-service", "14:05-14:35")),
        ("ts-order-service 14:05 to 14:35", RcaCommand(Kind.INVESTIGATE, "ts-order-service", "14:05-14:35")),
        ("ts-order-service last 90s", RcaCommand(Kind.INVESTIGATE, "ts-order-service", "90s")),
        ("api 2026-01-29T13:00Z/2026-01-29T13:30Z", RcaCommand(Kind.INVESTIGATE, "api", "2026-01-29T13:00Z/2026-01-29T13:30Z")),
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


@pytest.mark.parametrize("text", ["<@U123> 10m", "$(rm -rf) 5m", "svc a b c d", "x" * 400, "{job=~\".+\"} 5m", "ü-service",
                                  "summary weekly 09:00", "summary daily", "summary daily 09:00 UTC extra"])
def test_refuses_with_a_reason(text: str) -> None:
    with pytest.raises(InputError) as err:
        parse_rca_command(text)
    assert str(err.value)
