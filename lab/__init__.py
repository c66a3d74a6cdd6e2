"""The lab: a small shop of real services, drawn from a seed, to break and record.

Each service is its own OS process (aiohttp) exporting Prometheus metrics, JSON logs and
OpenTelemetry traces; Debian's Prometheus scrapes them; faults are injected at seeded times
and recorded as labels apart from the telemetry. `rcabot lab record` writes the incidents in
the Nezha layout that `rcabot eval` reads. Nothing here is imported by the engine.
"""
