"""``python -m cli`` runs the ``stratus`` command."""

from cli.main import main

main()
