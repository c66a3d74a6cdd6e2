"""Secrets out of text before it leaves the process (to a model, to Slack, into a chart title).

Telemetry quotes what services log, and services log credentials: bearer tokens, passwords in
URLs and key=value pairs, cloud and vendor API keys, JWTs, private keys. Each is replaced by a
marker naming what was there, so a reader still sees that a credential was involved.
"""

from __future__ import annotations

import re

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)", re.S),
        "[REDACTED private key]",
    ),
    (re.compile(r"(?i)\b(bearer|token|basic)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 [REDACTED]"),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"), "[REDACTED jwt]"),
    (re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), "[REDACTED aws key]"),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{8,}"), "[REDACTED slack token]"),
    (re.compile(r"\bxapp-[A-Za-z0-9-]{8,}"), "[REDACTED slack token]"),
    (re.compile(r"\bsk-(?:ant-)?[A-Za-z0-9_-]{16,}"), "[REDACTED api key]"),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), "[REDACTED github token]"),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), "[REDACTED google key]"),
    (re.compile(r"(?i)(\w+://[^/\s:@]+):[^@\s/]+@"), r"\1:[REDACTED]@"),  # user:password@host
    (
        re.compile(
            r"(?i)\b((?:[a-z_]*[-_.])?(?:password|passwd|pwd|secret|api[-_]?key|access[-_]?key|"
            r"private[-_]?key|client[-_]?secret|auth[-_]?token|token|credentials?)[\"']?\s*[:=]\s*[\"']?)"
            r"([^\s\"',;&}]{3,})"
        ),
        r"\1[REDACTED]",
    ),
)


def redact(text: str) -> str:
    """The text with every credential it contains replaced by a marker."""
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text
