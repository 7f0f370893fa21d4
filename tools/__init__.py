"""The sandboxed tool layer: the only code that talks to Kubernetes."""
