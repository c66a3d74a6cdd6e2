"""Answers to follow-up questions about one investigation, read from its trace and audit.

Offline and deterministic: the question is parsed into a topic and the services or metric it
names, and the answer quotes the trace (hypotheses, evidence, chains, tests), never invents.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from rca.evidence import Evidence
from rca.hypotheses import Hypothesis
from rca.rules.timing import Elsewhere, elsewhere, reference
from rca.telemetry import to_iso
from rca.trace import Trace


class Topic(StrEnum):
    WHY = "why"  # why this candidate (the leading one when none is named)
    WHY_NOT = "why_not"  # why not that one
    EVIDENCE = "evidence"
    TIMELINE = "timeline"
    CHART = "chart"
    NEXT = "next"  # what to check next
    HELP = "help"


@dataclass(frozen=True, slots=True)
class Question:
    topic: Topic
    services: tuple[str, ...] = ()
    metric: str = ""
    free: bool = False  # a question of no topic this module answers ("is it the deploy at 13:20?")


@dataclass(frozen=True, slots=True)
class ChartRequest:
    entity: str
    metric: str  # a metric name of that entity, or a fragment of one


@dataclass(frozen=True, slots=True)
class Answer:
    text: str
    chart: ChartRequest | None = None


_PATTERNS: tuple[tuple[Topic, re.Pattern[str]], ...] = (
    (Topic.CHART, re.compile(r"\b(chart|plot|graph|show me|draw)\b")),
    (Topic.WHY_NOT, re.compile(r"\bwhy not\b|\bnot\b.*\?|\brule[sd]? out\b|\bisn'?t it\b")),
    (Topic.NEXT, re.compile(r"\bnext\b|\bcheck\b|\bverify\b|\bwhat should\b|\btest")),
    (Topic.TIMELINE, re.compile(r"\btimeline\b|\bwhen\b|\bonset\b|\bfirst\b|\border\b")),
    (Topic.EVIDENCE, re.compile(r"\bevidence\b|\bproof\b|\bsignals?\b|\bmetrics?\b|\blogs?\b|\btraces?\b")),
    (Topic.WHY, re.compile(r"\bwhy\b|\bexplain\b|\bhow sure\b|\bconfiden")),
)


_ASKING = frozenset(
    [
        "why",
        "what",
        "which",
        "how",
        "when",
        "where",
        "who",
        "whose",
        "is",
        "are",
        "was",
        "were",
        "can",
        "could",
        "should",
        "would",
        "did",
        "does",
        "do",
        "explain",
        "show",
        "chart",
        "plot",
        "list",
        # the words the thread's help advertises, asked as they are
        "evidence",
        "timeline",
        "help",
        "next",
        "owner",
        "runbook",
        "rollback",
        "dashboard",
    ]
)


def is_question(text: str) -> bool:
    """A thread reply that asks something (a question mark, or a first word that asks or
    requests), as against engineers talking among themselves ("checking the logs now")."""
    words = re.findall(r"[a-z']+", text.lower())
    return "?" in text or (bool(words) and words[0] in _ASKING)


def entities_of(trace: Trace) -> tuple[str, ...]:
    """Every service the trace mentions, for recognising names in a question."""
    names = {h.service for h in trace.hypotheses} | set(trace.evidence_package.scope)
    names |= {ev.entity for ev in trace.evidence_package.evidence}
    return tuple(sorted(names))


def parse_question(text: str, *, services: Sequence[str]) -> Question:
    """The topic of a free-text question and the services it names (exact or close)."""
    low = text.lower()
    named = [s for s in sorted(services, key=len, reverse=True) if s.lower() in low]
    named = [s for s in named if not any(s != o and s.lower() in o.lower() for o in named)]
    if not named:
        words = re.findall(r"[\w.-]{4,}", low)
        lowered = {s.lower(): s for s in services}
        for w in words:
            close = difflib.get_close_matches(w, list(lowered), n=1, cutoff=0.8)
            if close:
                named.append(lowered[close[0]])
    named = sorted(dict.fromkeys(named), key=lambda s: low.find(s.lower()) if s.lower() in low else len(low))
    rest = low  # the topic is read from the words around the names ("order" in a name is not a timeline)
    for s in named:
        rest = rest.replace(s.lower(), " ")
    topic = next((t for t, p in _PATTERNS if p.search(rest)), Topic.WHY if named else Topic.HELP)
    metric = ""
    if topic is Topic.CHART:
        words = [w for w in re.findall(r"[\w().%/-]+", rest) if w not in _FILLER]
        metric = words[0] if words else ""
    free = topic is Topic.HELP and low.strip(" ?!.") not in ("", "help", "what can you do", "usage")
    return Question(topic, tuple(named), metric, free)


_FILLER = frozenset(
    [
        "chart",
        "plot",
        "graph",
        "show",
        "me",
        "draw",
        "the",
        "a",
        "an",
        "of",
        "for",
        "on",
        "at",
        "in",
        "please",
        "its",
        "it's",
        "metric",
        "metrics",
        "me",
        "can",
        "you",
        "us",
    ]
)


def answer(question: Question, trace: Trace) -> Answer:
    """The reply to one parsed question, quoting the trace."""
    if question.topic is Topic.HELP:
        honest = (
            (
                "I can't answer that one: it needs a language model, and none answered here. "
                "From the investigation's record I can answer these.\n"
            )
            if question.free
            else ""
        )
        return Answer(honest + HELP)
    if question.topic is Topic.EVIDENCE:
        return Answer(_evidence(trace, question.services))
    if question.topic is Topic.TIMELINE:
        return Answer(_timeline(trace))
    if question.topic is Topic.NEXT:
        return Answer(_next(trace))
    if question.topic is Topic.CHART:
        return _chart(trace, question)
    if question.topic is Topic.WHY_NOT and question.services:
        return Answer("\n\n".join(_why_not(trace, s) for s in question.services[:3]))
    return Answer(_why(trace, question.services[0] if question.services else None))


HELP = (
    "Ask me about this investigation, for example:\n"
    "• *why <service>?* — why a candidate is ranked where it is\n"
    "• *why not <service>?* — what speaks against another candidate\n"
    "• *evidence* (optionally for a service) — the strongest anomalies found\n"
    "• *timeline* — when each anomaly began, earliest first, and which ones count as another incident's\n"
    "• *chart <metric> of <service>* — a chart of a metric around the onset\n"
    "• *what next?* — the verification tests and what to check"
)


def _rank(trace: Trace, service: str) -> tuple[int, Hypothesis] | None:
    for i, h in enumerate(trace.hypotheses, start=1):
        if h.service == service:
            return i, h
    return None


def cited_evidence(trace: Trace, hypothesis: Hypothesis, limit: int = 4) -> list[Evidence]:
    """The strongest distinct evidence a hypothesis cites (the same finding read twice counts once)."""
    by_id = {ev.id: ev for ev in trace.evidence_package.evidence}
    cited = sorted((by_id[i] for i in hypothesis.evidence if i in by_id), key=lambda ev: -ev.score)
    distinct = {(ev.entity, ev.detail): ev for ev in reversed(cited)}
    return sorted(distinct.values(), key=lambda ev: -ev.score)[:limit]


_JARGON = re.compile(r",? ?robust z -?[\d.]+")


def readable(detail: str) -> str:
    """A finding's detail for people: the statistics' internals (robust z) left out."""
    return _JARGON.sub("", detail)


def _bullets(items: Sequence[Evidence]) -> str:
    return "\n".join(f"• {ev.entity}: {readable(ev.detail)[:180]}" for ev in items) or "• (no cited evidence)"


def _why(trace: Trace, service: str | None) -> str:
    if not trace.hypotheses:
        return "The investigation found no hypothesis: nothing anomalous was read. " + _missing(trace)
    found = _rank(trace, service) if service else (1, trace.hypotheses[0])
    if found is None:
        return f"{service} is not among the hypotheses: no anomaly of its own was found in the window. " + _missing(
            trace
        )
    rank, h = found
    lines = [f"*{h.service}* is ranked #{rank} as *{h.fault_type.value}*: {h.rationale}."]
    chain = next((c for c in trace.chains if c.hypothesis == h.id), None)
    if chain and chain.links:
        path = [chain.links[0].source] + [ln.target for ln in chain.links]
        lines.append("Causal chain: " + " → ".join(path))
    lines.append("Evidence it rests on:\n" + _bullets(cited_evidence(trace, h)))
    if rank > 1:
        top = trace.hypotheses[0]
        lines.append(f"It ranks below {top.service}, whose evidence is stronger or better localised.")
    return "\n".join(lines)


def _why_not(trace: Trace, service: str) -> str:
    top = trace.hypotheses[0] if trace.hypotheses else None
    found = _rank(trace, service)
    if top is not None and top.service == service:
        return f"{service} *is* the leading candidate.\n" + _why(trace, service)
    if found is None:
        own = [ev for ev in trace.evidence_package.evidence if ev.entity == service]
        if not own:
            return f"{service}: no anomaly of its own was found in its metrics, logs or traces in this window."
        return (
            f"{service} shows anomalies, but none the scoring could localise to it rather than to what it "
            f"calls or what calls it:\n" + _bullets(sorted(own, key=lambda ev: -ev.score)[:3])
        )
    rank, h = found
    lines = [f"{service} is ranked #{rank} ({h.fault_type.value})" + (f", behind {top.service}." if top else ".")]
    if top is not None:
        lead = cited_evidence(trace, top, 1)
        own = cited_evidence(trace, h, 1)
        if lead and own:
            ratio = lead[0].score / own[0].score if own[0].score > 0 else float("inf")
            lines.append(
                f"Its strongest sign ({readable(own[0].detail)[:100]}) departs from its normal "
                f"{'far less' if ratio >= 2 else 'less' if ratio > 1 else 'as much or more'} than "
                f"{top.service}'s ({readable(lead[0].detail)[:100]})."
            )
    test = next((t for t in trace.decision.tests if t.hypothesis == h.id), None)
    if test:
        lines.append(f"A check would separate them: {test.rationale}.")
    return "\n".join(lines)


def _evidence(trace: Trace, services: Sequence[str]) -> str:
    items = [ev for ev in trace.evidence_package.evidence if not services or ev.entity in services]
    items.sort(key=lambda ev: -ev.score)
    head = f"Strongest evidence{' for ' + ', '.join(services) if services else ''} ({len(items)} item(s)):"
    return head + "\n" + _bullets(items[:8]) + ("\n" + _missing(trace) if trace.evidence_package.missing else "")


def _timeline(trace: Trace) -> str:
    """Per entity, when its anomaly began (this incident's where it has one, else its earliest),
    earliest first, each anomaly the timing rule counts as another incident's marked so, with
    why: a window that reaches back far holds earlier incidents, and the engineer sees which
    ones the ranking set aside."""
    ep = trace.evidence_package
    ref = reference(ep.evidence, trace.symptom, ep.alert_time, ep.window)
    onsets: dict[str, tuple[Elsewhere | None, float, Evidence]] = {}  # entity -> (why another's, onset, evidence)
    for ev in ep.evidence:
        if ev.onset is None:
            continue
        why = elsewhere(ev, ref)
        seen = onsets.get(ev.entity)
        if seen is None or (why is not None, ev.onset) < (seen[0] is not None, seen[1]):
            onsets[ev.entity] = (why, ev.onset, ev)
    if not onsets:
        return "No anomaly in this trace has a datable onset."
    rows = sorted(onsets.values(), key=lambda r: r[1])[:10]
    lines = [
        f"• {to_iso(t)} {ev.entity}: {readable(ev.detail)[:140]}{_set_aside(why, ev) if why else ''}"
        for why, t, ev in rows
    ]
    if any(why for why, _, _ in rows):
        lines.append(
            "To ask about one of the anomalies counted as another incident's, ask again with a window "
            "that ends a few minutes after it began."
        )
    return "Onsets, earliest first:\n" + "\n".join(lines)


def _set_aside(why: Elsewhere, ev: Evidence) -> str:
    """Why the timing rule counts an anomaly as another incident's, in words."""
    if why is Elsewhere.OVER and ev.until is not None:
        return f" _(over by {to_iso(ev.until)}: counted as an earlier incident's)_"
    if why is Elsewhere.UNDER_WAY:
        return " _(under way before the data began: counted as an earlier incident's)_"
    return " _(began well after the symptom alerted: counted as its effect, not its cause)_"


def _next(trace: Trace) -> str:
    if not trace.decision.tests:
        return "The report recommends no test: there is a single candidate or none. " + _missing(trace)
    lines = ["Checks that tell the leading causes apart (press *Run checks* to run them):"]
    for t in trace.decision.tests:
        lines.append(f"• `{t.id}` {t.tool} `{t.query[:160]}` — looks at {t.subject[:60]}: {t.rationale[:200]}")
    return "\n".join(lines)


def _chart(trace: Trace, question: Question) -> Answer:
    entity = question.services[0] if question.services else (trace.hypotheses[0].service if trace.hypotheses else "")
    if not entity:
        return Answer("Name a service to chart, e.g. *chart cpu of <service>*.")
    metric = question.metric
    if not metric:  # the entity's most anomalous metric
        own = [ev for ev in trace.evidence_package.evidence if ev.entity == entity and ev.modality.value == "metrics"]
        if not own:
            return Answer(f"No metric of {entity} was anomalous; name one, e.g. *chart cpu of {entity}*.")
        metric = max(own, key=lambda ev: ev.score).subject
    return Answer(f"{metric} of {entity} around the onset:", ChartRequest(entity, metric))


def _missing(trace: Trace) -> str:
    missing = trace.evidence_package.missing
    return ("Missing: " + "; ".join(missing) + ".") if missing else ""


def grounding(trace: Trace) -> dict[str, object]:
    """What a model may answer from: the trace in brief, every item citable by its id."""
    by_id = {ev.id: ev for ev in trace.evidence_package.evidence}
    cited = [by_id[i] for h in trace.hypotheses[:5] for i in h.evidence[:4] if i in by_id]
    strongest = sorted(trace.evidence_package.evidence, key=lambda ev: -ev.score)[:8]
    evidence = list({ev.id: ev for ev in cited + strongest}.values())
    return {
        "symptom": trace.symptom,
        "window": trace.evidence_package.window.to_iso(),
        "ranking": [
            {
                "id": h.id,
                "service": h.service,
                "fault_type": h.fault_type.value,
                "value": round(h.value, 3),
                "evidence": list(h.evidence[:4]),
            }
            for h in trace.hypotheses[:5]
        ],
        "chains": [[c.links[0].source, *[ln.target for ln in c.links]] for c in trace.chains if c.links],
        "evidence": [
            {"id": ev.id, "entity": ev.entity, "detail": ev.detail[:160], "onset": ev.onset} for ev in evidence
        ],
        "tests": [
            {"id": t.id, "target": t.target, "subject": t.subject, "rationale": t.rationale[:200]}
            for t in trace.decision.tests
        ],
        "missing": list(trace.evidence_package.missing),
    }
