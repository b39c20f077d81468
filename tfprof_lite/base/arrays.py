"""NumPy column types, their empty columns and the distinct values of a column in
the order they first appear.

The typed columns of the step records, memory records, step statistics, the
event window and the report's trace layout are one-dimensional arrays of these
types; a dataclass of columns starts each one empty (``field(default_factory=
empty_i64)``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["I32", "I64", "U64", "empty_i32", "empty_i64", "empty_u64", "first_seen"]

#: A column of 32-bit ids or codes.
I32 = npt.NDArray[np.int32]
#: A column of 64-bit times, sizes or indexes.
I64 = npt.NDArray[np.int64]
#: A column of unsigned 64-bit values (allocator ids, pointers).
U64 = npt.NDArray[np.uint64]


def empty_i32() -> I32:
    """A new empty int32 column."""
    return np.zeros(0, dtype=np.int32)


def empty_i64() -> I64:
    """A new empty int64 column."""
    return np.zeros(0, dtype=np.int64)


def empty_u64() -> U64:
    """A new empty uint64 column."""
    return np.zeros(0, dtype=np.uint64)


def first_seen(keys: I64) -> tuple[I64, I64, I64]:
    """The distinct ``keys`` in the order they first appear, where each first
    appears, and each key's rank in that order."""
    uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[order] = np.arange(len(uniq), dtype=np.int64)
    return uniq[order], first[order], rank[inverse.reshape(-1)]
