"""Simulated controllers that run inside the lab: they turn specs into status, like a cluster."""
