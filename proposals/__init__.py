"""The proposal service: one trusted path from a proposed write to an approved, executed and
undone one. Every surface (the CLI, the incident workflow, the Slack bot) calls it."""
