"""Rule `unseen`: a part of a fault's footprint that only a missing modality could show is as
likely absent as present (indifference), so it counts at half the strength of the parts seen.
Without the rule such parts neither count nor dilute: the type is judged on what was seen alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from rca.model import Modality

UNSEEN_SHARE = 0.5

_MODALITY_OF_PART: dict[str, Modality] = {
    "exc": Modality.LOGS,
    "logerr": Modality.LOGS,
    "logdrop": Modality.LOGS,
    "lognew": Modality.LOGS,
    "gap": Modality.TRACES,
    "delay": Modality.TRACES,
    "gap_out": Modality.TRACES,
    "own": Modality.TRACES,
    "repeat": Modality.TRACES,
}


def modality_of(part: str) -> Modality:
    """The modality that shows a part of a fault's footprint (rca.fault_model's recipes)."""
    return _MODALITY_OF_PART.get(part, Modality.METRICS)


def unseen(recipe: Sequence[tuple[str, float]], modalities: frozenset[Modality]) -> tuple[float, tuple[str, ...]]:
    """The share of a recipe's weight that no present modality shows, and those modalities."""
    whole = sum(w for _, w in recipe)
    hidden = [(part, w) for part, w in recipe if modality_of(part) not in modalities]
    missing = tuple(dict.fromkeys(modality_of(part).value for part, _ in hidden))
    return (sum(w for _, w in hidden) / whole if whole else 0.0), missing


def counted(value: float, share: float) -> float:
    """A value judged on the parts seen, with the `share` of its footprint no present modality
    shows counted at UNSEEN_SHARE of what was seen."""
    return value * (1.0 - (1.0 - UNSEEN_SHARE) * share)
