"""Reasoners: who proposes actions, reflects on them and writes the decision.

The offline reasoner is deterministic and needs nothing outside the process; a model-backed
reasoner implements the same Protocol and drops in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from rca.decision import Decision
from rca.search.actions import Action
from rca.search.state import DiagnosticState, Reflection, Step

PHASES = ("proposal", "reflection", "handoff", "decision", "repair", "question")


@dataclass(frozen=True, slots=True)
class Usage:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    notes: tuple[str, ...] = ()  # what did not go as planned (a fallback, a spent budget)
    phases: tuple[tuple[str, int, int], ...] = ()  # (phase, calls, tokens) of the phases that called


class Reasoner(Protocol):
    name: str

    def for_investigation(self) -> Reasoner:
        """The reasoner one investigation uses (its own budget and usage, where it has them)."""
        ...

    async def propose(self, state: DiagnosticState, *, n: int, seed: int) -> list[Action]:
        """N candidate actions, sampled; repeats are allowed and measure self-consistency."""
        ...

    async def reflect(self, state: DiagnosticState, steps: Sequence[Step]) -> list[Reflection]:
        """One reflection per executed step, all in one call."""
        ...

    async def decide(self, state: DiagnosticState) -> Decision:
        """The final ranking from the merged state."""
        ...

    def usage(self) -> Usage:
        """What this reasoner has spent so far."""
        ...

    async def aclose(self) -> None:
        """Release what it holds (a model client's connections)."""
        ...
