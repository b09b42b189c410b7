"""Sort-based unique for large integer keys.

numpy 2.x may pick a hash-based ``np.unique`` for integer arrays, which measured ~10x slower
than a plain sort on the millions of keys mining counts; this is the sort-based version.
"""

from __future__ import annotations

import numpy as np


def unique(a: np.ndarray, return_inverse: bool = False, return_counts: bool = False):
    """Like ``np.unique`` on a 1-d array (sorted result), always by sorting."""
    a = np.asarray(a).ravel()
    if return_inverse:
        order = np.argsort(a, kind="stable")
        s = a[order]
    else:
        s = np.sort(a)
    first = np.empty(len(s), dtype=bool)
    if len(s):
        first[0] = True
        np.not_equal(s[1:], s[:-1], out=first[1:])
    values = s[first]
    out = [values]
    if return_inverse:
        group = np.cumsum(first) - 1
        inverse = np.empty(len(a), dtype=np.int64)
        inverse[order] = group
        out.append(inverse)
    if return_counts:
        starts = np.flatnonzero(first)
        out.append(np.diff(np.append(starts, len(s))))
    return out[0] if len(out) == 1 else tuple(out)


def unique_first(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique values and the index of each one's first occurrence in ``a``."""
    a = np.asarray(a).ravel()
    order = np.argsort(a, kind="stable")
    s = a[order]
    first = np.empty(len(s), dtype=bool)
    if len(s):
        first[0] = True
        np.not_equal(s[1:], s[:-1], out=first[1:])
    return s[first], order[first]
