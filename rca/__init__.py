"""rcabot's engine: telemetry model, sources, evidence, search, audit. No Slack, no SQL, no env."""
