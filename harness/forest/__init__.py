"""harness.forest.sklearn."""
