"""Compile the methods' kernels into numba's on-disk cache, in one process per core.

numba compiles a kernel on one core, and a fresh environment has about a minute of kernels to
compile (issue 22, part 1). The compilation of different kernels is independent, so the
methods are shared among worker processes (``python -m harness.run.compile``, one per usable
core). The first worker forgets the cached kernels of other sources than today's
(:mod:`harness.run.kernel_sources`) before any worker compiles; then each runs the methods'
``prepare()`` and so writes every kernel it compiles to numba's cache (``cache=True``;
``NUMBA_CACHE_DIR`` when set, else ``__pycache__`` beside the sources, or numba's folder in
the user's cache where those cannot be written: :func:`cache_location`), with the record of
the entry kernels that method's warm-up leaves uncompiled (:func:`record_unused_entries`).
The calling process then runs ``prepare()`` itself and loads the kernels from that cache
instead of compiling them.

Two workers may write the same cache entry (a helper reached by two methods): numba writes
each index and object file to a temporary name and renames it over the old one
(``numba.core.caching._CacheFile._open_for_write``), an atomic replace on POSIX, so a reader
sees one whole file or the other, never a torn one; both hold the same code, since every kernel
takes one signature (inputs are canonicalised at the kernel boundary).

Methods whose kernels live in the same modules go to the same worker, in one task (local MDI
and Saabas share their walks: two workers would compile them twice), and the tasks go out
largest first, to whichever worker is free (longest-processing-time order), measured by the
number of compiled functions their modules hold.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from harness.core.cores import usable_cores
from harness.run import first_import
from harness.run.first_import import MODE_VARIABLE

#: Packages whose modules are searched for kernels (a plugin's own package is added).
_FRAMEWORK = "harness"
#: Modules of shared low-level helpers, left out when grouping methods by their kernels.
_SHARED = ("harness.forest", "harness.core")
#: The worker's request to forget stale kernels, before the tasks (:func:`_serve_stdin`).
_FORGET = "forget"


@dataclass
class CompileReport:
    """What the parallel compile did: per method the seconds its worker spent (wall, and the
    worker's CPU time, which a busy machine does not inflate), or its error."""

    processes: int
    seconds: float
    methods: dict[str, float] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def _target(method_class: type) -> str:
    return f"{method_class.__module__}:{method_class.__qualname__}"


def _dispatchers(method_class: type) -> set:
    """numba dispatchers of the modules that ``method_class``'s modules reach by their global
    names, within the framework and the method's own package."""
    from numba.core.registry import CPUDispatcher

    roots = {_FRAMEWORK, method_class.__module__.partition(".")[0]}
    todo = [sys.modules[c.__module__] for c in method_class.__mro__ if c.__module__ in sys.modules]
    seen: set[str] = set()
    found = set()
    while todo:
        module = todo.pop()
        if module.__name__ in seen:
            continue
        seen.add(module.__name__)
        for value in list(vars(module).values()):
            if isinstance(value, CPUDispatcher):
                found.add(value)
            reached = (value if isinstance(value, types.ModuleType)
                       else sys.modules.get(getattr(value, "__module__", None) or ""))
            if (reached is not None and reached.__name__.partition(".")[0] in roots
                    and reached.__name__ not in seen):
                todo.append(reached)
    return found


def _own_dispatchers(method_class: type) -> set:
    """The dispatchers of :func:`_dispatchers` outside the shared low-level modules, without
    those inlined into their callers (``inline="always"``: never compiled on their own)."""
    return {d for d in _dispatchers(method_class)
            if not d.py_func.__module__.startswith(_SHARED)
            and d.targetoptions.get("inline", "never") != "always"}


def compile_tasks(method_classes: Iterable[type]) -> list[list[type]]:
    """Methods grouped by the kernel modules they reach, largest group first."""
    groups: dict[frozenset, list[type]] = {}
    weights: dict[frozenset, int] = {}
    for method_class in sorted(method_classes, key=_target):
        own = _own_dispatchers(method_class)
        key = frozenset(d.py_func.__module__ for d in own)
        groups.setdefault(key, []).append(method_class)
        weights[key] = len(own)
    order = sorted(groups, key=lambda key: (-weights[key], _target(groups[key][0])))
    return [groups[key] for key in order]


def cache_location() -> str:
    """Where numba writes the kernels' cache, as the progress lines name it:
    ``NUMBA_CACHE_DIR`` when set, else ``__pycache__`` beside the sources, or, for a user who
    cannot write there (a package installed by another user), the folder numba falls back
    to in the user's own cache (numba's ``UserWideCacheLocator``), read from a kernel's
    cache."""
    import numba

    if numba.config.CACHE_DIR:
        return numba.config.CACHE_DIR
    from harness.forest.packed import leaf_of

    # numba's own record of its choice (private: a numba without it gets the usual words,
    # since a progress line must never fail the compile it reports)
    folder = getattr(getattr(leaf_of, "_cache", None), "_cache_path", None)
    beside = os.path.join(os.path.dirname(leaf_of.py_func.__code__.co_filename), "__pycache__")
    if not isinstance(folder, str) or (os.path.normcase(os.path.abspath(folder))
                                       == os.path.normcase(os.path.abspath(beside))):
        return "__pycache__ beside the sources (NUMBA_CACHE_DIR unset)"
    return (f"{os.path.dirname(folder)} (NUMBA_CACHE_DIR unset, and this user cannot write "
            "the __pycache__ beside the sources)")


def _entry_dispatchers(method_class: type) -> set:
    """The dispatchers of :func:`_own_dispatchers` that no dispatcher the method reaches
    calls by name, an inlined one included (``_mask_chunks``, called by the inlined
    ``_probe`` of tree SAGE's walks, is no entry): a callee's code is linked into its
    caller's cache entry, so a fresh process that loads the caller never compiles the callee,
    and the callee's own index may stay out of date."""
    own = _own_dispatchers(method_class)
    called: set[str] = set()
    for dispatcher in _dispatchers(method_class):  # inlined ones call too
        todo = [dispatcher.py_func.__code__]
        while todo:
            code = todo.pop()
            called.update(code.co_names)
            todo.extend(c for c in code.co_consts if hasattr(c, "co_names"))
    return {d for d in own if d.py_func.__name__ not in called}


def _kernel_name(dispatcher) -> str:
    return f"{dispatcher.py_func.__module__}.{dispatcher.py_func.__qualname__}"


def _unused_path(method_class: type) -> str:
    """The file in which a compile records the entry kernels that ``method_class``'s
    ``prepare()`` left uncompiled (:func:`record_unused_entries`)."""
    name = hashlib.sha256(_target(method_class).encode()).hexdigest()[:20]
    return os.path.join(first_import.stamp_folder(), "harness-kernels-unused", f"{name}.json")


def _unused_key(method_class: type) -> str:
    """What the record of :func:`_unused_path` holds for: every built-in kernel source
    (:func:`harness.run.first_import._fingerprint`) and the files of the method's classes
    (a plugin's own module), by path, size and modification time."""
    parts = [first_import._fingerprint()]
    for cls in method_class.__mro__:
        path = getattr(sys.modules.get(cls.__module__), "__file__", None)
        if path and os.path.isfile(path):
            stat = os.stat(path)
            parts.append(f"{path}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def record_unused_entries(method_class: type) -> None:
    """Record, after ``method_class.prepare()`` ran in this process, the entry kernels its
    modules reach that numba's cache still lacks: its warm-up does not call them, so a
    compile can never fill them for it.

    The reach of :func:`_dispatchers` goes by modules, and a module serves more than one
    method: LOCO's base class lives beside the OOB methods' and so reaches their
    permutation pass, which LOCO never calls. Without this record, a cache filled by
    compiling such a method alone stayed cold for it for good, and each later process sent
    its first call to a compile worker that had nothing to do (LOCO: 2.3 s of a 4.8 s first
    call). A JSON file, written atomically; one that cannot be written only costs that
    worker."""
    from harness.run.kernel_sources import cache_state

    unused = sorted(_kernel_name(d) for d in _entry_dispatchers(method_class)
                    if cache_state(d) == "empty")
    path = _unused_path(method_class)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(path), delete=False,
                                         encoding="utf-8") as record:
            json.dump({"method": _target(method_class), "key": _unused_key(method_class),
                       "unused": unused}, record)
        os.replace(record.name, path)
    except OSError:
        pass


def _unused_entries(method_class: type) -> set[str]:
    """The kernels :func:`record_unused_entries` recorded for ``method_class``, if the record
    is for today's sources (else none: every entry must then be in the cache)."""
    try:
        with open(_unused_path(method_class), encoding="utf-8") as file:
            record = json.load(file)
        if record.get("key") == _unused_key(method_class):
            return {name for name in record.get("unused", []) if isinstance(name, str)}
    except (OSError, ValueError, AttributeError):
        pass
    return set()


def cache_is_warm(method_classes: Iterable[type]) -> bool:
    """True when every kernel entry point of the methods' own kernel modules
    (:func:`_entry_dispatchers`; the shared helpers of ``harness.forest`` are compiled with
    them) has an entry in numba's cache index for its current source (numba's own test: the
    index records a SHA-256 of the source file, and the index of another source is
    discarded, numba 0.68 ``_hash_source_file``), unless the method's own compile for these
    sources left it uncompiled (:func:`record_unused_entries`), and no kernel the methods
    reach holds code of other sources than today's: numba does not see an edited callee in
    another file (:mod:`harness.run.kernel_sources`)."""
    from harness.run.kernel_sources import cache_state

    for method_class in method_classes:
        entries = _entry_dispatchers(method_class)
        unused = None
        for dispatcher in _dispatchers(method_class):
            state = cache_state(dispatcher)  # an unreadable index counts as empty
            if state == "stale":
                return False
            if state == "empty" and dispatcher in entries:
                unused = _unused_entries(method_class) if unused is None else unused
                if _kernel_name(dispatcher) not in unused:
                    return False
    return True


#: Method classes whose kernels this process has made sure of (:func:`prepare_from_cache`).
_PREPARED: set[type] = set()
_PREPARED_LOCK = threading.Lock()


def prepare_from_cache(method_class: type) -> None:
    """``method_class.prepare()``, with its kernels loaded from numba's on-disk cache: when the
    cache lacks any of them, they are first compiled in a worker process
    (:func:`compile_in_processes`), once per process and class.

    Why not compile them here: a kernel that calls another runs the callee's own copy when
    both were compiled in this process, optimised once, and the copy linked into the caller
    when the caller was loaded from the cache, optimised a second time with it (numba links
    callees as ``linkonce_odr``; the JIT binds the call to a definition it already holds).
    The two are the same source and give the same bits, but not the same speed:
    path-dependent TreeSHAP ran 1.8x slower on Friedman #1 / RF 300 from the in-process
    copy. Loading from the cache gives every process the same machine code. A class the
    worker cannot import (defined in ``__main__``), or a cache numba cannot write, falls
    back to compiling here.
    """
    with _PREPARED_LOCK:
        if method_class not in _PREPARED:
            if method_class.__module__ != "__main__" and not cache_is_warm([method_class]):
                compile_in_processes([method_class], processes=1)
            _PREPARED.add(method_class)
    method_class.prepare()


def _read_answer(worker: subprocess.Popen) -> str:
    """The worker's next answer (a JSON object on one line), or "" once it has exited; other
    lines on its stdout are skipped (numba prints there under ``NUMBA_DEBUG_CACHE``, which
    made the answer unreadable and the compile thread fail)."""
    while True:
        line = worker.stdout.readline()
        if not line or line.startswith("{"):
            return line


def compile_in_processes(method_classes: Iterable[type], processes: int | None = None,
                         on_progress: Callable[[int, int, str], None] | None = None,
                         env: dict[str, str] | None = None) -> CompileReport:
    """Run every method's ``prepare()`` in ``processes`` worker processes (default: one per
    usable core, at most one per task), filling numba's on-disk cache.

    Parameters
    ----------
    method_classes : iterable of Method subclasses
        Importable by module and qualified name (a worker imports them).
    processes : int, optional
    on_progress : callable(done, total, name), optional
        Called after each method, from the thread that reads its worker.
    env : dict, optional
        Environment of the workers (default: this process's; ``NUMBA_CACHE_DIR`` there
        chooses the cache).

    Returns
    -------
    CompileReport
        Seconds per method (its worker's wall time for its ``prepare()``) or its error.
    """
    start = time.perf_counter()
    classes = list(method_classes)
    tasks = compile_tasks(classes)
    processes = min(processes or usable_cores(), max(1, len(tasks)))
    report = CompileReport(processes=processes, seconds=0.0)
    lock = threading.Lock()
    queue = list(reversed(tasks))  # pop() from the end: largest first
    total, done = len(classes), [0]
    # lazy: a worker's own ``import harness`` must not start a compile of its own
    worker_env = {**(os.environ if env is None else env), "NUMBA_NUM_THREADS": "1",
                  MODE_VARIABLE: "lazy"}

    forgotten = threading.Event()

    def forget(worker: subprocess.Popen) -> None:
        """The first worker forgets the stale kernels of every method, before any compiles."""
        try:
            worker.stdin.write(_FORGET + " " + " ".join(_target(c) for c in classes) + "\n")
            worker.stdin.flush()
            _read_answer(worker)
        except OSError:
            pass  # a dead worker: its tasks report it; stale kernels stay stale, not fresh
        finally:
            forgotten.set()

    def serve(first: bool) -> None:
        try:
            worker = subprocess.Popen([sys.executable, "-m", "harness.run.compile"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, text=True, env=worker_env)
        except OSError:
            if first:  # no forget step: the other workers must not wait for it
                forgotten.set()
            raise
        try:
            if first:
                forget(worker)
            forgotten.wait()
            while True:
                with lock:
                    if not queue:
                        break
                    task = queue.pop()
                alive = True
                for method_class in task:
                    name = getattr(method_class, "name", method_class.__qualname__)
                    line = ""
                    if alive:
                        try:
                            worker.stdin.write(_target(method_class) + "\n")
                            worker.stdin.flush()
                            line = _read_answer(worker)
                        except OSError:
                            line = ""
                    alive = bool(line)
                    answer = (json.loads(line) if line
                              else {"error": f"the compile worker died (exit {worker.poll()})"})
                    with lock:
                        if answer.get("error"):
                            report.errors[name] = answer["error"]
                        else:
                            report.methods[name] = answer["seconds"]
                            report.cpu[name] = answer["cpu"]
                        done[0] += 1
                        if on_progress is not None:
                            on_progress(done[0], total, name)
                if not alive:
                    return
        finally:
            try:
                worker.stdin.close()
            except OSError:
                pass
            worker.wait()

    if on_progress is not None:
        on_progress(0, total, "")
    threads = [threading.Thread(target=serve, args=(index == 0,), daemon=True)
               for index in range(processes)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    report.seconds = time.perf_counter() - start
    return report


#: Python frame slots of the worker's host frame (8 bytes each): see :func:`_with_stack_room`.
_STACK_ROOM_SLOTS = 70_000


def _with_stack_room(function: Callable[[], None]) -> None:
    """Call ``function`` from a frame so large that CPython gives it a data-stack chunk of its
    own, with about half a megabyte free after it for the frames of the calls below.

    CPython (3.11 and later) keeps the frames of Python calls in 16 KiB chunks, allocates
    a chunk with ``mmap`` when a call does not fit in the current one, and unmaps it when
    that call returns (``_PyThreadState_PopFrame``). numba's compiler calls and returns
    thousands of times a second at whatever depth a chunk happens to end, and so maps and
    unmaps a chunk each time: measured on TreeSHAP's kernels, 0.8 million ``mmap`` calls and
    2-5 s of system time per 13 s compile, by the stack depth the worker started at. A chunk
    is sized to the power-of-two multiple of 16 KiB that holds the frame asking for it, so a
    frame of 70 000 slots (560 KB) gets a 1 MiB chunk, and the compile's frames (a few
    hundred bytes each, a few hundred deep) fit in what it leaves free: 0.6 s of system
    time, whatever the starting depth. The slots are unused locals, never set.
    """
    def host(call: Callable[[], None]) -> None:
        call()

    code = host.__code__
    names = tuple(f"_unused_{index}" for index in range(_STACK_ROOM_SLOTS))
    try:
        host.__code__ = code.replace(co_varnames=code.co_varnames + names,
                                     co_nlocals=code.co_nlocals + len(names))
    except (TypeError, ValueError):  # an interpreter whose code objects take no such change
        pass  # the same call, only slower where chunks churn
    host(function)


def _forget_stale_of(targets: list[str]) -> int:
    """Forget the stale cached kernels (:func:`harness.run.kernel_sources.forget_stale`) of
    every method of ``targets`` that imports (one that does not reports it in its task)."""
    from harness.core.registry import import_object
    from harness.run.kernel_sources import forget_stale

    dispatchers: set = set()
    for target in targets:
        try:
            dispatchers |= _dispatchers(import_object(target))
        except Exception:
            continue
    return forget_stale(dispatchers)


def _serve_stdin() -> None:
    """Worker: read one ``module:qualname`` per line, run that class's ``prepare()`` and
    record the sources of the kernels it reaches (:mod:`harness.run.kernel_sources`) and the
    entries it left uncompiled (:func:`record_unused_entries`), answer
    one JSON line (``seconds`` or ``error``). A line ``forget <target> ...`` forgets the
    stale kernels of those methods and answers ``forgotten``.

    Forgetting is one step before every compile of a run (:func:`compile_in_processes`),
    never part of a task: between a worker's compile of a shared helper and its record of
    that helper's sources, the helper's entries have no record, so a sibling that forgot
    stale kernels at the start of its own next task would empty them, and the record that
    followed found nothing to vouch for; the next process found the cache cold and compiled
    in a worker again (``tests/run/test_kernel_sources.py`` orders such a race; it is one
    way to the tree SAGE first call of 3.95 s, where 0.75 s is usual, that ``bench --cold``
    measured once and nine attempts did not reproduce).
    """
    from harness.core.registry import import_object
    from harness.run.kernel_sources import record_sources

    for line in sys.stdin:
        start, cpu = time.perf_counter(), time.process_time()
        if line.startswith(_FORGET + " "):
            answer = {"forgotten": _forget_stale_of(line.split()[1:])}
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
            continue
        try:
            method_class = import_object(line.strip())
            dispatchers = _dispatchers(method_class)
            method_class.prepare()
            record_sources(dispatchers)
            record_unused_entries(method_class)
            answer = {"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu}
        except Exception as exc:  # the parent's own prepare() reports it again, in context
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    from harness.core.short_lived import run_short_lived

    run_short_lived(lambda: _with_stack_room(_serve_stdin))
