"""The keyed permutations every permutation method shares: SplitMix64 and Fisher-Yates as the
module docstring states them, written here in plain Python integers as the oracle."""

from __future__ import annotations

import pytest

from harness.forest.permutations import STREAM_HELD_OUT, STREAM_OOB, keyed_permutation

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
MUL_A = 0xBF58476D1CE4E5B9
MUL_B = 0x94D049BB133111EB


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * MUL_A) & MASK
    z = ((z ^ (z >> 27)) * MUL_B) & MASK
    return z ^ (z >> 31)


def _fisher_yates(seed: int, stream: int, a: int, b: int, n: int) -> list[int]:
    """SplitMix64 seeded by a hash of the key, one step per swap, from the last position."""
    state = _mix((seed + GOLDEN) & MASK)
    state = _mix(state ^ ((stream * GOLDEN) & MASK))
    state = _mix(state ^ ((a + MUL_A) & MASK))
    state = _mix(state ^ ((b + MUL_B) & MASK))
    out = list(range(n))
    for k in range(n - 1, 0, -1):
        state = (state + GOLDEN) & MASK
        pick = int((_mix(state) >> 11) * 2.0**-53 * (k + 1))
        out[k], out[pick] = out[pick], out[k]
    return out


@pytest.mark.parametrize(("stream", "a", "b", "n"), [
    (STREAM_OOB, 0, 0, 1), (STREAM_OOB, 3, 7, 2), (STREAM_OOB, 299, 199, 368),
    (STREAM_HELD_OUT, 4, 11, 1000)])
def test_the_permutation_is_the_documented_shuffle(stream, a, b, n):
    seed = 2**62 + 12345
    ours = keyed_permutation(seed, stream, a, b, n)
    assert ours.tolist() == _fisher_yates(seed, stream, a, b, n)
    assert sorted(ours.tolist()) == list(range(n))
