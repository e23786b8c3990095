"""The first ``import harness`` compiles the kernels numba's cache lacks, once, with a progress
line (harness.run.first_import); never in lazy mode, from the command line or twice at once."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.core.errors import InvalidParameterError
from harness.run import compile as compile_step
from harness.run import first_import
from harness.run.compile import CompileReport
from harness.run.first_import import compile_at_first_import, compile_mode
from tests._support.tiny_kernel_method import BrokenPrepare, TinyKernel, TinyKernelTwin

ROOT = Path(__file__).resolve().parents[2]


class FakeCompile:
    """Stands in for ``compile_in_processes``: records its calls, marks their classes warm."""

    def __init__(self, warm: set, seconds: float = 0.0, errors: dict | None = None) -> None:
        self.warm, self.seconds, self.errors, self.calls = warm, seconds, errors or {}, []

    def __call__(self, classes, on_progress=None):
        self.calls.append([cls.name for cls in classes])
        time.sleep(self.seconds)
        for done, cls in enumerate(classes, 1):
            self.warm.add(cls)
            if on_progress is not None:
                on_progress(done, len(classes), cls.name)
        return CompileReport(processes=1, seconds=self.seconds, errors=dict(self.errors))


@pytest.fixture
def cache(monkeypatch, tmp_path):
    """A pretend cache: the set of warm classes, read by ``cache_is_warm``; the default mode;
    not the command line; a lock file of this test's own."""
    warm: set = set()
    monkeypatch.setattr(compile_step, "cache_is_warm", lambda classes: set(classes) <= warm)
    monkeypatch.delenv("HARNESS_COMPILE", raising=False)
    monkeypatch.setattr(sys, "argv", ["script.py"])
    monkeypatch.setattr(first_import, "_lock_path", lambda: str(tmp_path / "compile.lock"))
    monkeypatch.setattr(first_import, "_stamp_path", lambda: str(tmp_path / "stamp.txt"))
    return warm


def test_the_cold_methods_are_compiled_once_with_a_progress_line(cache):
    fake, stream = FakeCompile(cache), io.StringIO()
    cache.add(TinyKernelTwin)
    assert compile_at_first_import([TinyKernel, TinyKernelTwin], stream, fake) == ["tiny_kernel"]
    assert fake.calls == [["tiny_kernel"]]  # the warm one is not compiled again
    assert compile_at_first_import([TinyKernel, TinyKernelTwin], stream, fake) == []
    assert fake.calls == [["tiny_kernel"]]
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("harness: compiling the kernels of 1 method, once for this "
                               "environment, into numba's cache: ")
    assert lines[-1].startswith("harness: done in ")


def test_a_matching_stamp_skips_numba_and_a_changed_source_checks_the_cache(cache, monkeypatch):
    """After a complete compile the stamp answers alone (numba's cache is not consulted); a
    fingerprint that changed (a source edited) consults it again and compiles what it lacks."""
    fake, fingerprint = FakeCompile(cache), ["sources as they were"]
    monkeypatch.setattr(first_import, "_fingerprint", lambda: fingerprint[0])
    assert compile_at_first_import([TinyKernel], io.StringIO(), fake) == ["tiny_kernel"]

    def no_cache_check(classes):
        raise AssertionError("numba's cache consulted despite a matching stamp")

    monkeypatch.setattr(compile_step, "cache_is_warm", no_cache_check)
    assert compile_at_first_import([TinyKernel], io.StringIO(), fake) == []
    cache.clear()  # the edited source's kernel is not in numba's cache
    monkeypatch.setattr(compile_step, "cache_is_warm", lambda classes: set(classes) <= cache)
    fingerprint[0] = "a source edited"
    assert compile_at_first_import([TinyKernel], io.StringIO(), fake) == ["tiny_kernel"]
    assert fake.calls == [["tiny_kernel"], ["tiny_kernel"]]


def test_a_failed_compile_leaves_no_stamp(cache):
    fake = FakeCompile(cache, errors={"broken_prepare": "RuntimeError: no compiler today"})
    with pytest.warns(UserWarning):
        compile_at_first_import([BrokenPrepare], io.StringIO(), fake)
    assert first_import._read_stamp() == ""


def test_the_fingerprint_follows_every_kernel_source(monkeypatch, tmp_path):
    """A source added, or one's size or time changed, under the kernel roots changes it."""
    (tmp_path / "kernels").mkdir()
    source = tmp_path / "kernels" / "walk.py"
    source.write_text("x = 1\n")
    monkeypatch.setattr(first_import, "_kernel_roots", lambda: [str(tmp_path)])
    before = first_import._fingerprint()
    assert first_import._fingerprint() == before
    source.write_text("x = 22\n")
    assert first_import._fingerprint() != before
    after_edit = first_import._fingerprint()
    (tmp_path / "kernels" / "other.py").write_text("")
    assert first_import._fingerprint() != after_edit


def test_lazy_mode_and_the_command_line_compile_nothing_at_import(cache, monkeypatch):
    fake = FakeCompile(cache)
    monkeypatch.setenv("HARNESS_COMPILE", "lazy")
    assert compile_at_first_import([TinyKernel], io.StringIO(), fake) == []
    monkeypatch.setenv("HARNESS_COMPILE", "import")
    monkeypatch.setattr(sys, "argv", ["-m"])  # python -m harness ..., locating its module
    assert compile_at_first_import([TinyKernel], io.StringIO(), fake) == []
    assert fake.calls == []


def test_an_unknown_mode_is_refused_naming_the_allowed_ones(monkeypatch):
    monkeypatch.setenv("HARNESS_COMPILE", "eager")
    with pytest.raises(InvalidParameterError, match="must be one of import, lazy; got 'eager'"):
        compile_mode()


def test_two_processes_importing_at_once_compile_once(cache):
    """The second waits on the lock, then finds the cache warm (threads stand in for the
    processes: the file lock is held per thread)."""
    fake = FakeCompile(cache, seconds=0.3)
    results = [None, None]

    def run(i):
        results[i] = compile_at_first_import([TinyKernel], io.StringIO(), fake)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert fake.calls == [["tiny_kernel"]]
    assert sorted(results, key=len) == [[], ["tiny_kernel"]]


def test_a_failed_compile_warns_and_never_fails_the_import(cache):
    fake = FakeCompile(cache, errors={"broken_prepare": "RuntimeError: no compiler today"})
    with pytest.warns(UserWarning, match=r"broken_prepare \(RuntimeError: no compiler today\)"):
        assert compile_at_first_import([BrokenPrepare], io.StringIO(), fake) == [
            "broken_prepare"]


def test_a_fresh_cache_is_filled_by_worker_processes_that_compile_nothing_else(tmp_path):
    """End to end on an empty cache: the import-time step compiles the tiny kernel in a
    worker, a second call finds it warm, and the worker's own ``import harness`` compiled no
    built-in kernel into that cache (its environment says lazy)."""
    cache = tmp_path / "numba"
    code = """
import io, json, os
import harness  # lazy here: the test's own step comes next, on one tiny method
from harness.run.compile import cache_is_warm
from harness.run.first_import import compile_at_first_import
from tests._support.tiny_kernel_method import TinyKernel
os.environ["HARNESS_COMPILE"] = "import"
first = compile_at_first_import([TinyKernel], io.StringIO())
second = compile_at_first_import([TinyKernel], io.StringIO())
print(json.dumps([first, second, cache_is_warm([TinyKernel])]))
"""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "HARNESS_COMPILE": "lazy",
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [["tiny_kernel"], [], True]
    written = {path.name.split(".")[0] for path in cache.rglob("*.nbi")}
    assert written and all(name.startswith("tiny_kernel_method") for name in written), written


def test_a_lock_that_cannot_be_taken_warns_and_never_fails_the_import(cache, monkeypatch,
                                                                     tmp_path):
    fake = FakeCompile(cache)
    (tmp_path / "a file").write_text("")  # a lock "inside" a file: it cannot be created
    monkeypatch.setattr(first_import, "_lock_path",
                        lambda: str(tmp_path / "a file" / "compile.lock"))
    with pytest.warns(UserWarning, match="every method"):
        compile_at_first_import([TinyKernel], io.StringIO(), fake)
    assert fake.calls == []


def test_each_user_takes_a_lock_file_of_their_own(monkeypatch):
    """Another user's lock file in the shared temporary folder is not writable by this one:
    sharing it made every import of a second user on the machine warn and leave each method
    to compile at its first call."""
    import numba

    monkeypatch.setattr(numba.config, "CACHE_DIR", "")
    monkeypatch.setattr(first_import, "_user", lambda: "1000")
    first = first_import._lock_path()
    assert first_import._lock_path() == first  # one per user and cache location
    monkeypatch.setattr(first_import, "_user", lambda: "1001")
    assert first_import._lock_path() != first
    monkeypatch.setattr(first_import, "_user", lambda: "1000")
    monkeypatch.setattr(numba.config, "CACHE_DIR", "/elsewhere")
    assert first_import._lock_path() != first


def test_a_user_who_cannot_write_the_package_keeps_the_stamp_in_their_own_cache(
        monkeypatch, tmp_path):
    """A package installed by another user: numba caches this user's kernels in the user's
    own folder, and the stamp and the records go to the user's cache too (else every import
    checked numba's cache again)."""
    warm: set = set()
    monkeypatch.setattr(compile_step, "cache_is_warm", lambda classes: set(classes) <= warm)
    monkeypatch.delenv("HARNESS_COMPILE", raising=False)
    monkeypatch.setattr(sys, "argv", ["script.py"])
    monkeypatch.setattr(first_import, "_lock_path", lambda: str(tmp_path / "compile.lock"))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    assert first_import.stamp_folder() == os.path.join(first_import._PACKAGE_DIR, "__pycache__")
    monkeypatch.setattr(first_import, "_writable", lambda folder: False)
    folder = Path(first_import.stamp_folder())
    assert folder.parent == tmp_path / "user-cache" / "harness"
    fake = FakeCompile(warm)
    assert compile_at_first_import([TinyKernel], io.StringIO(), fake) == ["tiny_kernel"]
    assert (folder / "harness-kernels-compiled.txt").read_text() == first_import._fingerprint()

    def no_cache_check(classes):
        raise AssertionError("numba's cache consulted despite the stamp in the user's cache")

    monkeypatch.setattr(compile_step, "cache_is_warm", no_cache_check)
    assert compile_at_first_import([TinyKernel], io.StringIO(), fake) == []
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))  # set: always that
    assert first_import.stamp_folder() == str(tmp_path / "numba")


def test_the_progress_line_names_the_folder_numba_falls_back_to(monkeypatch, tmp_path):
    """For a user who cannot write the sources' __pycache__, numba caches in the user's own
    folder: the progress line names that folder, not the sources'."""
    import numba

    from harness.forest.packed import leaf_of

    monkeypatch.setattr(numba.config, "CACHE_DIR", "")
    beside = "__pycache__ beside the sources (NUMBA_CACHE_DIR unset)"
    assert compile_step.cache_location() == beside
    fallback = tmp_path / ".cache" / "numba"
    monkeypatch.setattr(leaf_of._cache, "_cache_path", str(fallback / "forest_0123abcd"))
    assert compile_step.cache_location().startswith(
        f"{fallback} (NUMBA_CACHE_DIR unset, and this user cannot write the __pycache__")
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "set"))
    assert compile_step.cache_location() == str(tmp_path / "set")
