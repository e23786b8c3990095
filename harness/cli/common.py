"""What the command-line modules share: the ``--processes`` and ``--methods`` options."""

from __future__ import annotations

from harness.core import registry
from harness.core.errors import HarnessError


def check_processes(processes: int | None) -> None:
    """Refuse ``--processes`` below 1 (None: the default, one per usable core)."""
    if processes is not None and processes < 1:
        raise HarnessError(f"--processes must be an int >= 1; got {processes}.")


def methods_to_compile(names: list[str] | None) -> list[str]:
    """The named methods (each must be registered and installed), or every installed one."""
    if not names:
        return registry.installed_method_names()
    for name in names:
        missing = registry.get_method_class(name).missing_packages()  # unknown: BadInputError
        if missing:
            raise HarnessError(f"{name} needs {', '.join(missing)}, which is not installed; "
                               f"got --methods {name}.")
    return names
