"""harness.kernels.reroute."""
