"""Changes to a running system: a deploy, a config push, a feature flag, a scaling, a rollback,
a restart.

On-call asks "what changed?" before anything else. A change is a fact with a time and a
service, read from where teams already record it (a deploy marker, a CD system's webhook, the
bot's record of them); which changes fall in a window, and near which services, is asked here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from rca.telemetry import Window, to_iso
from rca.timestamps import parse_timestamp


class ChangeKind(StrEnum):
    DEPLOY = "deploy"
    CONFIG = "config"
    FLAG = "flag"
    SCALE = "scale"
    ROLLBACK = "rollback"
    RESTART = "restart"  # the process started again (its start time moved)


@dataclass(frozen=True, slots=True)
class Change:
    service: str
    kind: ChangeKind
    time: float  # when it took effect (epoch seconds)
    before: str = ""  # the version, value or size before, where known
    after: str = ""
    who: str = ""
    link: str = ""  # an http(s) link to the change (a pipeline run, a commit, an Argo CD application)
    source: str = ""  # where it was read: marker, argocd, github

    def to_json(self) -> dict[str, object]:
        return {
            "service": self.service,
            "kind": self.kind.value,
            "time": to_iso(self.time),
            "before": self.before,
            "after": self.after,
            "who": self.who,
            "link": self.link,
            "source": self.source,
        }

    @staticmethod
    def from_json(doc: object, *, source: str = "") -> Change:
        """The change `to_json` wrote; ValueError (or InputError for a bad time) for anything
        else. `source` where the document names none."""
        if not isinstance(doc, dict):
            raise ValueError("not an object")

        def text(key: str) -> str:
            value = doc.get(key, "")
            if not isinstance(value, str) or len(value) > 2000:
                raise ValueError(key)
            return value

        service = text("service")
        if not service:
            raise ValueError("service")
        return Change(
            service=service[:200],
            kind=ChangeKind(text("kind")),
            time=parse_timestamp(text("time")),
            before=text("before"),
            after=text("after"),
            who=text("who"),
            link=text("link"),
            source=text("source") or source,
        )

    def describe(self) -> str:
        """`orders 1.4.2 → 1.4.3 (deploy by ci)`, as much of it as is known."""
        what = f"{self.before} → {self.after}" if self.before and self.after else self.after or self.before
        by = f" by {self.who}" if self.who else ""
        return f"{self.service} {what} ({self.kind.value}{by})".replace("  ", " ")


def write_changes(changes: Iterable[Change], path: Path) -> None:
    """Changes as JSON lines (a recording's `changes.jsonl`), earliest first."""
    lines = [json.dumps(c.to_json(), ensure_ascii=False) for c in sorted(changes, key=lambda c: (c.time, c.service))]
    path.write_text("".join(line + "\n" for line in lines))


LOOK_BACK = 3600.0  # a change up to an hour before the window may have started what it shows


def within(changes: Iterable[Change], start: float, end: float, services: Iterable[str] = ()) -> list[Change]:
    """The changes that took effect in [start, end], to any of `services` (all where none are
    named), earliest first."""
    named = set(services)
    return sorted(
        (c for c in changes if start <= c.time <= end and (not named or c.service in named)),
        key=lambda c: (c.time, c.service),
    )


def known(changes: Iterable[Change], window: Window) -> tuple[Change, ...]:
    """The changes known to whoever asks about `window` at its end: from LOOK_BACK before it to
    its end, earliest first. A change made after the question was asked had not happened yet."""
    return tuple(within(changes, window.start - LOOK_BACK, window.end))


def listed(changes: Iterable[Change]) -> str:
    """One line per change, earliest first: its time (UTC), what changed and who changed it."""
    return "\n".join(f"{to_iso(c.time)} {c.describe()}" for c in changes)
