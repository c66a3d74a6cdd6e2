"""Investigative actions: read-only tool calls an agent may take, and the agents that take them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Tool(StrEnum):
    SCAN = "scan"  # rank entities by how anomalous a modality looks (a dashboard glance)
    METRICS = "metrics"  # one entity's series against normal
    LOGS = "logs"  # one service's log templates against normal
    SPANS = "spans"  # one service's own time and the network gaps of its calls
    NEIGHBOURS = "neighbours"  # widen the scope to an entity's callers and callees
    ONSETS = "onsets"  # order the anomalous entities in scope by onset


class AgentKind(StrEnum):
    METRIC = "metric"
    LOG = "log"
    TRACE = "trace"


AGENT_TOOLS: dict[AgentKind, tuple[Tool, ...]] = {
    AgentKind.METRIC: (Tool.SCAN, Tool.METRICS, Tool.NEIGHBOURS, Tool.ONSETS),
    AgentKind.LOG: (Tool.SCAN, Tool.LOGS, Tool.NEIGHBOURS, Tool.ONSETS),
    AgentKind.TRACE: (Tool.SCAN, Tool.SPANS, Tool.NEIGHBOURS, Tool.ONSETS),
}

# the tool that reads one entity's telemetry of an agent's modality
MAIN_TOOL: dict[AgentKind, Tool] = {
    AgentKind.METRIC: Tool.METRICS,
    AgentKind.LOG: Tool.LOGS,
    AgentKind.TRACE: Tool.SPANS,
}

AGENT_OF_TOOL: dict[Tool, AgentKind] = {
    Tool.METRICS: AgentKind.METRIC,
    Tool.LOGS: AgentKind.LOG,
    Tool.SPANS: AgentKind.TRACE,
}


@dataclass(frozen=True, slots=True)
class Action:
    """A tool and what it is pointed at (an entity, or a modality for SCAN)."""

    tool: Tool
    target: str

    @property
    def signature(self) -> str:
        """What counts as 'the same action' for self-consistency."""
        return f"{self.tool}:{self.target}"

    def describe(self) -> str:
        return {
            Tool.SCAN: f"scan {self.target} for the most anomalous entities",
            Tool.METRICS: f"query metrics of {self.target}",
            Tool.LOGS: f"query logs of {self.target}",
            Tool.SPANS: f"query spans of {self.target}",
            Tool.NEIGHBOURS: f"expand to the callers and callees of {self.target}",
            Tool.ONSETS: "compare onsets of the anomalous entities in scope",
        }[self.tool]
