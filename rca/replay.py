"""Investigating any window of a recorded dataset, as if it were live."""

from __future__ import annotations

import difflib
import logging
from collections.abc import Sequence
from dataclasses import replace

from rca.errors import DataError, InputError
from rca.model import CaseId, Incident
from rca.sources.protocols import WindowedTopology
from rca.telemetry import Window

log = logging.getLogger(__name__)


async def known_entities(incident: Incident) -> tuple[str, ...]:
    """Every entity the incident's sources know: topology nodes and metric entities (a call
    graph that cannot be read names none)."""
    names: set[str] = set()
    if incident.sources.topology is not None:
        try:
            names.update(str(n) for n in (await incident.sources.topology.topology()).nodes)
        except DataError as exc:
            log.warning("the call graph could not be read for names: %s", exc)
    if incident.sources.metrics is not None:
        names.update(await incident.sources.metrics.entities())
    return tuple(sorted(names))


def suggest(name: str, known: Sequence[str]) -> str:
    """A "did you mean" clause for an unknown entity, or an empty string."""
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    return f" Did you mean {', '.join(close)}?" if close else ""


def nearest(recordings: Sequence[Incident], window: Window) -> Incident:
    """The recording whose window overlaps the requested one most, or lies nearest to it."""
    if not recordings:
        raise InputError("no recorded incidents to replay")

    def distance(c: Incident) -> tuple[float, float]:
        w = c.window
        overlap = max(0.0, min(w.end, window.end) - max(w.start, window.start))
        gap = max(0.0, w.start - window.end, window.start - w.end)
        return (-overlap, gap)

    return min(recordings, key=distance)


async def replay_incident(recordings: Sequence[Incident], *, symptom: str, window: Window) -> Incident:
    """An unlabelled incident for `symptom` over `window`, read from the recorded sources."""
    base = nearest(recordings, window)
    known = await known_entities(base)
    if symptom not in known:
        raise InputError(f"unknown service {symptom!r}.{suggest(symptom, known)}")
    case_id = CaseId(f"{base.dataset}/replay/{window.to_iso()}")
    return replace(with_window(base, window), id=case_id, symptom=symptom, alert_time=None)


def with_window(incident: Incident, window: Window) -> Incident:
    """The same incident over another window; a look-back normal moves with it."""
    normal = {}
    for modality, n in incident.normal.items():
        if n.window.end == incident.window.start:  # a look-back: the period right before
            normal[modality] = replace(n, window=Window(window.start - n.window.seconds, window.start))
        else:
            normal[modality] = n
    sources = incident.sources
    if isinstance(sources.topology, WindowedTopology):  # calls seen in the window move with it
        sources = replace(sources, topology=sources.topology.over(window))
    return replace(incident, window=window, normal=normal, sources=sources)
