import pytest

from rca.redact import redact

SECRETS = [
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcDEFghiJKL", "eyJhbGciOiJIUzI1NiJ9"),
    ("login failed for admin password=Hunter2!x", "Hunter2!x"),
    ('{"user": "bob", "password": "s3cr3t-pass"}', "s3cr3t-pass"),
    ("DB_PASSWORD: correcthorse", "correcthorse"),
    ("connecting to postgres://app:verysecret@db:5432/orders", "verysecret"),
    ("aws key AKIAIOSFODNN7EXAMPLE used", "AKIAIOSFODNN7EXAMPLE"),
    ("slack xoxb-123456789012-abcdefghijkl", "xoxb-123456789012-abcdefghijkl"),
    ("anthropic key sk-ant-api03-abcdefghijklmnopqrstuv", "sk-ant-api03-abcdefghijklmnopqrstuv"),
    ("api_key=ZXhhbXBsZWtleQ&x=1", "ZXhhbXBsZWtleQ"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "MIIEow"),
    ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
]


@pytest.mark.parametrize(("line", "secret"), SECRETS)
def test_secrets_are_removed(line: str, secret: str) -> None:
    out = redact(line)
    assert secret not in out and "REDACTED" in out


@pytest.mark.parametrize(
    "line",
    [
        "GET /api/v1/orders 200 12ms",
        "CpuUsage(m) rose to 500.4 (normal 4.384, robust z 324.0)",
        "INFO '[createNewOrder][Create Order][from shanghai to suzhou]' 3.8/min (new)",
        "token bucket refilled",
        "password reset page rendered",
    ],
)
def test_ordinary_telemetry_is_untouched(line: str) -> None:
    assert redact(line) == line
