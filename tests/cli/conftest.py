"""Fixtures of the command-line tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def work(tmp_path, monkeypatch):
    """An empty current folder (rows check what a command left in it)."""
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder
