"""What produced a run's numbers: package versions, the harness's commit, CPU and threads.

Recorded in the store by the runner (``runs`` table) and shown by the report, so that a
result folder sent to a colleague still says which code on which machine made it.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
from pathlib import Path

PACKAGES = ("tree-importance-harness", "numpy", "scipy", "scikit-learn", "numba", "pandas",
            "shap", "sage-importance", "matplotlib", "seaborn", "dask", "distributed")


def package_versions() -> dict[str, str]:
    """Installed version of each package the harness uses (``"not installed"`` otherwise)."""
    found = {}
    for dist in PACKAGES:
        try:
            found[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            found[dist] = "not installed"
    return found


def harness_commit() -> str:
    """The git commit of the harness's source tree (``+dirty`` with local changes), or
    ``"unknown"`` outside a git checkout."""
    source = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "-C", str(source), "rev-parse", "--short=12", "HEAD"],
                                capture_output=True, text=True, timeout=5, check=True)
        status = subprocess.run(["git", "-C", str(source), "status", "--porcelain",
                                 "--untracked-files=no"],
                                capture_output=True, text=True, timeout=5, check=True)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit.stdout.strip() + ("+dirty" if status.stdout.strip() else "")


def cpu_model() -> str:
    """The CPU's model name (Linux ``/proc/cpuinfo``; the platform's processor otherwise)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def describe_environment() -> dict[str, object]:
    """Everything above, plus Python, the OS and the threads the kernels may use."""
    import numba

    return {
        "python": sys.version.split()[0], "platform": platform.platform(),
        "cpu": cpu_model(), "logical_cpus": os.cpu_count(),
        "numba_threads": numba.get_num_threads(), "harness_commit": harness_commit(),
        "packages": package_versions(),
    }
