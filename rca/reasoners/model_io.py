"""What the model is offered and shown: the tools it answers through, each with the JSON
Schema its answer is validated against, and the compact views of a state it reads, clipped
and redacted, inside a data block no telemetry text can close."""

from __future__ import annotations

import json
from typing import Any

from rca.redact import redact
from rca.search.state import DiagnosticState

MAX_EVIDENCE = 12  # shown per state
DETAIL_CHARS = 160


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


_UNIT = {"type": "number", "minimum": 0, "maximum": 1}
TOOLS: list[dict[str, Any]] = [
    {
        "name": "propose_actions",
        "description": "Choose the next investigative actions, by the ids offered in the data.",
        "input_schema": _schema(
            {
                "candidates": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 10,
                    "items": _schema(
                        {
                            "action": {"type": "string", "pattern": "^a[0-9]{1,3}$"},
                            "reason": {"type": "string", "maxLength": 300},
                        },
                        ["action"],
                    ),
                }
            },
            ["candidates"],
        ),
    },
    {
        "name": "score_reflections",
        "description": "Score every executed step: evidence quality e, completeness c_comp, consistency k.",
        "input_schema": _schema(
            {
                "reflections": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 10,
                    "items": _schema(
                        {
                            "step": {"type": "integer", "minimum": 1},
                            "e": _UNIT,
                            "c_comp": _UNIT,
                            "k": _UNIT,
                            "note": {"type": "string", "maxLength": 300},
                        },
                        ["step", "e", "c_comp", "k"],
                    ),
                }
            },
            ["reflections"],
        ),
    },
    {
        "name": "judge_decision",
        "description": "Judge which hypothesis explains the symptom, with a calibrated confidence.",
        "input_schema": _schema(
            {
                "lead": {"type": "string", "pattern": "^h-[0-9]{1,4}$"},
                "confidence": _UNIT,
                "rationale": {"type": "string", "maxLength": 600},
            },
            ["lead", "confidence", "rationale"],
        ),
    },
    {
        "name": "choose_patches",
        "description": "Order the offered patch operators for a stage of an RCA trace, most promising first.",
        "input_schema": _schema(
            {
                "order": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 20,
                    "items": _schema(
                        {
                            "patch": {"type": "string", "pattern": "^p[0-9]{1,2}$"},
                            "reason": {"type": "string", "maxLength": 300},
                        },
                        ["patch"],
                    ),
                }
            },
            ["order"],
        ),
    },
    {
        "name": "answer_question",
        "description": "Answer an engineer's question about the investigation, citing evidence ids.",
        "input_schema": _schema(
            {
                "answer": {"type": "string", "maxLength": 2000},
                "cited": {"type": "array", "maxItems": 12, "items": {"type": "string"}},
            },
            ["answer", "cited"],
        ),
    },
]
TOOLS[-1] = {**TOOLS[-1], "cache_control": {"type": "ephemeral"}}  # caches the system prompt and all tools
SCHEMAS = {t["name"]: t["input_schema"] for t in TOOLS}


def evidence_shape() -> dict[str, Any]:
    """An evidence item as the model sees it, with its longest values but an empty detail."""
    return {
        "id": "ev-99999",
        "entity": "x" * 60,
        "modality": "metrics",
        "score": 10000.0,
        "onset": 1_700_000_000.0,
        "detail": "",
    }


def state_view(state: DiagnosticState) -> dict[str, Any]:
    """What the model sees of a state: compact, clipped, redacted by _data_block."""
    strongest = sorted(state.evidence, key=lambda ev: -ev.score)[:MAX_EVIDENCE]
    return {
        "agent": state.agent.value,
        "symptom": state.symptom,
        "window": state.window.to_iso(),
        "handoff_summary": state.handoff,
        "scope": sorted(state.scope)[:30],
        "hypotheses": [hypothesis_view(h) for h in state.hypotheses[:8]],
        "evidence": [evidence_view(ev) for ev in strongest],
    }


def hypothesis_view(h: Any) -> dict[str, Any]:
    return {"service": h.service, "fault_type": h.fault_type.value, "value": round(h.value, 3)}


def evidence_view(ev: Any) -> dict[str, Any]:
    return {
        "id": ev.id,
        "entity": ev.entity,
        "modality": ev.modality.value,
        "score": round(ev.score, 1),
        "onset": ev.onset,
        "detail": ev.detail[:DETAIL_CHARS],
    }


def data_block(data: dict[str, Any]) -> str:
    """JSON with every string redacted and no `<` or `>` left to close the data tag."""
    text = json.dumps(redacted(data), ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e")


def redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redacted(v) for v in value]
    return value
