"""Settings, read once from the environment into a frozen value (the only reader of os.environ)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from rca.errors import InputError
from rca.reasoners import Reasoner
from rca.reasoners.claude import DEFAULT_MODEL, ClaudeConfig
from rca.reasoners.offline import OfflineReasoner
from rca.timestamps import parse_timestamp
from storage.database import record


@dataclass(frozen=True, slots=True)
class LiveConfig:
    """Live backends; each one present replaces that modality of the replayed data (if any)."""

    prometheus_url: str = ""
    prom_mapping: Path | None = None
    loki_url: str = ""
    loki_label: str = "service"  # the stream label that names a service
    log_dir: Path | None = None  # a directory of per-service log files
    jaeger_url: str = ""
    otlp: Path | None = None  # an OTLP/JSON trace export (a file, or a directory of them)
    topology: Path | None = None  # a call graph in YAML, when there are no traces
    timeout: float = 10.0  # per backend query

    @property
    def any(self) -> bool:
        return bool(
            self.prometheus_url or self.loki_url or self.log_dir or self.jaeger_url or self.otlp or self.topology
        )


@dataclass(frozen=True, slots=True)
class Settings:
    bot_token: str = field(default="", repr=False)
    signing_secret: str = field(default="", repr=False)
    app_token: str = field(default="", repr=False)  # Socket Mode when set
    api_url: str = ""  # the Web API base URL, for proxies and tests
    port: int = 3000
    db: Path | str = Path("rcabot.db")  # a SQLite file, or a postgresql:// URL
    data: Path | None = None  # a recorded dataset to replay; the embedded incident when None
    now: float | None = None  # "now" inside the replayed data
    engine: str = "lats"
    workers: int = 2  # investigations that run at once; the rest queue
    shutdown_grace: float = 30.0  # seconds running investigations get to finish on SIGTERM
    time_budget: float = 300.0  # seconds an investigation may search before it decides on what it has
    read_budget: int | None = None  # telemetry reads an investigation may make (None: no limit)
    summary_channel: str = ""
    summary_cron: str = "0 9 * * *"
    summary_tz: str = "UTC"
    reasoner: str = "offline"  # offline | claude (claude when ANTHROPIC_API_KEY is set)
    anthropic_api_key: str = field(default="", repr=False)
    anthropic_base_url: str = ""
    model: str = DEFAULT_MODEL
    llm_max_calls: int = 20
    llm_max_tokens: int = 60_000
    live: LiveConfig = LiveConfig()
    allowed_channels: frozenset[str] = frozenset()  # empty: every channel
    allowed_users: frozenset[str] = frozenset()  # user ids and user-group ids (S...); empty: everyone
    thread_questions: int = 20  # follow-up questions answered in one investigation's thread
    runbooks: Path | None = None  # YAML: per service owner, dashboard, runbook, rollback hint
    alert_token: str = ""  # the bearer token Alertmanager's http_config sends; or
    alert_basic: str = ""  # "user:password" for HTTP basic auth; neither: no alert webhook
    alert_routes: Path | None = None  # YAML: label matchers -> channel and service label
    alert_threads_per_minute: int = 10  # new investigation threads alerts may open per channel a minute
    queue: str = field(default="", repr=False)  # a redis:// URL: investigations run as jobs (bot.queue, bot.worker)
    job_timeout: float | None = None  # seconds one attempt may take (default: time_budget + 60)
    relay_lease: float = 30.0  # seconds a replica holds a queued investigation's thread between renewals x3
    worker_nice: int = 10  # `rcabot worker` yields the CPU to a bot replica on the same machine (acks first)

    def claude(self) -> ClaudeConfig:
        return ClaudeConfig(
            model=self.model,
            api_key=self.anthropic_api_key or None,
            base_url=self.anthropic_base_url or None,
            max_calls=self.llm_max_calls,
            max_tokens=self.llm_max_tokens,
        )

    def build_reasoner(self) -> Reasoner:
        """The reasoner these settings name: Claude, or the deterministic offline one."""
        if self.reasoner != "claude":
            return OfflineReasoner()
        from rca.reasoners.claude import ClaudeReasoner

        return ClaudeReasoner(self.claude())

    @property
    def socket_mode(self) -> bool:
        return bool(self.app_token)


def _queue(url: str) -> str:
    """RCABOT_QUEUE: empty (investigations run in this process) or a Redis URL."""
    if url and not url.startswith(("redis://", "rediss://", "unix://")):
        raise InputError("RCABOT_QUEUE: expected a redis:// (or rediss://) URL of the job queue")
    return url


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
    key = text("ANTHROPIC_API_KEY")
    reasoner = text("RCABOT_REASONER", "claude" if key else "offline").lower()
    if reasoner not in ("claude", "offline"):
        raise InputError(f"RCABOT_REASONER={reasoner!r}: expected claude or offline")
    if reasoner == "claude" and not key:
        raise InputError("RCABOT_REASONER=claude needs ANTHROPIC_API_KEY")
    return Settings(
        bot_token=text("SLACK_BOT_TOKEN"),
        signing_secret=text("SLACK_SIGNING_SECRET"),
        app_token=text("SLACK_APP_TOKEN"),
        api_url=text("SLACK_API_URL"),
        port=number("PORT", 3000, low=1, high=65535),
        db=record(text("RCABOT_DB", "rcabot.db")),
        data=Path(text("RCABOT_DATA")) if text("RCABOT_DATA") else None,
        now=parse_timestamp(now) if now else None,
        engine=text("RCABOT_ENGINE", "lats"),
        workers=number("RCABOT_WORKERS", 2, low=1, high=64),
        shutdown_grace=float(number("RCABOT_SHUTDOWN_GRACE", 30, low=0, high=3600)),
        time_budget=float(number("RCABOT_INVESTIGATION_BUDGET", 300, low=5, high=3600)),
        read_budget=number("RCABOT_READ_BUDGET", 0, low=0, high=100_000) or None,
        summary_channel=text("RCABOT_SUMMARY_CHANNEL"),
        summary_cron=cron,
        summary_tz=tz,
        reasoner=reasoner,
        anthropic_api_key=key,
        anthropic_base_url=text("ANTHROPIC_BASE_URL"),
        model=text("RCABOT_MODEL", DEFAULT_MODEL),
        llm_max_calls=number("RCABOT_LLM_MAX_CALLS", 20, low=0, high=1000),
        llm_max_tokens=number("RCABOT_LLM_MAX_TOKENS", 60_000, low=0, high=10_000_000),
        allowed_channels=_ids("RCABOT_ALLOWED_CHANNELS", text("RCABOT_ALLOWED_CHANNELS")),
        allowed_users=_ids("RCABOT_ALLOWED_USERS", text("RCABOT_ALLOWED_USERS")),
        thread_questions=number("RCABOT_THREAD_QUESTIONS", 20, low=0, high=1000),
        runbooks=_path(text("RCABOT_RUNBOOKS")),
        alert_token=text("RCABOT_ALERT_TOKEN"),
        alert_basic=_basic(text("RCABOT_ALERT_BASIC")),
        alert_routes=_path(text("RCABOT_ALERT_ROUTES")),
        alert_threads_per_minute=number("RCABOT_ALERT_THREADS_PER_MINUTE", 10, low=1, high=1000),
        queue=_queue(text("RCABOT_QUEUE")),
        job_timeout=float(number("RCABOT_JOB_TIMEOUT", 0, low=0, high=7200)) or None,
        relay_lease=float(number("RCABOT_RELAY_LEASE", 30, low=2, high=600)),
        worker_nice=number("RCABOT_WORKER_NICE", 10, low=0, high=19),
        live=LiveConfig(
            prometheus_url=check_url("PROMETHEUS_URL", text("PROMETHEUS_URL")),
            prom_mapping=_path(text("RCABOT_PROM_MAPPING")),
            loki_url=check_url("LOKI_URL", text("LOKI_URL")),
            loki_label=text("RCABOT_LOKI_LABEL", "service"),
            log_dir=_path(text("RCABOT_LOG_DIR")),
            jaeger_url=check_url("JAEGER_URL", text("JAEGER_URL")),
            otlp=_path(text("RCABOT_OTLP")),
            topology=_path(text("RCABOT_TOPOLOGY")),
            timeout=float(number("RCABOT_BACKEND_TIMEOUT", 10, low=1, high=300)),
        ),
    )


def _ids(name: str, value: str) -> frozenset[str]:
    ids = frozenset(v.strip() for v in value.split(",") if v.strip())
    bad = [v for v in ids if not v.isalnum()]
    if bad:
        raise InputError(f"{name}: {bad[0]!r} is not a Slack id (comma-separated ids like C0123, U0456, S0789)")
    return ids


def _basic(value: str) -> str:
    if value and (":" not in value or value.startswith(":")):
        raise InputError("RCABOT_ALERT_BASIC: expected user:password")
    return value


def _path(value: str) -> Path | None:
    return Path(value) if value else None


def check_url(name: str, value: str) -> str:
    """An http(s) URL, or an InputError naming the setting."""
    if value and not value.startswith(("http://", "https://")):
        raise InputError(f"{name}={value!r}: expected an http:// or https:// URL")
    return value


def require_slack(settings: Settings) -> None:
    """Refuse to serve Slack without the credentials it needs, naming what is missing."""
    missing = [
        name
        for name, value in (("SLACK_BOT_TOKEN", settings.bot_token), ("SLACK_SIGNING_SECRET", settings.signing_secret))
        if not value
    ]
    if missing:
        raise InputError(f"set {' and '.join(missing)} (see .env.example), or try `rcabot console`")


def reasoner_of(args: argparse.Namespace) -> Reasoner:
    """The reasoner a command's `--reasoner` names, else the settings' (claude where a key is set)."""
    settings = read_settings()
    if args.reasoner == "claude" and not settings.anthropic_api_key:
        raise InputError("--reasoner claude needs ANTHROPIC_API_KEY")
    chosen = args.reasoner or settings.reasoner
    return replace(settings, reasoner=chosen).build_reasoner()
