"""tfprof's int64 arithmetic: two's-complement wrap-around and its averages.

tfprof keeps every counter (bytes, microseconds, FLOPs) in a C++ ``int64_t`` and
adds without overflow checks, so sums of extreme RunMetadata values wrap around
modulo 2**64. Its per-step averages (``-step -1``) divide that signed sum by the
number of steps held in a ``size_t``: the division is unsigned, i.e. a negative
sum is read as its two's-complement bit pattern. These helpers reproduce both, so
any value ``add_step`` accepts yields TensorFlow's numbers and fits the int64
fields of the messages we write.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["INT64_MAX", "INT64_MIN", "unsigned_mean", "wrap64"]

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

IntArray = npt.NDArray[np.int64]


def wrap64(value: int) -> int:
    """``value`` reduced to a signed 64-bit integer (two's-complement wrap-around)."""
    if INT64_MIN <= value <= INT64_MAX:
        return value
    return (value - INT64_MIN) % 2**64 + INT64_MIN


def unsigned_mean(total: IntArray, count: IntArray) -> IntArray:
    """``total / count`` as tfprof computes its step averages; 0 where ``count`` is 0.

    ``total`` (int64) is divided as an unsigned 64-bit number by the (positive)
    ``count`` and the quotient read back as int64: ``-2 / 2`` is ``2**63 - 1``.
    """
    safe = np.where(count > 0, count, 1).astype(np.uint64)
    quot = (total.astype(np.int64).view(np.uint64) // safe).view(np.int64)
    out: IntArray = np.where(count > 0, quot, 0).astype(np.int64)
    return out
