"""The asv suites must stay importable and well-formed (``asv check``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("asv") is None, reason="asv is not installed")
def test_asv_check_passes():
    result = subprocess.run(["asv", "check", "--python=same"], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No problems found" in result.stdout
