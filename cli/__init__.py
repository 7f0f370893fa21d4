"""The ``stratus`` command: the composition root that wires configuration and packages."""
