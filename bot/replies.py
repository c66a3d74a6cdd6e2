"""Block Kit for what follows a verdict: a repair, the run checks and their conclusion, the
feedback form, an investigation a restart cut short, the daily summary and /rca status
(bot.render writes the parent message and the verdict)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.blockkit import Block, at, clip, limit, plain, section, window_text
from bot.verdicts import Run, Summary, Verdict
from handlers.ids import FEEDBACK_VIEW, RESUME
from rca.decision import either
from rca.star.repair import RepairResult
from rca.star.verify import VerificationRun
from rca.trace import Trace


# -- repair and verification -----------------------------------------------------------------
def repair(before: Verdict, result: RepairResult) -> tuple[str, list[Block]]:
    changed = _top(before.trace) != _top(result.trace)
    text = f"Repair: S {result.before.score:.2f} → {result.after.score:.2f}" + (
        f", decisive stage {result.decisive_stage.replace('_', ' ')}" if result.decisive_stage else ""
    )
    lines = [f"*{text}* ({result.replays} replays)"]
    for s in result.steps:
        mark = "applied" if s.committed else "tried, not kept"
        lines.append(
            f"• round {s.round} ({s.route}): {s.stage.replace('_', ' ')} ← `{s.patch}` "
            f"S {s.before:.2f} → {s.after:.2f} ({mark})"
        )
    if not result.steps:
        lines.append("• the trace was accepted as it is: no stage needed repair")
    if result.rolled_back:
        lines.append("• no sound causal chain on the evidence: rolled back to recollect evidence")
    if result.verification_first:
        lines.append(
            "• the budget ran out below the acceptance bar: the report is verification-first "
            "(run the tests before acting)"
        )
    what = (
        f"The leading cause changed: {plain(_top(before.trace))} → *{plain(_top(result.trace))}*"
        if changed
        else f"The leading cause is unchanged: *{plain(_top(result.trace))}*"
    )
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
        result = (
            "for" if o.observed == expected else ("unclear" if o.observed not in ("anomalous", "normal") else "against")
        )
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
        result = (
            "for" if o.observed == expected else ("unclear" if o.observed not in ("anomalous", "normal") else "against")
        )
        verdicts.setdefault(names.get(o.test.hypothesis, o.test.target), []).append(result)
    if not verdicts:
        return "no check could run, so nothing changed; the verdict stands as it was."
    supported = [s for s, rs in verdicts.items() if rs and all(r == "for" for r in rs)]
    refuted = [s for s, rs in verdicts.items() if "against" in rs]
    lead = run.after[0].service if run.after else ""
    if len(supported) == 1:
        return (
            f"the checks point to *{plain(supported[0])}*: its checks came out as they would were it the cause"
            + (f", and {either([plain(r) for r in refuted])} did not" if refuted else "")
            + "."
        )
    if len(supported) > 1:
        return (
            f"the checks cannot tell {either([plain(s) for s in supported])} apart: each shows what it would show "
            f"were it the cause (they may be one fault seen from both sides). The ranking keeps *{plain(lead)}* "
            "first; look at which one's anomaly began first on the chart."
        )
    if refuted and len(refuted) == len(verdicts):
        return "every check came out against its candidate: none of them is confirmed, so treat the verdict as unsure."
    return "the checks were unclear (signals missing or mixed); the verdict stands as it was."


def feedback_view(id: str, candidates: Sequence[str]) -> dict[str, Any]:
    """The modal asking for the true cause when a verdict is marked wrong."""
    hint = ", ".join(candidates[:5])
    return {
        "type": "modal",
        "callback_id": FEEDBACK_VIEW,
        "private_metadata": id,
        "title": {"type": "plain_text", "text": "Wrong verdict"},
        "submit": {"type": "plain_text", "text": "Send"},
        "blocks": [
            {
                "type": "input",
                "block_id": "cause",
                "optional": True,
                "label": {"type": "plain_text", "text": "What was the true root cause (service)?"},
                "hint": {"type": "plain_text", "text": clip(f"Candidates were: {hint}", 150)},
                "element": {"type": "plain_text_input", "action_id": "value", "max_length": 200},
            },
            {
                "type": "input",
                "block_id": "note",
                "optional": True,
                "label": {"type": "plain_text", "text": "Anything else (fault type, what you saw)?"},
                "element": {"type": "plain_text_input", "action_id": "value", "multiline": True, "max_length": 2000},
            },
        ],
    }


def feedback_thanks(correct: bool, true_cause: str) -> str:
    if correct:
        return "Thanks — marked correct. It counts towards the daily accuracy."
    return "Thanks — marked wrong" + (f"; true cause recorded as *{plain(true_cause)}*." if true_cause else ".")


def interrupted(id: str) -> tuple[str, list[Block]]:
    """Posted in the thread of an investigation a stop cut short."""
    text = "rcabot restarted before this investigation finished"
    return text, [
        section(f"⚠️ {text}. Nothing it had stored is lost; run it again over the same window:"),
        {
            "type": "actions",
            "block_id": f"resume:{id}",
            "elements": [
                {
                    "type": "button",
                    "action_id": RESUME,
                    "value": id,
                    "style": "primary",
                    "text": {"type": "plain_text", "text": "Resume investigation"},
                }
            ],
        },
    ]


# -- summary and status ----------------------------------------------------------------------
def summary(s: Summary, tz: str = "UTC") -> tuple[str, list[Block]]:
    head = f"Daily RCA summary: {len(s.rows)} investigation(s), {at(s.start, tz)} → {at(s.end, tz)}"
    if not s.rows:
        return head, [section(f"*{head}*\nNo investigations in this period.")]
    accuracy = f"{s.accuracy:.0%} of {len(s.feedback)} with feedback" if s.accuracy is not None else "no feedback yet"
    alerts, judged, right = s.from_alerts
    started = (
        f" · started by alerts: {alerts}, lead cause marked right in {right} of {judged} with feedback"
        if alerts
        else ""
    )
    blocks = [
        {"type": "header", "text": {"type": "plain_text", "text": clip(head, 150)}},
        section(f"Repaired: {len(s.repaired)} · accuracy: {accuracy}{started}"),
    ]
    lines = []
    for r in s.rows:
        verdict_text = (
            f"→ *{plain(r.top_service)}* ({r.top_fault}, {r.confidence or 0:.0%})"
            if r.status == "done"
            else f"_{r.status}_"
        )
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
