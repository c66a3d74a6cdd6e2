"""Block Kit for the parent message and the verdict (bot.replies writes what follows it).

All Slack-facing text lives here. Slack's limits are enforced where text is placed: 50 blocks
a message, 3,000 characters a section (kept well below: `msg_blocks_too_long` has been seen
short of the documented total).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.blockkit import Block, at, clip, context, limit, plain, section, window_text
from bot.runbooks import Runbook
from bot.verdicts import Run, Standing, Verdict
from handlers.fields import web_link
from handlers.ids import CORRECT, REPAIR, VERIFY, WRONG
from rca.changes import Change
from rca.decision import either
from rca.evidence import earliest_onsets
from rca.explain import cited_evidence, readable
from rca.model import Cost
from rca.rules.timing import LATE_NOTE
from rca.star.audit import Audit
from rca.star.support import CHECKS as TELEMETRY_CHECKS
from rca.telemetry import to_iso
from rca.trace import Trace


# -- the parent message ----------------------------------------------------------------------
def parent(run: Run, status: str, tz: str = "UTC") -> tuple[str, list[Block]]:
    text = f"Investigating {run.service}: {status}"
    return text, [
        section(f"🔎 *Root-cause analysis of `{plain(run.service)}`*\n{status}"),
        context(f"window {window_text(run.window, tz)} · asked by <@{run.user}> · `{run.id}`"),
    ]


# -- the verdict -----------------------------------------------------------------------------
CONFIDENCE_NOTE = "% = how often first places like this one were right on evaluated incidents"


def headline(v: Verdict, *, repaired: bool = False) -> str:
    """The headline: "Likely cause: X" only where that is earned (no tie, and first places
    like it were right 95 % of the time); else "Unsure: X or Y", naming what the evidence
    cannot tell apart, or the first two."""
    ranking = v.trace.decision.ranking
    service, fault = ranking[0][0], ranking[0][1]
    p = f"{v.probability:.0%}"
    if v.likely:
        word = "Repaired verdict" if repaired else "Likely cause"
        return f"{word}: {service} — {_fault(fault)} ({p})"
    names = list(v.leaders) if len(v.leaders) > 1 else [r[0] for r in ranking[:2]]
    word = "Repaired, still unsure" if repaired else "Unsure"
    lead = f"{service} ({_fault(fault)}, {p})"
    others = [n for n in names if n != service]
    return f"{word}: {either([lead, *others])}" if others else f"{word}: {lead}"


def verdict(
    v: Verdict,
    *,
    repaired: bool = False,
    runbook: Runbook | None = None,
    tz: str = "UTC",
    changes: Sequence[Change] = (),
    other_changes: int = 0,
) -> tuple[str, list[Block]]:
    """The verdict, to act on at a glance: the lead cause and why, the path to the symptom, what
    changed to the suspects (`changes`; `other_changes`: how many other services changed then),
    what to check or do next, whether the reasoning holds, and the buttons."""
    t = v.trace
    ranking = t.decision.ranking
    if not ranking:
        text = f"No root cause found for {v.service}"
        return text, limit(
            [
                section(f"*{text}*: nothing anomalous was found in what could be read."),
                *_missing(t),
                context(_audit_line(v.audit)),
                _buttons(v.id, repair=False),
            ]
        )
    service, fault, _, _ = ranking[0]
    head = headline(v, repaired=repaired)
    others = ", ".join(f"{plain(s)} ({_fault(f)})" for s, f, _, _ in ranking[1:3])
    blocks = [{"type": "header", "text": {"type": "plain_text", "text": clip(head, 150)}}]
    if v.standing is not None and v.standing.doubtful and not repaired:
        blocks.append(section(doubt(v.audit, v.standing)))
    blocks.append(
        section(f"*Why*\n{_why(t, tz, v.window.end)}" + (f"\n_Other candidates_: {others}" if others else ""))
    )
    path = _chain(t, tz, v.window.end)
    if path:
        blocks.append(section(f"*Path to the symptom*\n{path}"))
    # the lead itself changed: its rollback is said beside the change, not among the checks
    rollback = runbook.rollback if runbook is not None and any(c.service == service for c in changes) else ""
    if changes or other_changes:
        blocks.append(section(f"*What changed*\n{_changed(t, changes, other_changes, tz, v.window.end, rollback)}"))
    blocks.append(section(f"*Next*\n{_next(t, runbook, rollback_said=bool(rollback))}"))
    blocks.append(context(_audit_line(v.audit, unsure=not v.likely)))
    if v.calibrated.marks:
        blocks.append(context(learnt(v)))
    blocks += _missing(t)
    if v.similar:
        seen = ", ".join(f"`{r.id}` ({to_iso(r.created)[:10]})" for r in v.similar)
        blocks.append(context(f"🔁 Seen before in this channel with the same verdict: {seen}"))
    blocks.append(_buttons(v.id, repair=True))
    blocks.append(context(f"{CONFIDENCE_NOTE} · {footer(t.cost, t.engine)}"))
    return head, limit(blocks)


_FAULTS = {
    "cpu": "CPU saturation",
    "memory": "memory pressure",
    "disk": "disk pressure",
    # the type's name is the papers' word; since rule delays it holds time lost on the way in or
    # in the service's own work, so the verdict does not say "network" of a slow handler
    "network_delay": "a delay (on its calls in or in its own work)",
    "network_loss": "packet loss",
    "exception": "errors (exceptions)",
    "wrong_result": "wrong results (code fault)",
    "overload": "overload",
    "release": "a faulty release or config",
    "unknown": "fault of unknown kind",
}


def _fault(fault: str) -> str:
    return _FAULTS.get(fault, fault.replace("_", " "))


def _why(t: Trace, tz: str = "UTC", near: float | None = None) -> str:
    """The lead's strongest findings in plain words, each with when it began (in the reader's
    zone, dated where it falls on another day than the window's end)."""
    lines = []
    for ev in cited_evidence(t, t.hypotheses[0], 3) if t.hypotheses else []:
        began = f" (from {at(ev.onset, tz, near=near)})" if ev.onset is not None else ""
        if ev.under_way:
            began = " (already under way when the window opened)"
        lines.append(f"• {plain(ev.entity)}: {plain(clip(readable(ev.detail), 180))}{began}")
    return "\n".join(lines) or "• no single finding stands out; see the evidence with `evidence` in the thread"


def _changed(t: Trace, changes: Sequence[Change], others: int, tz: str, near: float, rollback: str = "") -> str:
    """The suspects' recorded changes, each placed against the lead suspect's onset where it
    has one; the team's way to roll the lead back, where it changed and has one; how many other
    services changed then."""
    lead = t.decision.ranking[0][0] if t.decision.ranking else ""
    onset = earliest_onsets(t.evidence_package.evidence).get(lead)
    lines = []
    for c in changes[-5:]:
        if onset is None:
            when = f"Changed at {at(c.time, tz, near=near)}"
        else:
            minutes = round(abs(onset - c.time) / 60)
            when = f"Changed {minutes} min {'before' if c.time <= onset else 'after'} {plain(lead)}'s onset"
        link = f" <{url}|link>" if (url := web_link(c.link)) else ""
        lines.append(f"• {when}: {plain(c.describe())}{link}")
    if rollback:
        lines.append(_rollback(rollback))
    if others:
        lines.append(f"_{others} other service(s) changed then: `/rca changes` lists them._")
    return "\n".join(lines)


def _chain(t: Trace, tz: str = "UTC", near: float | None = None) -> str:
    """From the blamed service along the calls to the symptom; a step the telemetry does not
    support (no anomaly there, or one that began too late) is drawn dotted."""
    lead = t.hypotheses[0] if t.hypotheses else None
    chain = next((c for c in t.chains if lead is not None and c.hypothesis == lead.id), None)
    if chain is None or lead is None:
        return ""
    parts, here = [f"*{plain(chain.root)}*"], chain.root
    for ln in chain.links:
        if ln.source != here:
            parts.append(f"⋯ {plain(ln.source)}")
        onset = f" (from {at(ln.onset_target, tz, near=near)})" if ln.onset_target else ""
        parts.append(f"→ {plain(ln.target)}{onset}")
        here = ln.target
    if here != t.symptom:
        parts.append(f"⋯ {plain(t.symptom)}")
    if len(parts) == 1:
        return ""
    return " ".join(parts) + "\n_→ telemetry shows the effect in order · ⋯ on the call path, not shown by the data_"


def _rollback(command: str) -> str:
    shown = plain(command).replace("`", "'")
    return f"• Roll back: `{shown}`"


def _next(t: Trace, runbook: Runbook | None, *, rollback_said: bool = False) -> str:
    """The checks that would tell the leading causes apart, in words, and the team's own runbook
    (its rollback unless the lead's change already said it)."""
    names = {h.id: h.service for h in t.hypotheses}
    lines = []
    for test in t.decision.tests[:3]:
        suspect = names.get(test.hypothesis, test.target)
        lines.append(f"• {step(test.tool, test.target, test.subject)}: abnormal if {plain(suspect)} is the cause")
    if runbook is not None:
        if runbook.owner:
            lines.append(f"• Owner: {_owner(runbook.owner)}")
        links = [f"<{u}|{label}>" for u, label in ((runbook.dashboard, "dashboard"), (runbook.runbook, "runbook")) if u]
        if links:
            lines.append("• " + " · ".join(links))
        if runbook.rollback and not rollback_said:
            lines.append(_rollback(runbook.rollback))
    if not lines:
        lines.append("• Press *Run checks* to query the signals that separate the candidates")
    return "\n".join(lines)


_SLACK_ID = re.compile(r"^[US][A-Z0-9]{2,20}$")
_TEMPLATE = re.compile(r"^T\d+@(.+)$")  # a mined log template keyed by its code location


def step(tool: str, target: str, subject: str) -> str:
    """A check as something to do: the metric to graph, the log lines to search (by the code
    location that writes them, not the miner's template id), the calls to look at."""
    if tool == "logs":
        where = _TEMPLATE.match(subject)
        what = f"lines written at `{plain(where.group(1))}`" if where else f"`{plain(subject)}`"
        return f"Search the logs of {plain(target)} for {what}"
    if tool == "spans":
        return f"Look at the spans of the calls {plain(subject)}, on {plain(target)}'s side"
    return f"Graph {plain(target)}'s `{plain(subject)}`"


def runbook_answer(service: str, runbook: Runbook | None, asked: Sequence[str]) -> str:
    """The team's own answer about a service, from RCABOT_RUNBOOKS: owner, dashboard, runbook,
    rollback, each asked for (what the file does not hold is said so)."""
    if runbook is None:
        return (
            f'RCABOT_RUNBOOKS holds nothing for {plain(service)} (nor a `"*"` entry), so I cannot say '
            f"its {' or '.join(asked)}; the operator can add it there."
        )
    lines = []
    for field in asked:
        value = getattr(runbook, field)
        if not value:
            lines.append(f"• No {field} is written down for {plain(service)} in RCABOT_RUNBOOKS.")
        elif field == "owner":
            lines.append(f"• Owner of {plain(service)}: {_owner(value)}")
        elif field == "rollback":
            lines.append(f"• To roll back {plain(service)}: `{plain(value).replace('`', chr(39))}`")
        else:
            lines.append(f"• {field.capitalize()} of {plain(service)}: <{value}|{field}>")
    return "\n".join(lines)


def _owner(owner: str) -> str:
    """A Slack user or group id becomes a mention; anything else is shown as written, escaped."""
    if _SLACK_ID.match(owner):
        return f"<@{owner}>" if owner.startswith("U") else f"<!subteam^{owner}>"
    return plain(owner)


def doubt(a: Audit, standing: Standing) -> str:
    """The plain warning on a verdict the audit trusts less than most: how much less, the check
    that fell shortest (the telemetry's own, where one did), and the way to re-check it."""
    failed = sorted((c for c in a.criteria if c.violated), key=lambda c: (c.name not in TELEMETRY_CHECKS, c.score))
    check = (
        f" Weakest check: *{failed[0].name.replace('_', ' ')}*: {plain(clip(failed[0].explanation, 200))}."
        if failed
        else ""
    )
    return (
        f"⚠️ *This verdict may be wrong.* The reasoning check trusts it less than {standing.above} of this "
        f"bot's last {standing.of} verdicts (trust {a.trust:.2f}).{check} *Re-check reasoning* audits each step again and mends a broken one; "
        "*Run checks* tests the leading causes against each other."
    )


def learnt(v: Verdict) -> str:
    """Where the verdict's probability comes from, once engineers' marks have taught it."""
    n = v.calibrated.marks
    return (
        f"The {v.probability:.0%} is learnt from {n} earlier verdict{'s' if n != 1 else ''} marked right or wrong "
        "here, beside how often first places like this were right where rcabot was measured"
    )


def _audit_line(a: Audit, *, unsure: bool = False) -> str:
    """The audit in one line: a check mark only where the reasoning holds and the telemetry
    leaves no doubt about the first place (`unsure`: a tie, or first places like it were often
    wrong)."""
    blamed = a.blamed
    if a.route.value == "accept":
        weak = ""
        if blamed is not None and blamed.violations:
            weak = f"; weakest part: {blamed.stage.replace('_', ' ')} ({plain(clip(blamed.violations[0].explanation, 160))})"
        if unsure:
            return (
                f"☑️ Reasoning well formed (score {a.score:.2f} of 1); the telemetry leaves the first place "
                f"open (support {a.support:.0%}){weak} · *Run checks* tests the leaders"
            )
        return f"✅ Reasoning checked: OK (score {a.score:.2f} of 1, telemetry support {a.support:.0%}){weak}"
    stage = blamed.stage.replace("_", " ") if blamed is not None else "no single stage"
    why = plain(clip(blamed.violations[0].explanation, 200)) if blamed is not None and blamed.violations else ""
    unmet = next((c for c in a.criteria if c.unmet), None)
    if unmet is not None:  # a requirement no score makes up for: name it, not the stage that scored worst
        stage = unmet.stage.replace("_", " ")
        why = f"{unmet.name.replace('_', ' ')}: {plain(clip(unmet.explanation, 200))}"
    return (
        f"⚠️ Reasoning weak at {stage}{': ' + why if why else ''} (score {a.score:.2f} of 1, "
        f"telemetry support {a.support:.0%}) · *Re-check reasoning* audits each step again"
    )


def _missing(t: Trace) -> list[Block]:
    """What the data lacked, and apart from it, a window the investigation opened back."""
    late = [m for m in t.evidence_package.missing if m.startswith(LATE_NOTE)]
    missing = [m for m in t.evidence_package.missing if not m.startswith(LATE_NOTE)]
    blocks = [context("🕰️ Asked late" + plain(late[0][len(LATE_NOTE) :]))] if late else []
    return blocks + ([context("⚠️ Partial result — missing: " + plain("; ".join(missing)))] if missing else [])


def _buttons(id: str, *, repair: bool) -> Block:
    elements = []
    if repair:
        elements.append(
            {
                "type": "button",
                "action_id": REPAIR,
                "value": id,
                "style": "primary",
                "text": {"type": "plain_text", "text": "Re-check reasoning"},
            }
        )
        elements.append(
            {"type": "button", "action_id": VERIFY, "value": id, "text": {"type": "plain_text", "text": "Run checks"}}
        )
    elements.append(
        {"type": "button", "action_id": CORRECT, "value": id, "text": {"type": "plain_text", "text": "✓ Right"}}
    )
    elements.append(
        {
            "type": "button",
            "action_id": WRONG,
            "value": id,
            "style": "danger",
            "text": {"type": "plain_text", "text": "✗ Wrong"},
        }
    )
    return {"type": "actions", "block_id": f"verdict:{id}", "elements": elements}


def footer(cost: Cost, engine: str) -> str:
    return (
        f"engine {engine} · {cost.seconds:.1f} s · {cost.iterations} iterations · {cost.evidence_items} "
        f"evidence items · {cost.llm_calls} model calls, {cost.llm_input_tokens} in / "
        f"{cost.llm_output_tokens} out / {cost.llm_cached_tokens} cached tokens"
    )
