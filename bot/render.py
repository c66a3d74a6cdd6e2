"""Block Kit for everything rcabot posts: parent message, verdict, repair, tests, summary.

All Slack-facing text lives here. Slack's limits are enforced where text is placed: 50 blocks
a message, 3,000 characters a section (kept well below: `msg_blocks_too_long` has been seen
short of the documented total).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from bot.runbooks import Runbook
from bot.verdicts import Run, Standing, Summary, Verdict
from handlers.ids import CORRECT, FEEDBACK_VIEW, REPAIR, RESUME, VERIFY, WRONG
from rca.decision import either
from rca.explain import cited_evidence, readable
from rca.model import Cost, Window, to_iso
from rca.redact import redact
from rca.star.audit import Audit
from rca.star.repair import RepairResult
from rca.star.support import CHECKS as TELEMETRY_CHECKS
from rca.star.verify import VerificationRun
from rca.trace import Trace

Block = dict[str, Any]
SECTION_MAX = 2800
MAX_BLOCKS = 45



def clip(text: str, n: int = SECTION_MAX) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": clip(text)}}


def context(text: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": clip(text, 2900)}]}


def plain(text: str) -> str:
    """Text from telemetry or a person, shown in Slack: credentials redacted, and escaped so it
    cannot be read as markup (a mention, a link, a broadcast)."""
    return redact(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def limit(blocks: list[Block]) -> list[Block]:
    if len(blocks) <= MAX_BLOCKS:
        return blocks
    return blocks[: MAX_BLOCKS - 1] + [context(f"… {len(blocks) - MAX_BLOCKS + 1} more block(s) left out")]


def clock(t: float, tz: str) -> str:
    """A moment as a person in that time zone reads it: `2026-12-02 09:00 Europe/Berlin`."""
    return f"{datetime.fromtimestamp(t, ZoneInfo(tz)):%Y-%m-%d %H:%M} {tz}"


def at(t: float, tz: str = "UTC", *, near: float | None = None) -> str:
    """A moment in the reader's zone: `14:05 CET`, with its date where it falls on another
    day than `near` (or always, without `near`)."""
    zone = ZoneInfo(tz)
    moment = datetime.fromtimestamp(t, zone)
    if near is not None and datetime.fromtimestamp(near, zone).date() == moment.date():
        return f"{moment:%H:%M %Z}"
    return f"{moment:%Y-%m-%d %H:%M %Z}"


def window_text(w: Window, tz: str = "UTC") -> str:
    return f"{at(w.start, tz)} → {at(w.end, tz, near=w.start)} ({w.seconds / 60:.0f} min)"


# -- the parent message ----------------------------------------------------------------------
def parent(run: Run, status: str, tz: str = "UTC") -> tuple[str, list[Block]]:
    text = f"Investigating {run.service}: {status}"
    return text, [
        section(f"🔎 *Root-cause analysis of `{plain(run.service)}`*\n{status}"),
        context(f"window {window_text(run.window, tz)} · asked by <@{run.user}> · `{run.id}`"),
    ]


# -- the verdict -----------------------------------------------------------------------------
CONFIDENCE_NOTE = ("% = how often first places like this one were right on evaluated incidents; "
                   "the reasoning check audits how the verdict was reached")  # fmt: skip


def headline(v: Verdict, *, repaired: bool = False) -> str:
    """"Likely cause: X" only where that is earned (no tie, and first places like it were right
    95 % of the time); else "Unsure: X or Y", naming what the evidence cannot tell apart, or
    the first two."""
    ranking = v.trace.decision.ranking
    service, fault = ranking[0][0], ranking[0][1]
    p = f"{v.probability:.0%}"
    if v.likely:
        word = "Repaired verdict" if repaired else "Likely cause"
        return f"{word}: {service} — {_fault(fault)} ({p})"
    names = list(v.leaders) if len(v.leaders) > 1 else [r[0] for r in ranking[:2]]
    word = "Repaired, still unsure" if repaired else "Unsure"
    return f"{word}: {either(names)} — first place {service}, {_fault(fault)} ({p})"


def verdict(v: Verdict, *, repaired: bool = False, runbook: Runbook | None = None,
            tz: str = "UTC") -> tuple[str, list[Block]]:  # fmt: skip
    """The verdict, to act on at a glance: the lead cause and why, the path to the symptom, what
    to check or do next, whether the reasoning holds, and the buttons."""
    t = v.trace
    ranking = t.decision.ranking
    if not ranking:
        text = f"No root cause found for {v.service}"
        return text, limit([section(f"*{text}*: nothing anomalous was found in what could be read."),
                            *_missing(t), context(_audit_line(v.audit)), _buttons(v.id, repair=False)])  # fmt: skip
    service, fault, _, _ = ranking[0]
    head = headline(v, repaired=repaired)
    others = ", ".join(f"{plain(s)} ({_fault(f)})" for s, f, _, _ in ranking[1:3])
    blocks = [{"type": "header", "text": {"type": "plain_text", "text": clip(head, 150)}}]
    if v.standing is not None and v.standing.doubtful and not repaired:
        blocks.append(section(doubt(v.audit, v.standing)))
    blocks.append(section(f"*Why*\n{_why(t, tz, v.window.end)}" + (f"\n_Other candidates_: {others}" if others else "")))
    path = _chain(t, tz, v.window.end)
    if path:
        blocks.append(section(f"*Path to the symptom*\n{path}"))
    blocks.append(section(f"*Next*\n{_next(t, runbook)}"))
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


_FAULTS = {"cpu": "CPU saturation", "memory": "memory pressure", "disk": "disk pressure",
           "network_delay": "network delay", "network_loss": "packet loss", "exception": "errors (exceptions)",
           "wrong_result": "wrong results (code fault)", "overload": "overload", "unknown": "fault of unknown kind"}  # fmt: skip


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


def _next(t: Trace, runbook: Runbook | None) -> str:
    """The checks that would tell the leading causes apart, in words, and the team's own runbook."""
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
        if runbook.rollback:
            rollback = plain(runbook.rollback).replace("`", "'")
            lines.append(f"• Roll back: `{rollback}`")
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
        return (f"RCABOT_RUNBOOKS holds nothing for {plain(service)} (nor a `\"*\"` entry), so I cannot say "
                f"its {' or '.join(asked)}; the operator can add it there.")  # fmt: skip
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
    check = f" Weakest check: *{failed[0].name.replace('_', ' ')}*: {plain(clip(failed[0].explanation, 200))}." if failed else ""
    return (f"⚠️ *This verdict may be wrong.* The reasoning check trusts it less than {standing.above} of this "
            f"bot's last {standing.of} verdicts (trust {a.trust:.2f}).{check} *Re-check reasoning* audits each step again and mends a broken one; "
            "*Run checks* tests the leading causes against each other.")  # fmt: skip


def learnt(v: Verdict) -> str:
    """Where the verdict's probability comes from, once engineers' marks have taught it."""
    n = v.calibrated.marks
    return (f"The {v.probability:.0%} is learnt from {n} earlier verdict{'s' if n != 1 else ''} marked right or wrong "
            "here, beside how often first places like this were right where rcabot was measured")  # fmt: skip


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
            return (f"☑️ Reasoning well formed (score {a.score:.2f} of 1), but the telemetry does not settle the "
                    f"first place (support {a.support:.0%}){weak} · *Run checks* tests the leaders against each other")  # fmt: skip
        return f"✅ Reasoning checked: OK (score {a.score:.2f} of 1, telemetry support {a.support:.0%}){weak}"
    stage = blamed.stage.replace("_", " ") if blamed is not None else "no single stage"
    why = plain(clip(blamed.violations[0].explanation, 200)) if blamed is not None and blamed.violations else ""
    unmet = next((c for c in a.criteria if c.unmet), None)
    if unmet is not None:  # a requirement no score makes up for: name it, not the stage that scored worst
        stage = unmet.stage.replace("_", " ")
        why = f"{unmet.name.replace('_', ' ')}: {plain(clip(unmet.explanation, 200))}"
    return (f"⚠️ Reasoning weak at {stage}{': ' + why if why else ''} (score {a.score:.2f} of 1, "
            f"telemetry support {a.support:.0%}) · *Re-check reasoning* audits each step again")  # fmt: skip


def _missing(t: Trace) -> list[Block]:
    missing = t.evidence_package.missing
    return [context("⚠️ Partial result — missing: " + plain("; ".join(missing)))] if missing else []


def _buttons(id: str, *, repair: bool) -> Block:
    elements = []
    if repair:
        elements.append({"type": "button", "action_id": REPAIR, "value": id, "style": "primary",
                         "text": {"type": "plain_text", "text": "Re-check reasoning"}})  # fmt: skip
        elements.append({"type": "button", "action_id": VERIFY, "value": id,
                         "text": {"type": "plain_text", "text": "Run checks"}})  # fmt: skip
    elements.append({"type": "button", "action_id": CORRECT, "value": id,
                     "text": {"type": "plain_text", "text": "✓ Right"}})  # fmt: skip
    elements.append({"type": "button", "action_id": WRONG, "value": id, "style": "danger",
                     "text": {"type": "plain_text", "text": "✗ Wrong"}})  # fmt: skip
    return {"type": "actions", "block_id": f"verdict:{id}", "elements": elements}


def as_text(blocks: Sequence[Block]) -> str:
    """Blocks as plain terminal text, for the console: the same words Slack shows."""
    out = []
    for b in blocks:
        if b["type"] in ("section", "header"):
            out.append(b["text"]["text"])
        elif b["type"] == "context":
            out.append("  " + " ".join(e.get("text", "") for e in b["elements"]))
        elif b["type"] == "actions":
            out.append("[" + "] [".join(e["text"]["text"] for e in b["elements"]) + "]")
    text = "\n".join(out)
    text = re.sub(r"<(https?://[^|>]+)\|([^>]+)>", r"\2: \1", text)
    text = text.replace("*", "").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return text


def footer(cost: Cost, engine: str) -> str:
    return (f"engine {engine} · {cost.seconds:.1f} s · {cost.iterations} iterations · {cost.evidence_items} "
            f"evidence items · {cost.llm_calls} model calls, {cost.llm_input_tokens} in / "
            f"{cost.llm_output_tokens} out / {cost.llm_cached_tokens} cached tokens")  # fmt: skip


# -- repair and verification -----------------------------------------------------------------
def repair(before: Verdict, result: RepairResult) -> tuple[str, list[Block]]:
    changed = _top(before.trace) != _top(result.trace)
    text = (f"Repair: S {result.before.score:.2f} → {result.after.score:.2f}"
            + (f", decisive stage {result.decisive_stage.replace('_', ' ')}" if result.decisive_stage else ""))  # fmt: skip
    lines = [f"*{text}* ({result.replays} replays)"]
    for s in result.steps:
        mark = "applied" if s.committed else "tried, not kept"
        lines.append(f"• round {s.round} ({s.route}): {s.stage.replace('_', ' ')} ← `{s.patch}` "
                     f"S {s.before:.2f} → {s.after:.2f} ({mark})")  # fmt: skip
    if not result.steps:
        lines.append("• the trace was accepted as it is: no stage needed repair")
    if result.rolled_back:
        lines.append("• no sound causal chain on the evidence: rolled back to recollect evidence")
    if result.verification_first:
        lines.append("• the budget ran out below the acceptance bar: the report is verification-first "
                     "(run the tests before acting)")  # fmt: skip
    what = (f"The leading cause changed: {plain(_top(before.trace))} → *{plain(_top(result.trace))}*" if changed
            else f"The leading cause is unchanged: *{plain(_top(result.trace))}*")  # fmt: skip
    return text, [section("\n".join(lines)), section(what)]


def same_verdict(a: Trace, b: Trace) -> bool:
    """Whether two traces rank the same causes with the same fault types."""
    return [(r[0], r[1]) for r in a.decision.ranking] == [(r[0], r[1]) for r in b.decision.ranking]


def _top(t: Trace) -> str:
    return f"{t.decision.ranking[0][0]} ({t.decision.ranking[0][1]})" if t.decision.ranking else "none"


def verification(run: VerificationRun) -> tuple[str, list[Block]]:
    """Each check: which candidate it tests, what it would show were that candidate the cause,
    what it showed, and so whether it speaks for or against that candidate."""
    names = {h.id: h.service for h in run.before}
    rows = [f"{'check':<6} {'tests candidate':<26} {'tool':<8} {'if it is the cause':<18} {'observed':<10} result"]
    for o in run.outcomes:
        expected = dict(o.test.expected).get(o.test.hypothesis, "?")
        suspect = names.get(o.test.hypothesis, o.test.target)
        result = "for" if o.observed == expected else ("unclear" if o.observed not in ("anomalous", "normal") else "against")
        rows.append(f"{o.test.id:<6} {suspect[:26]:<26} {o.test.tool:<8} {expected:<18} {o.observed:<10} {result}")
    table = "```" + clip("\n".join(rows).replace("`", "'"), 2600) + "```"
    details = "\n".join(f"• `{o.test.id}` {plain(clip(o.detail, 220))}" for o in run.outcomes)
    after = ", ".join(f"{h.service} ({h.fault_type.value}) {h.value:.2f}" for h in run.after[:5])
    before = ", ".join(h.service for h in run.before[:5])
    text = f"Checks: {len(run.outcomes)} run"
    blocks = [section(f"*{text}*"), section(table)]
    if details:
        blocks.append(section(details))
    blocks.append(section(f"*Re-ranked*: {plain(after) or 'nothing to rank'}\n_before_: {plain(before)}"))
    blocks.append(section(f"*Conclusion*: {conclusion(run)}"))
    return text, blocks


def conclusion(run: VerificationRun) -> str:
    """What the checks say, in one sentence: which candidate they point to, or that they could
    not tell the candidates apart (every check came out as its own candidate predicts)."""
    names = {h.id: h.service for h in run.before}
    verdicts: dict[str, list[str]] = {}
    for o in run.outcomes:
        expected = dict(o.test.expected).get(o.test.hypothesis, "?")
        result = "for" if o.observed == expected else ("unclear" if o.observed not in ("anomalous", "normal") else "against")
        verdicts.setdefault(names.get(o.test.hypothesis, o.test.target), []).append(result)
    if not verdicts:
        return "no check could run, so nothing changed; the verdict stands as it was."
    supported = [s for s, rs in verdicts.items() if rs and all(r == "for" for r in rs)]
    refuted = [s for s, rs in verdicts.items() if "against" in rs]
    lead = run.after[0].service if run.after else ""
    if len(supported) == 1:
        return (f"the checks point to *{plain(supported[0])}*: its checks came out as they would were it the cause"
                + (f", and {either([plain(r) for r in refuted])} did not" if refuted else "") + ".")  # fmt: skip
    if len(supported) > 1:
        return (f"the checks cannot tell {either([plain(s) for s in supported])} apart: each shows what it would show "
                f"were it the cause (they may be one fault seen from both sides). The ranking keeps *{plain(lead)}* "
                "first; look at which one's anomaly began first on the chart.")  # fmt: skip
    if refuted and len(refuted) == len(verdicts):
        return "every check came out against its candidate: none of them is confirmed, so treat the verdict as unsure."
    return "the checks were unclear (signals missing or mixed); the verdict stands as it was."


def feedback_view(id: str, candidates: Sequence[str]) -> dict[str, Any]:
    """The modal asking for the true cause when a verdict is marked wrong."""
    hint = ", ".join(candidates[:5])
    return {
        "type": "modal", "callback_id": FEEDBACK_VIEW, "private_metadata": id,
        "title": {"type": "plain_text", "text": "Wrong verdict"},
        "submit": {"type": "plain_text", "text": "Send"},
        "blocks": [
            {"type": "input", "block_id": "cause", "optional": True,
             "label": {"type": "plain_text", "text": "What was the true root cause (service)?"},
             "hint": {"type": "plain_text", "text": clip(f"Candidates were: {hint}", 150)},
             "element": {"type": "plain_text_input", "action_id": "value", "max_length": 200}},
            {"type": "input", "block_id": "note", "optional": True,
             "label": {"type": "plain_text", "text": "Anything else (fault type, what you saw)?"},
             "element": {"type": "plain_text_input", "action_id": "value", "multiline": True,
                         "max_length": 2000}},
        ],
    }  # fmt: skip


def feedback_thanks(correct: bool, true_cause: str) -> str:
    if correct:
        return "Thanks — marked correct. It counts towards the daily accuracy."
    return "Thanks — marked wrong" + (f"; true cause recorded as *{plain(true_cause)}*." if true_cause else ".")


def interrupted(id: str) -> tuple[str, list[Block]]:
    """Posted in the thread of an investigation a stop cut short."""
    text = "rcabot restarted before this investigation finished"
    return text, [section(f"⚠️ {text}. Nothing it had stored is lost; run it again over the same window:"),
                  {"type": "actions", "block_id": f"resume:{id}", "elements": [
                      {"type": "button", "action_id": RESUME, "value": id, "style": "primary",
                       "text": {"type": "plain_text", "text": "Resume investigation"}}]}]  # fmt: skip


# -- summary and status ----------------------------------------------------------------------
def summary(s: Summary, tz: str = "UTC") -> tuple[str, list[Block]]:
    head = f"Daily RCA summary: {len(s.rows)} investigation(s), {at(s.start, tz)} → {at(s.end, tz)}"
    if not s.rows:
        return head, [section(f"*{head}*\nNo investigations in this period.")]
    accuracy = f"{s.accuracy:.0%} of {len(s.feedback)} with feedback" if s.accuracy is not None else "no feedback yet"
    alerts, judged, right = s.from_alerts
    started = (f" · started by alerts: {alerts}, lead cause marked right in {right} of {judged} with feedback"
               if alerts else "")  # fmt: skip
    blocks = [{"type": "header", "text": {"type": "plain_text", "text": clip(head, 150)}},
              section(f"Repaired: {len(s.repaired)} · accuracy: {accuracy}{started}")]  # fmt: skip
    lines = []
    for r in s.rows:
        verdict_text = (f"→ *{plain(r.top_service)}* ({r.top_fault}, {r.confidence or 0:.0%})" if r.status == "done"
                        else f"_{r.status}_")  # fmt: skip
        star = f" · S {r.score:.2f} {r.route.replace('_', ' ')}" if r.score is not None else ""
        fb = {True: " · ✓ correct", False: " · ✗ wrong"}.get(s.feedback[r.id]) if r.id in s.feedback else ""
        rep = " · repaired" if r.id in s.repaired else ""
        lines.append(f"• `{plain(r.service)}` {verdict_text}{star}{rep}{fb or ''}")
    for i in range(0, len(lines), 20):
        blocks.append(section("\n".join(lines[i : i + 20])))
    return head, limit(blocks)


def status(runs: Sequence[Run], *, queued: int) -> str:
    if not runs:
        return "No investigation is running in this channel."
    lines = [f"• `{plain(r.service)}` {window_text(r.window)}, asked by <@{r.user}> (`{r.id}`)" for r in runs]
    return "*Running investigations*\n" + "\n".join(lines) + (f"\n{queued} waiting for a worker" if queued else "")


def plain_answer(text: str) -> str:
    """A follow-up answer: quoted telemetry escaped so it cannot mention or link."""
    return clip(plain(text))
