"""The incident: its stored aggregate, events and errors, the workflow and its attempts,
memory, alert intake, and the one continuation every surface calls."""
