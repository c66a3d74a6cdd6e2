"""The live thread's narration: progress events condensed into a few markdown lines.

What engineers want to watch is what the bot reads, what it finds and how the hypotheses'
values move; every iteration's bookkeeping would drown that, so it is left out.
"""

from __future__ import annotations

from rca.search.events import (
    ActionTaken,
    Event,
    EvidenceFound,
    Finished,
    Handoff,
    HypothesesRanked,
)

AGENT = {"metric": "📈 metrics", "log": "📜 logs", "trace": "🧵 traces"}


class Narrator:
    """Turns events into lines; keeps just enough state to say what changed."""

    def __init__(self, *, evidence_per_action: int = 2) -> None:
        self._per_action = evidence_per_action
        self._shown_for_action = 0
        self._last_top: tuple[tuple[str, str], ...] = ()
        self._seen_queries: set[str] = set()

    def line(self, event: Event) -> str | None:
        if isinstance(event, ActionTaken):
            self._shown_for_action = 0
            if event.query in self._seen_queries:
                return None
            self._seen_queries.add(event.query)
            return f"{AGENT.get(str(event.agent), str(event.agent))} · `{_clip(event.query, 110)}` ({event.status})"
        if isinstance(event, EvidenceFound):
            self._shown_for_action += 1
            if self._shown_for_action > self._per_action or event.score < 3:
                return None
            return f"    ↳ *{event.entity}*: {_clip(event.detail, 140)}"
        if isinstance(event, HypothesesRanked):
            top = tuple((s, f) for s, f, _ in event.top[:3])
            if not top or top == self._last_top:
                return None
            self._last_top = top
            values = ", ".join(f"{s} ({f}) {v:.2f}" for s, f, v in event.top[:3])
            return f"⚖️ hypotheses: {values} — reward {event.reward:.2f}"
        if isinstance(event, Handoff):
            return f"🔀 handoff {event.source} → {event.target}: {_clip(event.reason, 120)}"
        if isinstance(event, Finished):
            return f"✅ {_clip(event.summary, 200)}"
        return None


def _clip(text: str, n: int) -> str:
    text = " ".join(str(text).split()).replace("`", "'")
    return text if len(text) <= n else text[: n - 1] + "…"
