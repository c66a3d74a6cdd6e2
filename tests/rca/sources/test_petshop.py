import asyncio
import math
import shutil
from pathlib import Path

import pytest

from rca.errors import LayoutNotFound, MalformedFile
from rca.model import FaultType, Modality
from rca.sources.datasets import find_cases
from rca.sources.petshop import load_petshop, read_graph, read_metrics
from rca.sources.protocols import MetricQuery


def test_slice_cases_keep_the_split_in_their_ids(petshop_slice: Path) -> None:
    cases = {c.id: c for c in find_cases(petshop_slice)}
    assert set(cases) == {"petshop/low_traffic/test/issue_2", "petshop/low_traffic/test/issue_12"}
    delay = cases["petshop/low_traffic/test/issue_2"]
    assert delay.label.service == "payforadoption_AWS::ECS::Container"
    assert delay.label.fault_type is FaultType.NETWORK_DELAY
    assert cases["petshop/low_traffic/test/issue_12"].label.fault_type is FaultType.EXCEPTION
    inc = delay.incident
    assert inc.symptom == "PetSite"
    assert inc.alert_time is not None and inc.window.contains(inc.alert_time)
    assert inc.sources.modalities() == {"metrics": True, "logs": False, "traces": False}
    assert "logs: absent" in inc.notes
    normal = inc.normal_for(Modality.METRICS)
    assert normal is not None and not normal.window.overlaps(inc.window)  # noissue is another day


def test_four_row_header_metrics(petshop_slice: Path) -> None:
    series = read_metrics(petshop_slice / "low_traffic" / "test" / "issue_2" / "metrics.csv")
    names = {s.metric for s in series}
    assert {"latency.Average", "latency.p99", "requests.Sum", "availability.Average"} <= names
    site = next(s for s in series if s.entity == "PetSite" and s.metric == "latency.Average")
    assert len(site) == 5 and site.timestamps[1] - site.timestamps[0] == 300
    assert any(math.isnan(v) for s in series for v in s.values)  # empty cells are NaN


def test_graph_rows_call_columns(petshop_slice: Path) -> None:
    graph = read_graph(petshop_slice / "low_traffic" / "graph.csv")
    assert graph.number_of_nodes() == 42
    assert graph.has_edge("PetSite", "PetSearch_AWS::ECS::Fargate")
    assert not graph.has_edge("PetSearch_AWS::ECS::Fargate", "PetSite")


def test_without_noissue_the_series_before_the_symptom_serves(petshop_slice: Path, tmp_path: Path) -> None:
    root = tmp_path / "shop"
    shutil.copytree(petshop_slice, root)
    shutil.rmtree(root / "low_traffic" / "noissue")
    case = next(c for c in load_petshop(root) if c.id.endswith("issue_2"))
    inc = case.incident
    normal = inc.normal_for(Modality.METRICS)
    assert normal is not None and normal.window.end == inc.alert_time
    assert normal.sources is inc.sources
    assert any("noissue" in n for n in inc.notes)
    got = asyncio.run(inc.sources.metrics.series(MetricQuery(normal.window, ("PetSite",))))  # type: ignore[union-attr]
    assert got and all(len(s) < 5 for s in got)


def test_broken_target_names_the_file(petshop_slice: Path, tmp_path: Path) -> None:
    root = tmp_path / "shop"
    shutil.copytree(petshop_slice, root)
    (root / "low_traffic" / "test" / "issue_2" / "target.json").write_text('{"target": {}}')
    with pytest.raises(MalformedFile, match="target.json"):
        load_petshop(root)


def test_no_layout_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(LayoutNotFound):
        find_cases(tmp_path / "empty")
    with pytest.raises(LayoutNotFound):
        find_cases(tmp_path / "does-not-exist")


def test_full_datasets_hold_97_cases(shared_datasets: Path) -> None:
    cases = find_cases(shared_datasets)
    assert len(cases) == 97
    assert sum(c.incident.dataset == "petshop" for c in cases) == 52
    assert len({c.id for c in cases}) == 97
