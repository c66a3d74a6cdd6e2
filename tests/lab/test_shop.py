"""The lab's seeded shops and fault schedules: every seed a different, well-formed system."""

from __future__ import annotations

import networkx as nx
import pytest

from lab.faults import DEFECTS, FAMILIES, LABELS, bystander_changes, can_suffer, schedule
from lab.record import FIXED_SEEDS, prometheus_config, seeds_of
from lab.shop import STORES, Shop, draw_shop
from rca.model import FaultType, fault_type_from_text


@pytest.mark.parametrize("seed", range(40))
def test_every_shop_is_a_reachable_call_tree_of_6_to_10(seed: int) -> None:
    shop = draw_shop(seed)
    graph = nx.DiGraph(shop.edges())
    graph.add_nodes_from(s.name for s in shop.services)
    names = [s.name for s in shop.services]
    assert 6 <= len(names) <= 10 and len(set(names)) == len(names)
    assert nx.is_directed_acyclic_graph(graph)
    assert nx.descendants(graph, shop.entry) == set(names) - {shop.entry}
    assert {s.store for s in shop.services} <= {*STORES, ""}
    assert any(s.store for s in shop.services)
    assert Shop.from_json(shop.to_json()) == shop


def test_seeds_draw_different_systems_and_the_same_seed_the_same() -> None:
    assert draw_shop(3) == draw_shop(3)
    shapes = {(tuple(s.name for s in draw_shop(seed).services), tuple(draw_shop(seed).edges())) for seed in range(20)}
    assert len(shapes) == 20


def test_schedule_covers_every_family_where_it_can_show() -> None:
    for seed in range(10):
        shop = draw_shop(seed)
        plan = schedule(shop, len(FAMILIES) * 2)
        assert plan == schedule(shop, len(FAMILIES) * 2)
        assert {f.family for f in plan[: len(FAMILIES)]} == set(FAMILIES)
        assert all(can_suffer(shop, f.service, f.family) for f in plan)
        assert [f.offset for f in plan] == sorted(f.offset for f in plan)
        assert all((f.defect in DEFECTS) == (f.family == "deploy") for f in plan)
    with pytest.raises(ValueError, match="unknown fault families"):
        schedule(draw_shop(0), 3, families=("cpu", "meteor"))


def test_every_label_is_typed_by_the_engine_s_own_fault_words() -> None:
    typed = {family: fault_type_from_text(label) for family, label in LABELS.items()}
    assert FaultType.UNKNOWN not in typed.values()
    assert typed["cpu"] is FaultType.CPU and typed["memory"] is FaultType.MEMORY and typed["disk"] is FaultType.DISK
    assert typed["deploy"] is typed["config"] is FaultType.RELEASE


def test_harmless_changes_fall_on_services_no_fault_is_on_then() -> None:
    for seed in range(10):
        shop = draw_shop(seed)
        plan = schedule(shop, 6)
        changes = bystander_changes(shop, plan, 5)
        assert changes == bystander_changes(shop, plan, 5) and len(changes) <= 5
        assert [c.offset for c in changes] == sorted(c.offset for c in changes)
        for c in changes:
            assert 0 <= c.offset <= max(f.offset + f.seconds for f in plan)
            assert not any(f.service == c.service and f.offset - 60 <= c.offset <= f.offset + f.seconds for f in plan)
    assert bystander_changes(draw_shop(0), schedule(draw_shop(0), 3), 0) == ()


def test_seeds_are_fixed_ranges_or_fresh_above_them() -> None:
    assert seeds_of("0-2") == [0, 1, 2] and seeds_of("5,7-8") == [5, 7, 8]
    fresh = seeds_of("fresh:4")
    assert len(set(fresh)) == 4 and min(fresh) >= FIXED_SEEDS.stop
    for bad in ("", "a-b", "3-x"):
        with pytest.raises(ValueError):
            seeds_of(bad)


def test_prometheus_scrapes_every_service_under_its_name() -> None:
    shop = draw_shop(2)
    ports = {s.name: 20000 + i for i, s in enumerate(shop.services)}
    config = prometheus_config(shop, ports)
    for s in shop.services:
        assert f"127.0.0.1:{ports[s.name]}" in config and f"service: '{s.name}'" in config


def test_ports_handed_out_never_repeat_and_a_stranger_on_a_port_fails_the_run() -> None:
    import json
    import subprocess
    import sys
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    from lab.record import _port, _wait_service

    ports = [_port() for _ in range(200)]
    assert len(set(ports)) == 200

    class Other(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"service": "someone-else"}).encode()
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return None

    server = HTTPServer(("127.0.0.1", 0), Other)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(RuntimeError, match="answered by 'someone-else'"):
            _wait_service("cart", server.server_address[1], sleeper, seconds=5)
    finally:
        server.shutdown()
        sleeper.kill()
        sleeper.wait()
    gone = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    gone.wait()
    with pytest.raises(RuntimeError, match="exited with 3"):
        _wait_service("cart", _port(), gone, seconds=5)
