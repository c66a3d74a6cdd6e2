"""The live thread's narration: progress events condensed into a few lines per agent turn.

What engineers want to watch is what the bot is reading, what it found there and what it now
suspects. Each turn of an agent becomes one line (the services it read and its strongest
finding), the suspicion one more line when the lead changes, and a handoff one line; every
read's query stays in the trace, one click away, not in the thread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rca.explain import readable
from rca.search.events import (
    ActionTaken,
    Event,
    EvidenceFound,
    Finished,
    Handoff,
    HypothesesRanked,
    IterationStarted,
    Restarted,
    Waiting,
)

AGENT = {"metric": "📈 metrics", "log": "📜 logs", "trace": "🧵 traces"}
NOTABLE = 3.0  # a robust deviation below this is not called a finding (the evidence's own scale)
NAMED = 3  # services named per turn line; the rest are counted
_ENTITY = re.compile(r"entity=([^,}\]]+)")
_METER = re.compile(r"\s*\(r [^)]*\)")  # the search's own reward figures


@dataclass
class _Turn:
    agent: str = ""
    read: list[str] = field(default_factory=list)
    best: tuple[float, str, str] | None = None  # (score, entity, detail)


class Narrator:
    """Turns events into lines; `line` returns the lines an event completes (often none)."""

    def __init__(self) -> None:
        self._turn = _Turn()
        self._lead: tuple[str, str] | None = None

    def lines(self, event: Event) -> list[str]:
        if isinstance(event, ActionTaken):
            out = self._flush() if self._turn.agent not in ("", str(event.agent)) else []  # one line per agent
            self._turn.agent = str(event.agent)
            match = _ENTITY.search(event.query)
            name = match.group(1) if match else "every service (a scan)"
            if name not in self._turn.read:
                self._turn.read.append(name)
            return out
        if isinstance(event, EvidenceFound):
            if event.score >= NOTABLE and (self._turn.best is None or event.score > self._turn.best[0]):
                self._turn.best = (event.score, event.entity, event.detail)
            return []
        if isinstance(event, HypothesesRanked):
            out = self._flush()
            if event.top and event.top[0][:2] != self._lead:
                self._lead = event.top[0][:2]
                rest = ", ".join(s for s, _, _ in event.top[1:3])
                out.append(
                    f"⚖️ now suspects *{event.top[0][0]}* ({event.top[0][1]})" + (f", then {rest}" if rest else "")
                )
            return out
        if isinstance(event, IterationStarted):
            return self._flush()
        if isinstance(event, Handoff):
            return [
                *self._flush(),
                f"🔀 {AGENT.get(str(event.source), str(event.source))} hands over to "
                f"{AGENT.get(str(event.target), str(event.target))}: {_clip(_METER.sub('', event.reason), 100)}",
            ]
        if isinstance(event, Finished):
            return [*self._flush(), f"✅ {_clip(event.summary, 200)}"]
        if isinstance(event, Restarted):
            self._turn, self._lead = _Turn(), None  # what the stopped run read is read again
            return [f"↻ restarted (attempt {event.attempt}): {_clip(event.reason, 160)}"]
        if isinstance(event, Waiting):
            return [*self._flush(), f"⏸ {_clip(event.reason, 200)}"]
        return []

    def _flush(self) -> list[str]:
        turn, self._turn = self._turn, _Turn()
        if not turn.read:
            return []
        names = ", ".join(turn.read[:NAMED]) + (f" (+{len(turn.read) - NAMED} more)" if len(turn.read) > NAMED else "")
        found = (
            f"strongest: *{turn.best[1]}*: {_clip(readable(turn.best[2]), 110)}"
            if turn.best is not None
            else "nothing abnormal"
        )
        return [f"{AGENT.get(turn.agent, turn.agent)} read {names} — {found}"]


def _clip(text: str, n: int) -> str:
    text = " ".join(str(text).split()).replace("`", "'")
    return text if len(text) <= n else text[: n - 1] + "…"
