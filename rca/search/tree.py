"""The search tree: nodes, UCT selection and running-mean backpropagation.

Pure functions over a mutable tree; nothing here awaits or reads telemetry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from rca.evidence import EvidenceId
from rca.search.actions import Action


@dataclass(frozen=True, slots=True)
class Reflection:
    """The reasoner's judgement of one step: evidence quality, completeness, consistency."""

    e: float
    c_comp: float
    k: float
    note: str = ""

    @property
    def r(self) -> float:
        """r = (e + c_comp + k) / 3."""
        return (self.e + self.c_comp + self.k) / 3.0


@dataclass(slots=True, eq=False)
class Node:
    """One diagnostic state: the evidence gathered along the path and the scope in view."""

    id: int
    action: Action | None
    parent: Node | None
    evidence: frozenset[EvidenceId]
    scope: frozenset[str]
    leads: tuple[str, ...] = ()
    depth: int = 0
    visits: int = 0
    value: float = 0.0
    reward: float = 0.0
    reflection: Reflection | None = None
    sc: float = 0.0
    terminal: bool = False
    children: list[Node] = field(default_factory=list)

    def path(self) -> list[Node]:
        """Root to this node."""
        out: list[Node] = []
        node: Node | None = self
        while node is not None:
            out.append(node)
            node = node.parent
        return out[::-1]

    def actions_taken(self) -> set[str]:
        return {n.action.signature for n in self.path() if n.action is not None}


def uct(node: Node, *, c: float) -> float:
    """V_i + c * sqrt(ln n_p / n_i); an unvisited node is tried first."""
    if node.visits == 0:
        return math.inf
    parent_visits = node.parent.visits if node.parent is not None else node.visits
    return node.value + c * math.sqrt(math.log(max(parent_visits, 1)) / node.visits)


def select(root: Node, *, c: float, max_depth: int) -> Node:
    """Descend from the root by highest UCT to a node that can still be expanded."""
    node = root
    while node.children:
        open_children = [ch for ch in node.children if not ch.terminal and ch.depth < max_depth]
        if not open_children:
            break
        node = max(open_children, key=lambda ch: (uct(ch, c=c), -ch.id))
    return node


def backpropagate(node: Node, reward: float, *, enabled: bool = True) -> None:
    """Add the reward to every node on the path to the root as a running mean.

    Disabled (the ablation), only the node itself records the reward.
    """
    current: Node | None = node
    while current is not None:
        current.visits += 1
        current.value += (reward - current.value) / current.visits
        if not enabled:
            break
        current = current.parent


def best_node(root: Node) -> Node:
    """The node with the highest value among the visited, deepest first on ties."""
    best, stack = root, [root]
    while stack:
        n = stack.pop()
        if n.visits and (n.value, n.depth, -n.id) > (best.value, best.depth, -best.id):
            best = n
        stack.extend(n.children)
    return best
