"""Importance methods, one module per measure (installed as ``harness.methods``)."""
