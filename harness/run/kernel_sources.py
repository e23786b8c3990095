"""What a cached kernel's machine code depends on beyond its own source file, and the check
that keeps numba's cache from running code of sources that are gone.

numba keys a cached kernel by its *own* source file only. A kernel links into its cache entry
the code of every jitted function it calls and the value of every global it reads, so when a
callee in another file is edited, or a constant imported from another module changes, the
caller's file is unchanged and numba loads the old code: its documentation lists both as
limitations of ``cache=True`` ("Cache invalidation fails to recognize changes in symbols
defined in a different file"; "Global variables are treated as constants"), and
numba/numba#1833 is still open. For this harness that is a silently wrong answer: a
contributor edits a helper of ``harness.forest`` and the methods keep the old helper's results.

Here each cached kernel gets a *sources record* beside numba's index: the SHA-256 of

- the text of every source file that holds a jitted function or another object its code
  reaches by global name (callees, recursively; objects reached through an attribute of one
  of those modules, ``module.name``; only the kernel's own package and ``harness``, whose
  files can change under an installed numba and numpy),
- the value of every constant global it reads (numbers, strings, tuples, arrays), and
- the files of numba's index and of the cache entries it lists (size and modification time),
  so that the record vouches for exactly the code it was written with.

A compile run (:mod:`harness.run.compile`) first forgets every kernel whose record is missing
or does not match (:func:`forget_stale`, once, before any of its workers compiles: a helper
compiled and not yet recorded has no record either), then its workers compile and write the
records (:func:`record_sources`); :func:`harness.run.compile.cache_is_warm` counts a kernel with a
stale record as cold, so every path that loads kernels from the cache (the first import, the
command line, ``harness.explain``) recompiles it first. Nothing here is unpickled: a record is
one line of text.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import types
from collections.abc import Iterable
from typing import Any

#: Packages whose files are part of a kernel's sources besides its own package.
_FRAMEWORK = "harness"
#: The suffix of a sources record, written beside numba's index file (``<index>.nbi``).
RECORD_SUFFIX = ".sources"
_CONSTANTS = (bool, int, float, complex, str, bytes, type(None))
#: Text hashes of source files, by (path, size, modification time).
_FILE_HASHES: dict[tuple[str, int, int], str] = {}


def _file_text_hash(path: str) -> str:
    """SHA-256 of a file's bytes, remembered while its size and time stay the same."""
    try:
        stat = os.stat(path)
    except OSError:
        return "missing"
    key = (path, stat.st_size, stat.st_mtime_ns)
    if key not in _FILE_HASHES:
        with open(path, "rb") as source:
            _FILE_HASHES[key] = hashlib.sha256(source.read()).hexdigest()
    return _FILE_HASHES[key]


def _constant_text(value: Any) -> str | None:
    """A text that changes when a constant global's value does, or None if ``value`` is no
    constant numba would freeze (a module, a function, a class)."""
    import numpy as np

    if isinstance(value, _CONSTANTS):
        return repr(value)
    if isinstance(value, tuple):
        parts = [_constant_text(item) for item in value]
        return None if None in parts else "(" + ",".join(parts) + ")"
    if isinstance(value, np.ndarray):
        data = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        return f"array({value.dtype.str},{value.shape},{data})"
    if isinstance(value, np.generic):
        return f"{value.dtype.str}:{value!r}"
    return None


def _code_names(function: types.FunctionType) -> set[str]:
    """Every global name the function's code and its nested code objects use."""
    names: set[str] = set()
    todo = [function.__code__]
    while todo:
        code = todo.pop()
        names.update(code.co_names)
        todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return names


def _defining_file(value: Any, packages: set[str]) -> str | None:
    """The source file of the module that defines ``value``, if that module belongs to
    ``packages``."""
    import sys

    module_name = value.__name__ if isinstance(value, types.ModuleType) else getattr(
        value, "__module__", None)
    if not isinstance(module_name, str) or module_name.partition(".")[0] not in packages:
        return None
    return getattr(sys.modules.get(module_name), "__file__", None)


def sources_digest(dispatcher: Any) -> str:
    """SHA-256 over what a jitted function's compiled code depends on: the files and
    constants described in the module docstring, reached from ``dispatcher.py_func``."""
    from numba.core.dispatcher import Dispatcher

    packages = {_FRAMEWORK, dispatcher.py_func.__module__.partition(".")[0]}
    files: set[str] = set()
    constants: set[str] = set()
    seen: set[int] = set()
    todo = [dispatcher.py_func]
    while todo:
        function = todo.pop()
        if id(function) in seen:
            continue
        seen.add(id(function))
        own = _defining_file(function, packages)
        files.update([own] if own else [])
        names = _code_names(function)
        cells = [cell.cell_contents for cell in function.__closure__ or ()
                 if cell.cell_contents is not None]
        reached = [(name, function.__globals__[name]) for name in sorted(names)
                   if name in function.__globals__]
        reached += [(f"closure{i}", value) for i, value in enumerate(cells)]
        for module in [value for _, value in reached if isinstance(value, types.ModuleType)
                       and value.__name__.partition(".")[0] in packages]:
            reached += [(f"{module.__name__}.{name}", getattr(module, name))
                        for name in sorted(names) if hasattr(module, name)]
        for name, value in reached:
            text = _constant_text(value)
            if text is not None:
                constants.add(f"{function.__module__}.{function.__qualname__}:{name}={text}")
                continue
            if isinstance(value, Dispatcher):
                todo.append(value.py_func)
            elif isinstance(value, types.FunctionType):
                todo.append(value)  # a plain helper numba compiles into its caller
            where = _defining_file(value, packages)
            files.update([where] if where else [])
    lines = [f"{path}:{_file_text_hash(path)}" for path in sorted(files)] + sorted(constants)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def _cache_file(dispatcher: Any) -> Any:
    """numba's index-and-data file object of a dispatcher, or None without ``cache=True``."""
    return getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)


def _entries_identity(cache_file: Any, overloads: dict) -> str:
    """Size and time of the index file and of every data file it lists."""
    names = [cache_file._index_path] + [os.path.join(cache_file._cache_path, name)
                                        for name in sorted(overloads.values())]
    parts = []
    for path in names:
        try:
            stat = os.stat(path)
            parts.append(f"{os.path.basename(path)}:{stat.st_size}:{stat.st_mtime_ns}")
        except OSError:
            parts.append(f"{os.path.basename(path)}:missing")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _record_line(dispatcher: Any, cache_file: Any, overloads: dict) -> str:
    return f"{sources_digest(dispatcher)} {_entries_identity(cache_file, overloads)}"


def _record_path(cache_file: Any) -> str:
    return cache_file._index_path + RECORD_SUFFIX


def _index(cache_file: Any) -> dict:
    """numba's index of the dispatcher's cache entries (empty when absent, obsolete, or
    unreadable)."""
    try:
        return cache_file._load_index()
    except Exception:
        return {}


def cache_state(dispatcher: Any) -> str:
    """What numba's cache holds of ``dispatcher``: ``"uncached"`` (no ``cache=True``),
    ``"empty"`` (no entry for its current source: numba compiles it), ``"stale"`` (entries
    that no matching sources record vouches for, so their code may come from other sources)
    or ``"fresh"``. numba's index is read once."""
    cache_file = _cache_file(dispatcher)
    if cache_file is None:
        return "uncached"
    overloads = _index(cache_file)
    if not overloads:
        return "empty"
    try:
        with open(_record_path(cache_file), encoding="ascii") as record:
            written = record.read().strip()
    except (OSError, ValueError):
        return "stale"
    return "fresh" if written == _record_line(dispatcher, cache_file, overloads) else "stale"


def is_stale(dispatcher: Any) -> bool:
    """:func:`cache_state` is ``"stale"``."""
    return cache_state(dispatcher) == "stale"


def forget_stale(dispatchers: Iterable[Any]) -> int:
    """Empty numba's index of every stale dispatcher (:func:`is_stale`), so that its next
    call compiles it from the current sources; returns how many were forgotten."""
    forgotten = 0
    for dispatcher in dispatchers:
        if is_stale(dispatcher):
            dispatcher._cache.flush()
            try:
                os.remove(_record_path(_cache_file(dispatcher)))
            except OSError:
                pass
            forgotten += 1
    return forgotten


def record_sources(dispatchers: Iterable[Any]) -> None:
    """Write the sources record of every dispatcher with cache entries (called by the compile
    worker right after it compiled them from the sources loaded in its process). A cache
    folder that cannot be written leaves the kernel unrecorded, hence recompiled next time."""
    for dispatcher in dispatchers:
        cache_file = _cache_file(dispatcher)
        overloads = _index(cache_file) if cache_file is not None else {}
        if not overloads:
            continue
        path = _record_path(cache_file)
        try:  # a temporary file renamed over the record: two workers never tear it
            with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(path), delete=False,
                                             encoding="ascii") as record:
                record.write(_record_line(dispatcher, cache_file, overloads) + "\n")
            os.replace(record.name, path)
        except OSError:
            pass
