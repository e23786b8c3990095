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


CHECKS_AFTER_THE_BLOCK = """
import numpy as np
np.testing.assert_allclose(imp.values.mean(axis=0),
                           harness.explain("mdi", model, ds.X).values, rtol=1e-10)
proba = model.predict_proba(ds.X)
predicted = proba[np.arange(len(proba)), proba.argmax(axis=1)]
np.testing.assert_allclose(shap.values.sum(axis=1) + shap.base_values, predicted, atol=1e-9)
assert set(df["method"]) == {"mdi", "saabas"}, set(df["method"])
"""


def test_the_readme_python_api_block_runs_as_written(tmp_path):
    # the block a reader pastes into a fresh interpreter, in a fresh folder: it runs, and what
    # it shows holds there (local MDI averages to MDI per feature on LED, Thm 1 / Eq. 9
    # without bootstrap; TreeSHAP from a report's label adds up to the predicted-class
    # probability)
    import subprocess
    import sys

    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Python API"):]
    block = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    done = subprocess.run([sys.executable, "-c", block + CHECKS_AFTER_THE_BLOCK],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
