"""harness.core."""
