"""The incident workflow: state machine, analyzers, planners, telemetry, health score."""
