"""The checked-in lab recording (tests/data/lab-0) reads like any publisher's: labels apart,
every modality present, and the engine names only services the shop has."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from lab.shop import Shop
from rca.engines import build_engine
from rca.model import FaultType
from rca.sources.datasets import find_cases

FIXTURE = Path(__file__).resolve().parent.parent / "data" / "lab-0"


def test_the_lab_fixture_holds_eight_labelled_incidents_of_several_families() -> None:
    shop = Shop.from_json(json.dumps(json.loads((FIXTURE / "lab.json").read_text())["shop"]))
    names = {s.name for s in shop.services}
    cases = find_cases(FIXTURE)
    assert len(cases) == 8
    assert len({c.label.fault_type for c in cases}) >= 5 and FaultType.UNKNOWN not in {
        c.label.fault_type for c in cases
    }
    assert {c.label.service for c in cases} <= names
    for case in cases:
        assert case.incident.symptom == shop.entry
        assert all(case.incident.sources.modalities().values())
    # a CPU hog and a memory leak: the engine reads them end to end and names only the shop's services
    for case in [c for c in cases if c.label.fault_type in (FaultType.CPU, FaultType.MEMORY)]:
        diagnosis = asyncio.run(build_engine("lats").investigate(case.incident))
        assert diagnosis.ranking and {c.service for c in diagnosis.ranking} <= names
