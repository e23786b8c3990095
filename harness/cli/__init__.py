"""The command line: ``python -m harness compare | list | report | bench | reproduce``."""

from harness.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
