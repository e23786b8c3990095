"""``python -m harness``: see :mod:`harness.cli`."""

import sys

from harness.cli import main
from harness.core.short_lived import run_short_lived

sys.exit(run_short_lived(main))
