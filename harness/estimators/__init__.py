"""harness.estimators."""
