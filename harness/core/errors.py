"""Typed exceptions: every message says what was allowed and what was received."""

from __future__ import annotations


class HarnessError(Exception):
    """Base class of every error the harness raises on purpose."""


class InvalidParameterError(HarnessError, ValueError):
    """A parameter of a method, dataset or model spec is outside its declared constraints."""


class UnknownNameError(HarnessError, ValueError):
    """A method, dataset, forest or report name that is not registered."""


class BadInputError(HarnessError, ValueError):
    """Input data, a model or a configuration that the harness cannot use."""


class NotInstalledError(HarnessError, ImportError):
    """A method needs an optional package that is not installed."""


class MethodSkipped(HarnessError):
    """A method declines a cell before running (wrong task, unsupported model...)."""


def unknown_name(kind: str, got: str, available: list[str] | tuple[str, ...]) -> UnknownNameError:
    """Build the one error format for an unregistered name."""
    names = ", ".join(sorted(available))
    return UnknownNameError(f"Unknown {kind} {got!r}. Available {kind}s: {names}.")


class StoreDamagedError(BadInputError):
    """A run folder's store cannot be read: not a SQLite database, or damaged pages."""


class RunFolderBusyError(HarnessError):
    """Another runner holds the run folder (one runner owns a run folder at a time)."""


class StoreLostError(HarnessError):
    """The store was deleted or replaced while this run was writing to it."""
