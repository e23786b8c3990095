"""A method whose cell blocks until the test lets it go, for tests of concurrent runners.

The cell's process writes its pid to ``$HARNESS_TEST_PIDFILE`` and waits (sleeping, as a
hung cell would) until ``$HARNESS_TEST_RELEASE`` exists. Run a grid holding it with
``python -m tests._support.blocking_method OUT`` from the repository root.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

from harness.core.method import Method
from harness.core.types import Importances


class BlocksUntilReleased(Method):
    name, scope, family = "test_blocks", "global", "test"

    def _explain(self, model, data, rng):
        pidfile = Path(os.environ["HARNESS_TEST_PIDFILE"])  # whole or absent: the test
        partial = pidfile.with_suffix(".partial")  # polls for it and reads it at once
        partial.write_text(str(os.getpid()))
        partial.replace(pidfile)
        release = Path(os.environ["HARNESS_TEST_RELEASE"])
        while not release.exists():
            time.sleep(0.05)
        return Importances(np.ones(data.X.shape[1]), "global", data.feature_names, "one", "x")


def main(out: str) -> int:
    import harness

    summary = harness.compare(datasets=["iris"], models=["extra_trees[n_estimators=3]"],
                              methods=["mdi", BlocksUntilReleased()], out=out, jobs=2,
                              timeout=600, reports=False)
    print(summary.line())
    return summary.exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
