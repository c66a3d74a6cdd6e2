"""Plain-text rendering of results for the terminal."""

from __future__ import annotations

import sys
from typing import TextIO

from bot import blockkit
from bot.runbooks import Runbook
from bot.verdicts import Verdict
from rca.model import Diagnosis, Incident
from rca.search.events import (
    ActionTaken,
    Event,
    EvidenceFound,
    Finished,
    Handoff,
    HypothesesRanked,
    IterationStarted,
)
from rca.star.audit import Audit
from rca.star.verify import VerificationRun
from rca.telemetry import to_iso


def render_event(event: Event) -> str | None:
    """One line of the live view for a progress event (None for events not shown)."""
    if isinstance(event, IterationStarted):
        return f"[{event.agent}] iteration {event.iteration}: node {event.node} (depth {event.depth})"
    if isinstance(event, ActionTaken):
        return f"[{event.agent}]   -> {event.action} ({event.status}, sc {event.sc:.1f})"
    if isinstance(event, EvidenceFound):
        return f"[{event.agent}]      {event.evidence_id} {event.entity}: {event.detail[:110]}"
    if isinstance(event, HypothesesRanked):
        tops = ", ".join(f"{s} {f} {v:.2f}" for s, f, v in event.top[:3]) or "none yet"
        return (
            f"[{event.agent}]   hypotheses: {tops}  (R {event.reward:.2f}, r {event.r:.2f}, c_comp {event.c_comp:.2f})"
        )
    if isinstance(event, Handoff):
        return f"[supervisor] handoff {event.source} -> {event.target}: {event.reason}; summary: {event.summary}"
    if isinstance(event, Finished):
        return f"[supervisor] decision: {event.summary}"
    return None


def render_audit(audit: Audit) -> str:
    """The STAR verdict: score, route, the weakest stage and its violations in plain words."""
    blamed = audit.blamed
    lines = [
        f"STAR audit: S = {audit.score:.2f}, route {audit.route.value.replace('_', ' ')}; "
        f"telemetry support {audit.support:.2f}, trust {audit.trust:.2f}"
    ]
    if blamed is None:
        lines.append("  no stage violates an RCA requirement")
        return "\n".join(lines)
    lines.append(f"  weakest stage: {blamed.stage.replace('_', ' ')} (severity {blamed.severity:.2f})")
    for d in audit.stages:
        for c in d.violations:
            lines.append(f"  - {d.stage.replace('_', ' ')} / {c.name.replace('_', ' ')} {c.score:.2f}: {c.explanation}")
    return "\n".join(lines)


def render_verification(run: VerificationRun) -> str:
    """The verification tests: what each expected, what it observed, and the new ranking."""
    lines = [f"{'test':<5} {'on':<28} {'tool':<8} {'expected':<34} {'observed':<10}"]
    for o in run.outcomes:
        expected = ", ".join(f"{h}: {v}" for h, v in o.test.expected)
        lines.append(f"{o.test.id:<5} {o.test.target[:28]:<28} {o.test.tool:<8} {expected[:34]:<34} {o.observed:<10}")
        lines.append(f"      {o.detail[:110]}")
    lines.append("")
    lines.append("re-ranked: " + ", ".join(f"{h.service} {h.fault_type.value} {h.value:.2f}" for h in run.after[:5]))
    lines.append("before:    " + ", ".join(h.service for h in run.before[:5]))
    return "\n".join(lines)


def render_diagnosis(incident: Incident, diagnosis: Diagnosis, *, top: int = 5) -> str:
    """A ranked list of root-cause candidates with their evidence."""
    cost = diagnosis.cost
    lines = [
        f"Incident {incident.id}",
        f"  symptom at {incident.symptom or '(unknown)'}, window {to_iso(incident.window.start)}"
        f" .. {to_iso(incident.window.end)} ({incident.window.seconds / 60:.0f} min)",
        f"  engine {diagnosis.engine}, {cost.seconds:.2f} s, {cost.iterations} iterations, "
        f"{cost.evidence_items} evidence items, {cost.hypotheses} hypotheses explored, "
        f"{cost.llm_calls} model calls ({cost.llm_tokens} tokens)",
    ]
    for note in diagnosis.missing:
        lines.append(f"  note: {note}")
    if not diagnosis.ranking:
        lines.append("  no root-cause candidate: nothing anomalous was found in what could be read")
        return "\n".join(lines)
    lines.append("")
    lines.append(f"  {'#':>2}  {'candidate':<40} {'fault type':<14} {'score':>8}")
    for i, c in enumerate(diagnosis.ranking[:top], start=1):
        lines.append(f"  {i:>2}  {c.service:<40} {c.fault_type.value:<14} {c.score:>8.2f}")
        for ev in c.evidence[:3]:
            lines.append(f"        - {ev}")
    return "\n".join(lines)


class ProgressBar:
    """A one-line progress bar on stderr; on a non-terminal, a line every tenth."""

    def __init__(self, stream: TextIO | None = None, width: int = 30) -> None:
        self._stream = stream or sys.stderr  # the stderr of when it is made, not of when this module loaded
        self._width = width
        self._tty = self._stream.isatty()
        self._last_decile = -1

    def __call__(self, done: int, total: int, label: str) -> None:
        frac = done / total if total else 1.0
        if self._tty:
            filled = int(frac * self._width)
            bar = "#" * filled + "-" * (self._width - filled)
            self._stream.write(f"\r[{bar}] {done}/{total} {label[:50]:<50}")
            if done == total:
                self._stream.write("\n")
        else:
            decile = int(frac * 10)
            if decile != self._last_decile:
                self._last_decile = decile
                self._stream.write(f"progress {done}/{total} ({frac:.0%})\n")
        self._stream.flush()


def render_verdict(v: Verdict, *, runbook: Runbook | None = None) -> str:
    """A finished investigation for the console: the words of Slack's verdict (the same
    renderer), under a line naming the investigation and its window."""
    # Slack's renderer needs the desk, which the CLI need not load for its other commands
    from bot import render

    head = f"Verdict for {v.service} ({v.id}), window {to_iso(v.window.start)} .. {to_iso(v.window.end)}"
    return head + "\n" + blockkit.as_text(render.verdict(v, runbook=runbook)[1])
