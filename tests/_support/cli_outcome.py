"""What a ``compare`` run printed on stderr, checked the same way by every CLI table test."""

from __future__ import annotations

import re


def check_stderr(err: str, code: int, words: list[str]) -> None:
    """Every word appears; a refusal (exit 2) is one line, from argparse or from us."""
    for word in words:
        assert word in err, (word, err)
    if code == 2:
        assert len(err.strip().splitlines()) == 1, err
        assert re.match(r"harness( compare)?: error: ", err), err  # ours, or argparse's
