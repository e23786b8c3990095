"""harness.kernels.treeshap."""
