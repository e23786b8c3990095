"""The README gives a new user exactly two commands, and CI runs the second one as written."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _two_commands_section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("## Two commands")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def test_the_readme_has_exactly_two_commands_and_ci_runs_the_test_one():
    blocks = re.findall(r"```bash\n(.*?)```", _two_commands_section(), flags=re.S)
    assert len(blocks) == 2, blocks
    setup, tests = (block.strip() for block in blocks)
    assert setup.endswith("python -m harness compare")
    install, run = (part.strip() for part in tests.split("&&"))
    ci = (ROOT / ".ci" / "run").read_text()
    ci_install = re.search(r"^python -m pip install --quiet (-e \S+)$", ci, flags=re.M)
    assert ci_install is not None, "no project install line in .ci/run"
    assert install == f"python -m pip install {ci_install.group(1)}"
    assert re.search(rf"^{re.escape(run)}$", ci, flags=re.M), f"{run!r} is not run by .ci/run"
