"""Block Kit for everything rcabot posts: parent message, verdict, repair, tests, summary.

All Slack-facing text lives here. Slack's limits are enforced where text is placed: 50 blocks
a message, 3,000 characters a section (kept well below: `msg_blocks_too_long` has been seen
short of the documented total).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from bot.desk import Run, Summary, Verdict
from handlers.ids import CORRECT, FEEDBACK_VIEW, REPAIR, RESUME, VERIFY, WRONG
from rca.explain import cited_evidence
from rca.model import Cost, Window, to_iso
from rca.redact import redact
from rca.star.audit import Audit
from rca.star.repair import RepairResult
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


def window_text(w: Window) -> str:
    return f"{to_iso(w.start)} → {to_iso(w.end)} ({w.seconds / 60:.0f} min)"


# -- the parent message ----------------------------------------------------------------------
def parent(run: Run, status: str) -> tuple[str, list[Block]]:
    text = f"Investigating {run.service}: {status}"
    return text, [
        section(f"🔎 *Root-cause analysis of `{plain(run.service)}`*\n{status}"),
        context(f"window {window_text(run.window)} · asked by <@{run.user}> · `{run.id}`"),
    ]


# -- the verdict -----------------------------------------------------------------------------
def verdict(v: Verdict, *, repaired: bool = False) -> tuple[str, list[Block]]:
    t = v.trace
    ranking = t.decision.ranking
    if not ranking:
        text = f"No root cause found for {v.service}"
        return text, limit([section(f"*{text}*: nothing anomalous was found in what could be read."),
                            *_missing(t), *_audit(v.audit), _buttons(v.id, repair=False)])  # fmt: skip
    service, fault, confidence, _ = ranking[0]
    head = f"{'Repaired verdict' if repaired else 'Verdict'}: {service} ({fault}), confidence {confidence:.0%}"
    lines = [f"{i}. *{plain(s)}* — {f} — {c:.0%}" for i, (s, f, c, _) in enumerate(ranking[:5], start=1)]
    blocks = [
        {"type": "header", "text": {"type": "plain_text", "text": clip(head, 150)}},
        section("*Ranked root causes*\n" + "\n".join(lines)),
    ]
    chain = _chain(t)
    if chain:
        blocks.append(section(f"*Causal chain*\n{chain}"))
    evidence = _key_evidence(t)
    if evidence:
        blocks.append(section("*Key evidence*\n" + evidence))
    blocks += _audit(v.audit)
    blocks += _missing(t)
    if v.similar:
        seen = ", ".join(f"`{r.id}` ({to_iso(r.created)[:10]})" for r in v.similar)
        blocks.append(context(f"🔁 Seen before with the same verdict: {seen}"))
    blocks.append(_buttons(v.id, repair=True))
    blocks.append(context(footer(t.cost, t.engine)))
    return head, limit(blocks)


def _chain(t: Trace) -> str:
    lead = t.hypotheses[0].id if t.hypotheses else None
    chain = next((c for c in t.chains if c.hypothesis == lead), None)
    if chain is None or not chain.links:
        return ""
    parts = [f"*{plain(chain.links[0].source)}*"]
    for ln in chain.links:
        onset = f" (from {to_iso(ln.onset_target)[11:19]})" if ln.onset_target else ""
        parts.append(f"{plain(ln.target)}{onset}")
    return " → ".join(parts)


def _key_evidence(t: Trace, n: int = 4) -> str:
    if not t.hypotheses:
        return ""
    cited = cited_evidence(t, t.hypotheses[0], n)
    return "\n".join(f"• {plain(ev.entity)} · {ev.modality.value}: {plain(clip(ev.detail, 200))}" for ev in cited)


def _audit(a: Audit) -> list[Block]:
    blamed = a.blamed
    head = f"*Self-audit (STAR)*: S = {a.score:.2f} · route *{a.route.value.replace('_', ' ')}*"
    if blamed is None:
        return [section(head + "\nNo stage of the reasoning violates an RCA requirement.")]
    lines = [head, f"Weakest stage: *{blamed.stage.replace('_', ' ')}* (severity {blamed.severity:.2f})"]
    for c in blamed.violations[:4]:
        lines.append(f"• {c.name.replace('_', ' ')} ({c.score:.2f}): {plain(clip(c.explanation, 300))}")
    return [section("\n".join(lines))]


def _missing(t: Trace) -> list[Block]:
    missing = t.evidence_package.missing
    return [context("⚠️ Partial result — missing: " + plain("; ".join(missing)))] if missing else []


def _buttons(id: str, *, repair: bool) -> Block:
    elements = []
    if repair:
        elements.append({"type": "button", "action_id": REPAIR, "value": id, "style": "primary",
                         "text": {"type": "plain_text", "text": "Run repair"}})  # fmt: skip
        elements.append({"type": "button", "action_id": VERIFY, "value": id,
                         "text": {"type": "plain_text", "text": "Run verification tests"}})  # fmt: skip
    elements.append({"type": "button", "action_id": CORRECT, "value": id,
                     "text": {"type": "plain_text", "text": "✓ Correct"}})  # fmt: skip
    elements.append({"type": "button", "action_id": WRONG, "value": id, "style": "danger",
                     "text": {"type": "plain_text", "text": "✗ Wrong"}})  # fmt: skip
    return {"type": "actions", "block_id": f"verdict:{id}", "elements": elements}


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


def _top(t: Trace) -> str:
    return f"{t.decision.ranking[0][0]} ({t.decision.ranking[0][1]})" if t.decision.ranking else "none"


def verification(run: VerificationRun) -> tuple[str, list[Block]]:
    rows = [f"{'test':<5} {'target':<26} {'tool':<8} {'expected if lead':<16} {'observed':<10}"]
    for o in run.outcomes:
        expected = dict(o.test.expected).get(o.test.hypothesis, "?")
        rows.append(f"{o.test.id:<5} {o.test.target[:26]:<26} {o.test.tool:<8} {expected:<16} {o.observed:<10}")
    table = "```" + clip("\n".join(rows).replace("`", "'"), 2600) + "```"
    details = "\n".join(f"• `{o.test.id}` {plain(clip(o.detail, 220))}" for o in run.outcomes)
    after = ", ".join(f"{h.service} ({h.fault_type.value}) {h.value:.2f}" for h in run.after[:5])
    before = ", ".join(h.service for h in run.before[:5])
    text = f"Verification: {len(run.outcomes)} test(s) run"
    blocks = [section(f"*{text}*"), section(table)]
    if details:
        blocks.append(section(details))
    blocks.append(section(f"*Re-ranked*: {plain(after) or 'nothing to rank'}\n_before_: {plain(before)}"))
    return text, blocks


# -- feedback --------------------------------------------------------------------------------
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
def summary(s: Summary) -> tuple[str, list[Block]]:
    head = f"Daily RCA summary: {len(s.rows)} investigation(s), {to_iso(s.start)[:16]} → {to_iso(s.end)[:16]} UTC"
    if not s.rows:
        return head, [section(f"*{head}*\nNo investigations in this period.")]
    accuracy = f"{s.accuracy:.0%} of {len(s.feedback)} with feedback" if s.accuracy is not None else "no feedback yet"
    blocks = [{"type": "header", "text": {"type": "plain_text", "text": clip(head, 150)}},
              section(f"Repaired: {len(s.repaired)} · accuracy: {accuracy}")]  # fmt: skip
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
