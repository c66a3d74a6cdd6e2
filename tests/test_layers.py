"""The rooms' arrows point one way, and an evaluation loads none of the bot's server or live
backends (pyproject's import-linter contracts, function-level imports included): a test, so
that a lazy import cannot hide a cycle between rooms."""

from __future__ import annotations

from pathlib import Path

import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[1]


def test_each_room_imports_only_the_rooms_below_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True) == 0
