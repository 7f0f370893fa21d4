"""The Kubernetes API server emulator: object storage, REST semantics and HTTP routes."""
