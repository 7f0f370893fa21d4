"""What an operator sees of a running Stratus: readiness judged from probes, the metrics read
from the store at scrape time, and structured, redacted logs.

Sits between the surfaces (``bot/`` serves the HTTP endpoints, ``cli/`` configures logging)
and the incident and proposal packages it reads; it decides and words nothing a person reads
in Slack or a terminal.
"""
