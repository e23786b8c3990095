"""Reproduction targets of ``python -m harness reproduce``, one module per published result."""
