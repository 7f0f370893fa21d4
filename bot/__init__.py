"""Slack surface (slack-bolt): slash commands, Block Kit cards, buttons, thread summaries."""
