"""compose.yaml cannot be started here (no container registry), so what can drift from the code
is checked instead: the services it promises, the commands it runs, the variables it and
.env.example set, and that the bot and the worker share one record and one queue."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from bot.cli import _parser

ROOT = Path(__file__).resolve().parents[1]
KNOWN = set(re.findall(r"RCABOT_[A-Z_]+", (ROOT / "bot" / "config.py").read_text()))


def _compose() -> dict:  # type: ignore[type-arg]
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def test_compose_runs_the_bot_a_worker_postgresql_and_redis() -> None:
    services = _compose()["services"]
    assert {"bot", "worker", "postgres", "redis"} <= set(services)
    commands = {name: services[name]["command"] for name in ("bot", "worker")}
    assert commands == {"bot": ["rcabot", "serve"], "worker": ["rcabot", "worker"]}
    for argv in commands.values():
        _parser().parse_args(argv[1:])  # a subcommand the CLI has (argparse exits otherwise)


def test_the_bot_and_the_worker_share_one_record_and_one_queue() -> None:
    services = _compose()["services"]
    bot, worker = services["bot"]["environment"], services["worker"]["environment"]
    assert bot["RCABOT_DB"] == worker["RCABOT_DB"] and bot["RCABOT_QUEUE"] == worker["RCABOT_QUEUE"]
    db, queue = urlsplit(bot["RCABOT_DB"]), urlsplit(bot["RCABOT_QUEUE"])
    assert db.scheme == "postgresql" and db.hostname == "postgres"
    pg = services["postgres"]["environment"]
    assert (db.username, db.password, db.path.lstrip("/")) == (
        pg["POSTGRES_USER"],
        pg["POSTGRES_PASSWORD"],
        pg["POSTGRES_DB"],
    )
    assert queue.scheme == "redis" and queue.hostname == "redis"
    assert "--appendonly" in services["redis"]["command"]  # the queue survives a Redis restart there


def test_every_variable_compose_and_the_example_set_is_one_the_bot_reads() -> None:
    services = _compose()["services"]
    set_here = {k for s in services.values() for k in (s.get("environment") or {}) if k.startswith("RCABOT_")}
    example = set(re.findall(r"^#?\s*(RCABOT_[A-Z_]+)=", (ROOT / ".env.example").read_text(), re.MULTILINE))
    assert set_here and example
    assert set_here | example <= KNOWN, sorted((set_here | example) - KNOWN)
