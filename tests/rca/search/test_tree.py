import math

import pytest

from rca.search.actions import Action, Tool
from rca.search.tree import Node, Reflection, backpropagate, best_node, select, uct


def _node(i: int, parent: Node | None = None) -> Node:
    n = Node(i, Action(Tool.METRICS, f"s{i}") if parent else None, parent, frozenset(), frozenset())
    if parent is not None:
        n.depth = parent.depth + 1
        parent.children.append(n)
    return n


def test_reflection_score_is_the_mean_of_its_three_parts() -> None:
    assert Reflection(0.9, 0.6, 0.3).r == pytest.approx(0.6)


def test_uct_arithmetic() -> None:
    root = _node(0)
    a, b = _node(1, root), _node(2, root)
    root.visits, a.visits, a.value, b.visits, b.value = 10, 4, 0.5, 1, 0.2
    assert uct(a, c=1.0) == pytest.approx(0.5 + math.sqrt(math.log(10) / 4))
    assert uct(b, c=1.0) == pytest.approx(0.2 + math.sqrt(math.log(10) / 1))
    assert uct(_node(3, root), c=1.0) == math.inf  # unvisited first


def test_select_descends_by_uct_and_skips_terminal_children() -> None:
    root = _node(0)
    a, b = _node(1, root), _node(2, root)
    root.visits, a.visits, a.value, b.visits, b.value = 10, 5, 0.9, 5, 0.1
    a1 = _node(3, a)
    a1.visits, a1.value = 1, 0.5
    assert select(root, c=0.0, max_depth=6) is a1
    a1.terminal = True
    assert select(root, c=0.0, max_depth=6) is a  # a's only child is closed: expand a itself
    a.terminal = True
    assert select(root, c=0.0, max_depth=6) is b


def test_backpropagation_is_a_running_mean_up_the_path() -> None:
    root = _node(0)
    a = _node(1, root)
    leaf = _node(2, a)
    backpropagate(leaf, 1.0)
    backpropagate(leaf, 0.0)
    assert (leaf.visits, leaf.value) == (2, 0.5)
    backpropagate(a, 0.8)
    assert a.visits == 3 and a.value == pytest.approx((1.0 + 0.0 + 0.8) / 3)
    assert root.visits == 3 and root.value == pytest.approx(0.6)


def test_backpropagation_ablation_stops_at_the_node() -> None:
    root = _node(0)
    a = _node(1, root)
    backpropagate(a, 0.7, enabled=False)
    assert (a.visits, a.value, root.visits) == (1, 0.7, 0)


def test_best_node_prefers_value_then_depth() -> None:
    root = _node(0)
    a, b = _node(1, root), _node(2, root)
    a.visits, a.value, b.visits, b.value = 1, 0.4, 1, 0.6
    deep = _node(3, b)
    deep.visits, deep.value = 1, 0.6
    assert best_node(root) is deep
