"""Approval policy: rule model, YAML loading, evaluation, grants."""
