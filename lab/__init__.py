"""The sandbox Stratus is tested against: a Kubernetes API emulator with simulated
controllers, sample apps, a fault library and scenarios with oracles.

The product never imports this package (only ``cli`` does, for ``stratus lab``); it talks to
the lab over HTTP exactly as it talks to a real cluster.
"""
