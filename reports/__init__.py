"""Reports: pure functions from stored results to tables and figures (``harness.reports``)."""
