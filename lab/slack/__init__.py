"""The Slack playground: a local stand-in for Slack that a slack-bolt app cannot tell apart.

It serves the Web API methods a bot calls (with Slack's shapes, errors, block limits and rate
limits), delivers slash commands, clicks, modal submissions and events to the bot signed as
Slack signs them (over HTTP, or over a Socket Mode websocket), renders the workspace in a
browser page, and offers a control API (``/playground/v1``) for tests. Only this sub-package of
``lab`` talks to ``slack_sdk``/``slack_bolt``; the product never imports it.
"""
