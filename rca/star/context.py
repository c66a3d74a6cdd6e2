"""What an audit is checked against, read once from an incident's sources: the call graph,
the modalities that exist, and the entities the telemetry itself flags most."""

from __future__ import annotations

from rca.evidence.toolbox import SCAN_LEADS, Toolbox
from rca.model import Incident
from rca.star.criteria import AuditContext


async def audit_context(incident: Incident) -> AuditContext:
    """The audit's view of an incident, independent of any trace: a scan of each modality
    names the entities whose telemetry stands out most, which a sound evidence package
    must have examined. A source that cannot be read gives what the engine had (its toolbox's
    bounded read): an empty call graph, or a modality taken as absent."""
    box = Toolbox(incident)
    graph = await box.topology()
    leads: list[str] = []
    for modality, present in incident.sources.modalities().items():
        if present:
            leads.extend((await box.scan(modality)).leads[:SCAN_LEADS])
    return AuditContext(graph, box.available(), tuple(dict.fromkeys(leads)))
