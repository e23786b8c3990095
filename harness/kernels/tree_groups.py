"""Groups of trees that a parallel kernel explains or sums apart, then adds back in order.

With few rows the parallel tasks are groups of trees, whose costs are closer to equal than
those of single rows: 4 groups keep 2 threads balanced. The number of groups follows from the
sizes alone, never from the number of threads, so that results do not depend on it (the
groups' sums are added in the same order whatever runs them).
"""

#: Most groups of trees explained or summed apart.
TREE_GROUPS = 4
#: Bytes that the groups' extra output arrays may take together (TreeSHAP's default).
GROUP_BUDGET = 16 << 20


def tree_groups(n_trees: int, out_bytes: int, budget: int = GROUP_BUDGET) -> int:
    """Up to :data:`TREE_GROUPS` groups while their extra output arrays (``out_bytes`` each,
    one for every group but the first) fit in ``budget`` bytes."""
    return int(max(1, min(TREE_GROUPS, n_trees, 1 + budget // max(out_bytes, 1))))
