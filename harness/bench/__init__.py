"""harness.bench.runner."""
