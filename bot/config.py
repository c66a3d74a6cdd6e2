"""Settings, read once from the environment into a frozen value (the only reader of os.environ)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from rca.errors import InputError
from rca.timestamps import parse_timestamp


@dataclass(frozen=True, slots=True)
class Settings:
    bot_token: str = ""
    signing_secret: str = ""
    app_token: str = ""  # Socket Mode when set
    api_url: str = ""  # the Web API base URL, for proxies and tests
    port: int = 3000
    db: Path = Path("rcabot.db")
    data: Path | None = None  # a recorded dataset to replay; the embedded incident when None
    now: float | None = None  # "now" inside the replayed data
    engine: str = "lats"
    workers: int = 2  # investigations that run at once; the rest queue
    summary_channel: str = ""
    summary_cron: str = "0 9 * * *"
    summary_tz: str = "UTC"

    @property
    def socket_mode(self) -> bool:
        return bool(self.app_token)


def read_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Settings from the environment, with a clear error naming any bad variable."""
    env = os.environ if env is None else env

    def text(name: str, default: str = "") -> str:
        return env.get(name, default).strip() or default

    def number(name: str, default: int, *, low: int, high: int) -> int:
        raw = text(name, str(default))
        if not raw.isdigit() or not low <= int(raw) <= high:
            raise InputError(f"{name}={raw!r}: expected a whole number from {low} to {high}")
        return int(raw)

    cron, tz = text("RCABOT_SUMMARY_CRON", "0 9 * * *"), text("RCABOT_SUMMARY_TZ", "UTC")
    if not croniter.is_valid(cron):
        raise InputError(f"RCABOT_SUMMARY_CRON={cron!r}: not a cron expression (e.g. '0 9 * * *')")
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InputError(f"RCABOT_SUMMARY_TZ={tz!r}: not a time zone (e.g. 'Europe/Berlin')") from exc
    now = text("RCABOT_NOW")
    return Settings(
        bot_token=text("SLACK_BOT_TOKEN"),
        signing_secret=text("SLACK_SIGNING_SECRET"),
        app_token=text("SLACK_APP_TOKEN"),
        api_url=text("SLACK_API_URL"),
        port=number("PORT", 3000, low=1, high=65535),
        db=Path(text("RCABOT_DB", "rcabot.db")),
        data=Path(text("RCABOT_DATA")) if text("RCABOT_DATA") else None,
        now=parse_timestamp(now) if now else None,
        engine=text("RCABOT_ENGINE", "lats"),
        workers=number("RCABOT_WORKERS", 2, low=1, high=64),
        summary_channel=text("RCABOT_SUMMARY_CHANNEL"),
        summary_cron=cron,
        summary_tz=tz,
    )


def require_slack(settings: Settings) -> None:
    """Refuse to serve Slack without the credentials it needs, naming what is missing."""
    missing = [name for name, value in (("SLACK_BOT_TOKEN", settings.bot_token),
                                        ("SLACK_SIGNING_SECRET", settings.signing_secret)) if not value]  # fmt: skip
    if missing:
        raise InputError(f"set {' and '.join(missing)} (see .env.example), or try `rcabot console`")
