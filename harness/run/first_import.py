"""The first ``import harness`` of an environment compiles every built-in kernel, once.

Issue 22, part 1 asks that the first call of every method answer within 2 s from an empty
numba cache, and offers three routes: fewer specialisations, a compiled extension, or
"compiling once at install or first import into the user's cache directory with a progress
line". This module is the third route. When ``harness`` is imported as a library (a script, a
notebook, a test, a Dask worker) and numba's cache lacks the kernels of some installed
built-in method, the import compiles them with :func:`harness.run.compile.compile_in_processes`
(one worker process per usable core, so all of them in about 28 s on 2 cores, 54 s of CPU),
writing one progress line to stderr, and leaves a stamp of what it compiled (the sources'
sizes and times, the numba and Python versions, the cache location: :func:`_fingerprint`).
Every later import, in any process, compares that stamp in about 1 ms without loading numba,
and every first call loads its kernels from the cache. A stamp that no longer matches (a
source edited, numba upgraded) sends the import to numba's cache itself, which compiles only
the methods whose kernels it lacks.

Where the wait is not taken at import:

- ``HARNESS_COMPILE=lazy``: each method's kernels are compiled at its own first call (in a
  worker process, :func:`harness.run.compile.prepare_from_cache`), for a user who wants one
  method on one core and would rather not wait for the others;
- the command line (``python -m harness ...``, and any ``python -m`` module whose package
  imports ``harness`` while Python locates it): each command compiles what it needs itself,
  ``compare`` in parallel while it loads the data and fits the models;
- the compile workers themselves (their environment says ``lazy``).

Processes that import at once (pytest-xdist workers, a Dask cluster starting) take a file lock
per cache location, so one compiles and the others wait, then find the cache warm. A compile
that fails leaves the method to :func:`~harness.run.compile.prepare_from_cache` and says so in
a warning; it never fails the import.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from typing import TextIO

#: The environment variable that chooses when kernels are compiled, and its values.
MODE_VARIABLE = "HARNESS_COMPILE"
MODES = ("import", "lazy")
#: The ``harness`` package's folder: its sources are kernel sources, its ``__pycache__``
#: holds the stamp when ``NUMBA_CACHE_DIR`` is unset and this user may write it
#: (:func:`stamp_folder`).
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def compile_mode() -> str:
    """``HARNESS_COMPILE`` (default ``"import"``), checked against :data:`MODES`."""
    from harness.core.errors import InvalidParameterError

    mode = os.environ.get(MODE_VARIABLE, "import").strip().lower() or "import"
    if mode not in MODES:
        raise InvalidParameterError(
            f"{MODE_VARIABLE} must be one of {', '.join(MODES)}; got "
            f"{os.environ[MODE_VARIABLE]!r}.")
    return mode


def _imported_by_the_command_line() -> bool:
    """True while ``python -m harness...`` locates its module: Python sets ``sys.argv[0]`` to
    ``"-m"`` until the module runs (the documented meaning of ``sys.argv`` under ``-m``)."""
    return sys.argv[:1] == ["-m"]


def builtin_method_classes() -> list[type]:
    """The built-in methods whose optional packages are installed (plugins are left to their
    first call: importing them here could import ``harness`` again)."""
    from harness.core.registry import BUILTIN_METHODS, import_object

    classes = [import_object(target) for target in BUILTIN_METHODS.values()]
    return [cls for cls in classes if not cls.missing_packages()]


def _kernel_roots() -> list[str]:
    """The folders whose Python sources hold the built-in kernels: ``harness`` and the
    built-in methods' package (``harness.methods``, installed as ``methods``)."""
    import importlib.util

    roots = [_PACKAGE_DIR]
    spec = importlib.util.find_spec("harness.methods")
    roots += list(spec.submodule_search_locations or []) if spec is not None else []
    return roots


def _fingerprint() -> str:
    """What the cache's kernels depend on, without importing numba: every source file under
    :func:`_kernel_roots` (path, size, modification time: numba's own staleness test), the
    numba and Python versions, and the cache location."""
    from importlib.metadata import version

    parts = [sys.version, version("numba"), os.environ.get("NUMBA_CACHE_DIR", "")]
    for root in _kernel_roots():
        for folder, subfolders, files in os.walk(root):
            subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    stat = os.stat(os.path.join(folder, name))
                    parts.append(f"{folder}/{name}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def stamp_folder() -> str:
    """Where the harness keeps what it knows of numba's cache (the stamp of a complete
    compile, what each method's compile left uncompiled): ``NUMBA_CACHE_DIR``, else the
    ``harness`` package's ``__pycache__``; for a user who cannot write that (a package that
    another user installed, for whom numba caches the kernels in the user's own folder
    instead: :func:`harness.run.compile.cache_location`), a folder of this package's in the
    user's cache (``XDG_CACHE_HOME``, else ``~/.cache``). Without it, every import of such a
    user checked numba's cache (1.4 s against 1.2 s) and no record of unused entries was
    kept."""
    explicit = os.environ.get("NUMBA_CACHE_DIR")
    if explicit:
        return explicit
    beside = os.path.join(_PACKAGE_DIR, "__pycache__")
    if _writable(beside if os.path.isdir(beside) else _PACKAGE_DIR):
        return beside
    user_cache = (os.environ.get("XDG_CACHE_HOME")
                  or os.path.join(os.path.expanduser("~"), ".cache"))
    digest = hashlib.sha256(_PACKAGE_DIR.encode()).hexdigest()[:16]
    return os.path.join(user_cache, "harness", f"stamps-{digest}")


def _writable(folder: str) -> bool:
    """Whether this process may create files in ``folder``."""
    return os.access(folder, os.W_OK | os.X_OK)


def _stamp_path() -> str:
    """Where a complete compile leaves the :func:`_fingerprint` it compiled
    (:func:`stamp_folder`)."""
    return os.path.join(stamp_folder(), "harness-kernels-compiled.txt")


def _read_stamp() -> str:
    try:
        with open(_stamp_path(), encoding="ascii") as stamp:
            return stamp.read().strip()
    except (OSError, ValueError):
        return ""


def _write_stamp(fingerprint: str) -> None:
    """Atomically (a temporary file renamed over the stamp); a folder that cannot be written
    only means that the next import checks numba's cache itself."""
    path = _stamp_path()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(path), delete=False,
                                         encoding="ascii") as stamp:
            stamp.write(fingerprint)
        os.replace(stamp.name, path)
    except OSError:
        pass


def _lock_path() -> str:
    """One lock file per user and numba cache location (``NUMBA_CACHE_DIR``, else the
    sources'), in the temporary folder. Per user: another user's lock file there is not
    writable by this one (it would fail the compile at import), and numba gives a user who
    cannot write the sources' ``__pycache__`` a cache of their own."""
    import numba

    where = numba.config.CACHE_DIR or _PACKAGE_DIR
    key = f"{where}|{numba.__version__}|{_user()}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), f"harness-compile-{digest}.lock")


def _user() -> str:
    """This process's user: its uid where there is one, else the login name."""
    if hasattr(os, "getuid"):
        return str(os.getuid())
    import getpass

    return getpass.getuser()


class _ProgressLine:
    """One line on ``stream``: rewritten in place on a terminal, else written when done."""

    def __init__(self, stream: TextIO, total: int, where: str) -> None:
        self.stream, self.total, self.start = stream, total, time.perf_counter()
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        methods = "1 method" if total == 1 else f"{total} methods"
        self.head = (f"harness: compiling the kernels of {methods}, once for this environment, "
                     f"into numba's cache: {where}")
        if not self.tty:
            self._write(self.head + " ...\n")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stderr must not fail the import
            pass

    def __call__(self, done: int, total: int, name: str) -> None:
        if self.tty:
            self._write(f"\r{self.head}: {done}/{total} {name:<16}")

    def close(self, errors: int) -> None:
        seconds = time.perf_counter() - self.start
        failed = f", {errors} failed" if errors else ""
        end = f"done in {seconds:.0f} s{failed}\n"
        self._write(f"\r{self.head}: {end}" if self.tty else f"harness: {end}")


def compile_at_first_import(classes: list[type] | None = None,
                            stream: TextIO | None = None,
                            compile_in_processes: Callable | None = None) -> list[str]:
    """Compile the kernels numba's cache lacks, for every installed built-in method, unless
    :func:`compile_mode` is ``"lazy"`` or the command line is importing ``harness``.

    Parameters
    ----------
    classes : list of Method subclasses, optional
        Default :func:`builtin_method_classes`.
    stream : text stream, optional
        Where the progress line goes (default ``sys.stderr``).
    compile_in_processes : callable, optional
        Default :func:`harness.run.compile.compile_in_processes` (tests pass a stand-in).

    Returns
    -------
    list of str
        The names of the methods compiled here (empty when the cache was warm or the mode
        says not to compile at import).
    """
    if compile_mode() == "lazy" or _imported_by_the_command_line():
        return []
    fingerprint = _fingerprint()
    if _read_stamp() == fingerprint:  # the usual import: a few ms, numba not loaded
        return []
    from harness.run import compile as compile_step

    compile_in_processes = compile_in_processes or compile_step.compile_in_processes
    classes = builtin_method_classes() if classes is None else classes
    cold = [cls for cls in classes if not compile_step.cache_is_warm([cls])]
    if not cold:
        _write_stamp(fingerprint)
        return []
    from filelock import FileLock

    try:
        with FileLock(_lock_path()):
            cold = [cls for cls in cold if not compile_step.cache_is_warm([cls])]  # done?
            if not cold:
                return []
            line = _ProgressLine(stream or sys.stderr, len(cold), compile_step.cache_location())
            report = compile_in_processes(cold, on_progress=line)
            line.close(len(report.errors))
        errors = dict(report.errors)
    except Exception as exc:  # e.g. no writable temporary directory for the lock
        errors = {"every method": f"{type(exc).__name__}: {exc}"}
    if not errors:
        _write_stamp(fingerprint)
    if errors:
        warnings.warn(
            "harness could not compile the kernels of "
            + "; ".join(f"{name} ({error})" for name, error in sorted(errors.items()))
            + " at import; each will compile at its first call.", stacklevel=2)
    return [getattr(cls, "name", cls.__qualname__) for cls in cold]
