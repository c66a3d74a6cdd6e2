"""What a team wrote down about each service, for the verdict's "what next": `RCABOT_RUNBOOKS`,
a YAML file mapping a service name (or `"*"`, any other service) to its owner, dashboard,
runbook and rollback hint.

```yaml
ts-order-service:
  owner: "@orders-oncall"          # shown as written; a Slack user or group id (U…, S…) is linked
  dashboard: https://grafana.example.com/d/orders
  runbook: https://wiki.example.com/orders#high-cpu
  rollback: kubectl -n prod rollout undo deploy/ts-order-service
"*":
  owner: "@platform"
```

The file is the operator's, but it is read as input all the same: a field that is not a
string, a link that is not http(s), an unknown key or a file that is not a mapping of mappings
is refused by name when the bot starts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from rca.errors import InputError

FIELDS = ("owner", "dashboard", "runbook", "rollback")
_ASKED = {
    "owner": re.compile(
        r"\bwho\b.*\bowns?\b|\bowners?\b|\bownership\b|\bon.?call for\b|\bwho (do|should) (i|we) (page|call|ping)"
    ),
    "dashboard": re.compile(r"\bdashboards?\b|\bgrafana\b"),
    "runbook": re.compile(r"\brunbooks?\b|\bplaybooks?\b"),
    "rollback": re.compile(r"\broll ?back\b|\brevert\b|\bundo the (deploy|release)\b"),
}
LINKS = ("dashboard", "runbook")
ANY = "*"


@dataclass(frozen=True, slots=True)
class Runbook:
    owner: str = ""
    dashboard: str = ""
    runbook: str = ""
    rollback: str = ""


@dataclass(frozen=True, slots=True)
class Runbooks:
    entries: Mapping[str, Runbook]

    def of(self, service: str) -> Runbook | None:
        """The service's own entry, else the catch-all, else None."""
        return self.entries.get(service) or self.entries.get(ANY)


NONE = Runbooks({})


def asked_fields(question: str) -> tuple[str, ...]:
    """Which of a service's written-down fields a question asks for ("who owns this?",
    "should I roll back?"), in the file's order; none for any other question."""
    low = question.lower()
    return tuple(f for f in FIELDS if _ASKED[f].search(low))


def load_runbooks(path: Path | None) -> Runbooks:
    if path is None:
        return NONE
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InputError(f"RCABOT_RUNBOOKS: cannot read {path.name}: {type(exc).__name__}") from None
    if data is None:
        return NONE
    if not isinstance(data, dict):
        raise InputError("RCABOT_RUNBOOKS: the file must map service names to their entries")
    return Runbooks({str(service): _entry(str(service), entry) for service, entry in data.items()})


def _entry(service: str, entry: object) -> Runbook:
    where = f"RCABOT_RUNBOOKS: {service[:60]!r}"
    if not isinstance(entry, dict):
        raise InputError(f"{where} must map {', '.join(FIELDS)} to text")
    unknown = sorted(str(k) for k in entry if k not in FIELDS)
    if unknown:
        raise InputError(f"{where}: unknown key(s) {', '.join(k[:30] for k in unknown)}; known: {', '.join(FIELDS)}")
    values: dict[str, str] = {}
    for key, value in entry.items():
        if not isinstance(value, str) or len(value) > 500:
            raise InputError(f"{where}: {key} must be text of at most 500 characters")
        if key in LINKS and (urlsplit(value).scheme not in ("http", "https") or not urlsplit(value).netloc):
            raise InputError(f"{where}: {key} must be an http(s) link")
        values[key] = value.strip()
    return Runbook(**values)
