"""harness.oracle.finite_table."""
