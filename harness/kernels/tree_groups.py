"""Groups of trees that a parallel kernel explains or sums apart, then adds back in order.

With few rows the parallel tasks are groups of trees, whose costs are closer to equal than
those of single rows: 4 groups keep 2 threads balanced. The number of groups follows from the
sizes alone, never from the number of threads, so that results do not depend on it (the
groups' sums are added in the same order whatever runs them: :func:`sum_by_groups`).
"""

from collections.abc import Callable

import numpy as np

from harness.core.tasks import run_tasks

#: Most groups of trees explained or summed apart.
TREE_GROUPS = 4
#: Bytes that the groups' extra output arrays may take together (TreeSHAP's default).
GROUP_BUDGET = 16 << 20


def tree_groups(n_trees: int, out_bytes: int, budget: int = GROUP_BUDGET) -> int:
    """Up to :data:`TREE_GROUPS` groups while their extra output arrays (``out_bytes`` each,
    one for every group but the first) fit in ``budget`` bytes."""
    return int(max(1, min(TREE_GROUPS, n_trees, 1 + budget // max(out_bytes, 1))))


def sum_by_groups(kernel: Callable, n_tasks: int, out: np.ndarray, n_groups: int,
                  *args) -> None:
    """Run ``kernel(*args, out, others, first, last)`` over ``n_tasks`` tasks
    (:func:`harness.core.tasks.run_tasks`), where the kernel adds group 0's sums into
    ``out`` and group g's into ``others[g - 1]``, then add ``others`` into ``out`` in group
    order: each element's arithmetic is fixed by ``n_groups``, not by the threads."""
    others = np.zeros((max(n_groups - 1, 0), *out.shape))
    run_tasks(kernel, n_tasks, *args, out, others)
    for group_sums in others:
        out += group_sums
