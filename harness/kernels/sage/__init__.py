"""harness.kernels.sage."""
