"""Telemetry sources: the Protocols the engine reads through, and their implementations."""
