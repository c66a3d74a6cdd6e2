"""The Claude reasoner: the same three roles as the offline one, played by a model through the
anthropic SDK, cheaper than the paper by design and safe with untrusted telemetry.

Cost: all N candidate actions come from one call, all reflections of an expansion from one
call; the system prompt and the tool definitions are identical on every call and marked for
prompt caching; the model sees compact summaries (top hypotheses, the strongest evidence,
clipped and redacted), never raw telemetry. The per-investigation budget of calls and tokens
is planned: the verdict's call (the largest decision payload the caps allow) is set aside
first, the search's proposals and reflections spend the rest, and once they have, the offline
reasoner takes the remaining search steps as planned, not as a shortfall. Only a budget too
small for the verdict itself is reported as spent. Calls and tokens are counted per phase
(proposal, reflection, handoff, decision, and repair and question outside a search); handoff
summaries are written offline.

Safety: telemetry travels only inside a <telemetry_data> JSON block (with `<` and `>` escaped,
so no text can close it); the model can only pick among offered action ids and cited evidence
ids, and every answer is validated against a JSON Schema and those sets. An answer that does
not validate is retried once with the error; then the offline reasoner takes that step. API
failures the SDK's own retries cannot cure (429, 529, 5xx, timeouts) do the same, and after two
the model is not called again for this investigation. Every such fallback is noted, and the
notes reach the trace as what was missing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any, TypeVar

import jsonschema

from rca.decision import Decision
from rca.reasoners import PHASES, Usage
from rca.reasoners.model_io import (
    DETAIL_CHARS,
    SCHEMAS,
    TOOLS,
    data_block,
    evidence_shape,
    evidence_view,
    hypothesis_view,
    state_view,
)
from rca.reasoners.offline import OfflineReasoner
from rca.redact import redact
from rca.search.actions import Action
from rca.search.state import DiagnosticState, Reflection, Step

if TYPE_CHECKING:  # the SDK is imported when a model is first called: the CLI starts without it
    import anthropic

T = TypeVar("T")
P = TypeVar("P")

DEFAULT_MODEL = "claude-sonnet-5-5"
SYSTEM = (resources.files("rca.reasoners") / "prompts" / "system.md").read_text()
MAX_ACTIONS = 15  # offered per proposal
DECISION_HYPOTHESES = 5  # judged by the verdict's call
DECISION_EVIDENCE = 3  # shown per judged hypothesis


@dataclass(frozen=True, slots=True)
class ClaudeConfig:
    model: str = DEFAULT_MODEL
    api_key: str | None = None
    base_url: str | None = None
    max_calls: int = 20  # per investigation
    max_tokens: int = 60_000  # per investigation: input, cache writes and reads, and output
    timeout: float = 30.0  # per call, seconds
    max_retries: int = 2  # the SDK's own retries (429, 529, 5xx, connection) with backoff
    response_tokens: int = 1024


_PHASE_OF = {
    "propose_actions": "proposal",
    "score_reflections": "reflection",
    "judge_decision": "decision",
    "choose_patches": "repair",
    "answer_question": "question",
}
_SEARCH = frozenset({"propose_actions", "score_reflections"})  # what may fall back to plan, not to shortage


class InvalidAnswer(ValueError):
    """A model answer that parsed but names something the engine did not offer."""


class ClaudeReasoner:
    name = "claude"

    def __init__(
        self,
        config: ClaudeConfig = ClaudeConfig(),
        *,
        client: anthropic.AsyncAnthropic | None = None,
        offline: OfflineReasoner | None = None,
    ) -> None:
        self.config = config
        self._client = client
        self.offline = offline or OfflineReasoner()
        self._usage = Usage()
        self._reserve = _decision_reserve(config)  # what the search leaves for the verdict's call
        self._phases: dict[str, list[int]] = {}  # phase -> [calls, tokens]
        self._notes: dict[str, int] = {}
        self._failures = 0

    def for_investigation(self) -> ClaudeReasoner:
        """A reasoner with its own budget and usage for one investigation (and a client made in
        that investigation's event loop)."""
        return ClaudeReasoner(self.config, offline=self.offline)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    def usage(self) -> Usage:
        notes = tuple(f"{n} ({k}x)" if k > 1 else n for n, k in self._notes.items())
        phases = tuple((p, *self._phases[p]) for p in PHASES if p in self._phases)
        return Usage(
            self._usage.calls,
            self._usage.input_tokens,
            self._usage.output_tokens,
            self._usage.cached_tokens,
            notes,
            phases,  # type: ignore[arg-type]
        )

    # -- the three roles ---------------------------------------------------------------------
    async def propose(self, state: DiagnosticState, *, n: int, seed: int) -> list[Action]:
        priorities = self.offline.priorities(state)
        if not priorities:
            return []
        offered = sorted(priorities, key=lambda a: (-priorities[a], a.signature))[:MAX_ACTIONS]
        ids = {f"a{i}": a for i, a in enumerate(offered, start=1)}
        data = {
            **state_view(state),
            "choose": n,
            "actions": [
                {"id": i, "tool": a.tool.value, "target": a.target, "prior": round(priorities[a], 2)}
                for i, a in ids.items()
            ],
        }

        def parse(answer: dict[str, Any]) -> list[Action]:
            chosen = [c["action"] for c in answer["candidates"]]
            unknown = [c for c in chosen if c not in ids]
            if unknown:
                raise InvalidAnswer(f"actions {unknown} were not offered; choose from {sorted(ids)}")
            return [ids[c] for c in chosen][:n]

        picked = await self._ask(
            "propose_actions", f"Choose {n} candidate actions for the {state.agent} agent.", data, parse
        )
        return picked if picked else await self.offline.propose(state, n=n, seed=seed)

    async def reflect(self, state: DiagnosticState, steps: Sequence[Step]) -> list[Reflection]:
        data = {
            **state_view(state),
            "steps": [
                {
                    "step": i,
                    "action": s.action.describe(),
                    "status": s.status,
                    "new_evidence": [evidence_view(ev) for ev in sorted(s.new_evidence, key=lambda ev: -ev.score)[:4]],
                    "hypotheses_after": [hypothesis_view(h) for h in s.after.hypotheses[:3]],
                }
                for i, s in enumerate(steps, start=1)
            ],
        }

        def parse(answer: dict[str, Any]) -> list[Reflection]:
            by_step = {r["step"]: r for r in answer["reflections"]}
            if sorted(by_step) != list(range(1, len(steps) + 1)):
                raise InvalidAnswer(f"score every step 1..{len(steps)} exactly once")
            return [
                Reflection(float(r["e"]), float(r["c_comp"]), float(r["k"]), str(r.get("note", ""))[:200])
                for r in (by_step[i] for i in range(1, len(steps) + 1))
            ]

        scored = await self._ask("score_reflections", f"Score all {len(steps)} executed steps.", data, parse)
        return scored if scored else await self.offline.reflect(state, steps)

    async def decide(self, state: DiagnosticState) -> Decision:
        engine = await self.offline.decide(state)
        if not state.hypotheses:
            return engine
        top = state.hypotheses[:DECISION_HYPOTHESES]
        by_id = {ev.id: ev for ev in state.evidence}
        data = {
            "symptom": state.symptom,
            "hypotheses": [
                {
                    **hypothesis_view(h),
                    "id": h.id,
                    "evidence": [evidence_view(by_id[i]) for i in h.evidence[:DECISION_EVIDENCE] if i in by_id],
                }
                for h in top
            ],
        }

        def parse(answer: dict[str, Any]) -> tuple[str, str]:
            if answer["lead"] not in {h.id for h in top}:
                raise InvalidAnswer(f"lead {answer['lead']!r} is not one of {[h.id for h in top]}")
            return str(answer["lead"]), redact(" ".join(str(answer["rationale"]).split()))[:400]

        judged = await self._ask("judge_decision", "Judge which hypothesis explains the symptom.", data, parse)
        if judged is None:
            return engine
        lead, rationale = judged
        if lead != top[0].id:  # the ranking stays the engine's; the disagreement is reported
            rationale = f"{rationale} (the model favours {next(h.service for h in top if h.id == lead)})"
        return Decision(
            engine.ranking,
            engine.confidence,
            f"{top[0].service} ({top[0].fault_type.value}) explains the symptom at {state.symptom}: {rationale}",
        )

    async def stage_critic(self, stage: str, verdict: Any, menu: list[P], k: int) -> list[P]:
        """STAR's stage critic: the offline menu of patch operators for a stage, reordered by
        the model from the stage's violations; the menu as it was when the model cannot."""
        ids = {f"p{i}": p for i, p in enumerate(menu, start=1)}
        diagnostic = next((d for d in verdict.stages if d.stage == stage), None)
        data = {
            "stage": stage,
            "k": k,
            "audit_score": round(verdict.score, 3),
            "violations": [
                {"criterion": c.name, "score": round(c.score, 3), "explanation": c.explanation[:200]}
                for c in (diagnostic.violations if diagnostic else ())
            ],
            "patches": [{"id": i, "name": getattr(p, "name", str(p))} for i, p in ids.items()],
        }

        def parse(answer: dict[str, Any]) -> list[P]:
            chosen = [o["patch"] for o in answer["order"]]
            unknown = [c for c in chosen if c not in ids]
            if unknown:
                raise InvalidAnswer(f"patches {unknown} were not offered; choose from {sorted(ids)}")
            first = [ids[c] for c in dict.fromkeys(chosen)]
            return first + [p for p in menu if p not in first]

        ordered = await self._ask("choose_patches", f"Order the patches for the {stage} stage.", data, parse)
        return ordered if ordered else menu

    async def answer(self, question: str, summary: dict[str, Any], evidence_ids: set[str]) -> str | None:
        """An answer to an engineer's question grounded in an investigation summary; None when
        the model cannot give one (the caller answers offline)."""
        data = {"question": question[:1000], "investigation": summary}

        def parse(answer: dict[str, Any]) -> str:
            bad = [c for c in answer["cited"] if c not in evidence_ids]
            if bad:
                raise InvalidAnswer(f"cited ids {bad} are not in the investigation")
            cites = f" (evidence: {', '.join(answer['cited'])})" if answer["cited"] else ""
            return redact(str(answer["answer"]).strip()) + cites

        return await self._ask("answer_question", "Answer the engineer's question.", data, parse)

    # -- one call ----------------------------------------------------------------------------
    async def _ask(
        self, tool: str, instruction: str, data: dict[str, Any], parse: Callable[[dict[str, Any]], T]
    ) -> T | None:
        """Call the model for one job; the parsed answer, or None for the offline reasoner."""
        if self._failures >= 2:
            return None
        content = f"{instruction}\n\n<telemetry_data>\n{data_block(data)}\n</telemetry_data>"
        messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
        phase = _PHASE_OF[tool]
        for attempt in (1, 2):
            if tool in _SEARCH and not self._affordable(content, keep=self._reserve):
                return None  # as planned: the rest of the budget is the verdict's
            if not self._affordable(content):
                if tool not in _SEARCH:
                    self._note(
                        f"model budget spent ({self.config.max_calls} calls / {self.config.max_tokens} tokens) "
                        f"before the {phase}: the offline reasoner took it"
                    )
                return None
            import anthropic

            try:
                response = await self._client_here().messages.create(  # type: ignore[call-overload]
                    model=self.config.model,
                    max_tokens=self.config.response_tokens,
                    system=[{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}],
                    tools=TOOLS,
                    tool_choice={"type": "tool", "name": tool},
                    messages=messages,
                    timeout=self.config.timeout,
                )
            except (anthropic.APIStatusError, anthropic.APIConnectionError) as exc:
                self._failures += 1
                self._note(f"model unavailable ({_reason(exc)}): the offline reasoner took those steps")
                return None
            self._count(response.usage, phase)
            block = next((b for b in response.content if b.type == "tool_use" and b.name == tool), None)
            try:
                if block is None:
                    raise InvalidAnswer(f"call the tool {tool}")
                raw = dict(block.input) if isinstance(block.input, dict) else {}
                jsonschema.validate(raw, SCHEMAS[tool])
                return parse(raw)
            except (jsonschema.ValidationError, InvalidAnswer) as exc:
                error = exc.message if isinstance(exc, jsonschema.ValidationError) else str(exc)
                if attempt == 2 or block is None:
                    break
                messages = [
                    *messages,
                    {"role": "assistant", "content": [b.model_dump() for b in response.content]},
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": block.id,
                                "is_error": True,
                                "content": f"Invalid: {error[:300]}",
                            }
                        ],
                    },
                ]
        self._note(f"invalid model answer for {tool}: the offline reasoner took that step")
        return None

    def _client_here(self) -> anthropic.AsyncAnthropic:
        import anthropic

        if self._client is None:
            self._client = anthropic.AsyncAnthropic(
                api_key=self.config.api_key,
                base_url=self.config.base_url,
                max_retries=self.config.max_retries,
                timeout=self.config.timeout,
            )
        return self._client

    def _affordable(self, content: str, keep: tuple[int, int] = (0, 0)) -> bool:
        """Whether one more call with this content fits the budget, with `keep` (calls, tokens)
        still left after it."""
        used = self._usage.input_tokens + self._usage.output_tokens + self._usage.cached_tokens
        calls, tokens = keep
        return (
            self._usage.calls + 1 + calls <= self.config.max_calls
            and used + _estimate(len(content), self.config) + tokens <= self.config.max_tokens
        )

    def _count(self, usage: Any, phase: str) -> None:
        cache_write = int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
        cache_read = int(getattr(usage, "cache_read_input_tokens", 0) or 0)
        u = self._usage
        self._usage = Usage(
            u.calls + 1,
            u.input_tokens + int(usage.input_tokens) + cache_write,
            u.output_tokens + int(usage.output_tokens),
            u.cached_tokens + cache_read,
        )
        spent = self._phases.setdefault(phase, [0, 0])
        spent[0] += 1
        spent[1] += int(usage.input_tokens) + cache_write + cache_read + int(usage.output_tokens)

    def _note(self, text: str) -> None:
        self._notes[text] = self._notes.get(text, 0) + 1


def _estimate(content_chars: int, config: ClaudeConfig) -> int:
    """Tokens one call may cost: the system prompt and tools, the content, the answer."""
    return len(SYSTEM) // 4 + 700 + content_chars // 3 + config.response_tokens // 4


def _decision_reserve(config: ClaudeConfig) -> tuple[int, int]:
    """Calls and tokens the verdict's call needs at most: the largest decision payload the caps
    allow (each judged hypothesis with its evidence, each item's detail clipped)."""
    item = len(json.dumps(evidence_shape())) + DETAIL_CHARS
    hypothesis = 120 + DECISION_EVIDENCE * item
    return 1, _estimate(200 + DECISION_HYPOTHESES * hypothesis, config)


def _reason(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    kind = body.get("error", {}).get("type") if isinstance(body, dict) else None
    return f"{status} {kind}" if status else type(exc).__name__
