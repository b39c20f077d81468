"""The statistics vector every displayed node carries.

A node's self and total values are plain ``list[int]`` of :data:`N_STATS` entries,
indexed by the constants of the metric table (:mod:`tfprof_lite.base.metrics`,
re-exported here for the views), so aggregation is a tight loop and no view needs
a per-field branch.
"""

from __future__ import annotations

from tfprof_lite.base.metrics import (
    ACC,
    CPU,
    DEFINITION,
    EXEC,
    FLOPS,
    METRICS,
    N_STATS,
    OUTPUT,
    PARAMS,
    PEAK,
    REQUESTED,
    RESIDUAL,
    RUN,
)
from tfprof_lite.model.int64 import INT64_MAX, INT64_MIN, wrap64

__all__ = [
    "ACC",
    "CPU",
    "DEFINITION",
    "EXEC",
    "FLOPS",
    "N_STATS",
    "ORDER_BY_STAT",
    "OUTPUT",
    "PARAMS",
    "PEAK",
    "REQUESTED",
    "RESIDUAL",
    "RUN",
    "add_into",
]

#: ``-order_by`` name -> the statistic whose total it sorts by (``name`` and
#: ``occurrence`` sort otherwise).
ORDER_BY_STAT: dict[str, int] = {m.select: m.stat for m in METRICS if m.select and m.order_by}


def add_into(total: list[int], other: list[int]) -> None:
    """``total += other`` element-wise, in place, wrapping around as tfprof's
    int64 sums do."""
    for i in range(N_STATS):
        value = total[i] + other[i]
        total[i] = value if INT64_MIN <= value <= INT64_MAX else wrap64(value)
