"""Spans kept as columns answer every question as a list of span objects would: the same
spans back, the same window and service cuts, the same call graph."""

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from rca.sources.memory import InMemoryTraces, topology_from_spans
from rca.sources.protocols import SpanQuery
from rca.telemetry import Span, SpanStatus, SpanTable, Window

SERVICES = ("api", "orders", "db", "cache")


@st.composite
def span_sets(draw: st.DrawFn) -> list[Span]:
    """Traces of a few spans each; a parent may be missing (a span cut off by the window)."""
    spans: list[Span] = []
    for t in range(draw(st.integers(0, 6))):
        ids: list[str] = []
        for i in range(draw(st.integers(1, 6))):
            parent = draw(st.sampled_from(["", *ids, "gone"])) if ids else ""
            start = draw(st.floats(0, 600, allow_nan=False))
            spans.append(
                Span(
                    f"t{t}",
                    f"s{i}",
                    parent,
                    draw(st.sampled_from(SERVICES)),
                    f"op{i % 2}",
                    start,
                    start + draw(st.floats(0, 5, allow_nan=False)),
                    draw(st.sampled_from(list(SpanStatus))),
                    f"pod-{i}",
                )
            )
            ids.append(f"s{i}")
    return spans


def _graph_by_objects(spans: list[Span]) -> dict[tuple[str, str], int]:
    """Caller -> callee call counts, read one span object at a time."""
    entity_of = {(s.trace_id, s.span_id): s.entity for s in spans}
    calls: dict[tuple[str, str], int] = {}
    for s in spans:
        caller = entity_of.get((s.trace_id, s.parent_id)) if s.parent_id else None
        if caller is not None and caller != s.entity:
            calls[(caller, s.entity)] = calls.get((caller, s.entity), 0) + 1
    return calls


@settings(max_examples=60, deadline=None)
@given(span_sets())
def test_a_table_holds_the_same_spans(spans: list[Span]) -> None:
    table = SpanTable.of(spans)
    assert len(table) == len(spans)
    assert list(table) == spans
    assert list(SpanTable.concat([table[:2], table[2:]])) == spans


@settings(max_examples=60, deadline=None)
@given(span_sets(), st.floats(0, 600), st.floats(1, 300), st.sets(st.sampled_from(SERVICES), max_size=2))
def test_window_and_service_cuts_match_a_plain_filter(
    spans: list[Span], lo: float, width: float, wanted: set[str]
) -> None:
    window = Window(lo, lo + width)
    found = asyncio.run(InMemoryTraces(spans).spans(SpanQuery(window, tuple(sorted(wanted)))))
    expected = [s for s in spans if window.start <= s.start < window.end and (not wanted or s.entity in wanted)]
    assert sorted(found, key=lambda s: (s.start, s.trace_id, s.span_id)) == sorted(
        expected, key=lambda s: (s.start, s.trace_id, s.span_id)
    )


@settings(max_examples=60, deadline=None)
@given(span_sets(), st.floats(0, 600), st.floats(1, 300))
def test_a_window_cut_comes_in_start_order_ties_as_given(spans: list[Span], lo: float, width: float) -> None:
    """What an investigation reads is the same list, in the same order, however the index holds it."""
    window = Window(lo, lo + width)
    found = list(asyncio.run(InMemoryTraces(SpanTable.of(spans)).spans(SpanQuery(window, ()))))
    assert found == sorted((s for s in spans if window.start <= s.start < window.end), key=lambda s: s.start)


@settings(max_examples=60, deadline=None)
@given(span_sets())
def test_the_call_graph_counts_calls_between_services(spans: list[Span]) -> None:
    graph = topology_from_spans(SpanTable.of(spans))
    assert {(a, b): d["calls"] for a, b, d in graph.edges(data=True)} == _graph_by_objects(spans)
    assert set(graph.nodes) == {s.entity for s in spans}


def test_a_span_id_met_twice_names_one_parent() -> None:
    """Where a client and a server span share an id (one trace model does), a child counts one call."""
    spans = [
        Span("t", "a", "", "api", "op", 0, 1),
        Span("t", "a", "", "proxy", "op", 0, 1),
        Span("t", "b", "a", "db", "op", 0, 1),
    ]
    graph = topology_from_spans(spans)
    assert {(a, b): d["calls"] for a, b, d in graph.edges(data=True)} == {("proxy", "db"): 1}


@settings(max_examples=60, deadline=None)
@given(span_sets())
def test_a_linked_table_keeps_its_parent_links_and_a_cut_finds_its_own(spans: list[Span]) -> None:
    """Links found once for several readers are the ones each would find; a table cut from it
    (other rows) finds its own."""
    table = SpanTable.of(spans)
    linked = table.linked()
    for got, want in zip(linked.parent_pairs(), table.parent_pairs(), strict=True):
        assert got.tolist() == want.tolist()
    assert linked.linked() is linked and list(linked) == spans
    cut = linked[1:]
    for got, want in zip(cut.parent_pairs(), SpanTable.of(spans[1:]).parent_pairs(), strict=True):
        assert got.tolist() == want.tolist()
