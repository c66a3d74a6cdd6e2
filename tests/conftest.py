"""Shared fixtures: the real slices that ship with the repo, and the full datasets when present."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "bot" / "demo"
NEZHA_SLICE = DEMO / "nezha-trainticket"
PETSHOP_SLICE = ROOT / "tests" / "data" / "petshop"
SHARED = ROOT.parent / "shared" / "datasets"


@pytest.fixture()
def nezha_slice() -> Path:
    return NEZHA_SLICE


@pytest.fixture()
def petshop_slice() -> Path:
    return PETSHOP_SLICE


@pytest.fixture()
def shared_datasets() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared/datasets is not beside the repo")
    return SHARED
