"""Evidence recollection for S1 patches: read the telemetry again, for more entities or a
wider window, and fold the new evidence into the package under fresh ids."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace

from rca.evidence import Evidence, EvidenceId
from rca.evidence.toolbox import Toolbox
from rca.model import Incident
from rca.replay import with_window
from rca.telemetry import Window
from rca.trace import Trace


def recollector(incident: Incident) -> Callable[[Trace, tuple[str, ...], float], Awaitable[Trace]]:
    """A recollect function over one incident's sources, for RepairContext."""

    boxes: dict[Window, Toolbox] = {}  # one per window read: its analyses are reused

    async def recollect(trace: Trace, entities: tuple[str, ...], widen: float) -> Trace:
        ep = trace.evidence_package
        window = Window(ep.window.start - widen * ep.window.seconds, ep.window.end)
        box = boxes.get(window)
        if box is None:
            box = boxes[window] = Toolbox(with_window(incident, window))
        tools = [
            t
            for m, t in (("metrics", box.metrics), ("logs", box.logs), ("traces", box.spans))
            if ep.modalities.get(m, False)
        ]
        fresh: list[Evidence] = []
        for entity in entities:
            for tool in tools:
                fresh.extend((await tool(entity)).evidence)
        reread = set(entities)
        kept = [ev for ev in ep.evidence if ev.entity not in reread]
        start = 1 + max((int(ev.id.rsplit("-", 1)[-1]) for ev in ep.evidence), default=0)
        renumbered = [replace(ev, id=EvidenceId(f"ev-{start + i}")) for i, ev in enumerate(fresh)]
        shares = {**ep.edge_shares, **{e: box.edge_share(e) for e in entities}}
        package = replace(
            ep,
            window=window,
            scope=tuple(sorted(set(ep.scope) | reread)),
            evidence=tuple(kept + renumbered),
            edge_shares=shares,
            missing=tuple(dict.fromkeys(ep.missing + tuple(box.missing))),
        )
        return replace(trace, evidence_package=package)

    return recollect
