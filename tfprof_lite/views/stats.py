"""The statistics vector every displayed node carries.

A node's self and total values are plain ``list[int]`` of :data:`N_STATS` entries,
indexed by the constants below, so aggregation is a tight loop and no view needs
a per-field branch.
"""

from __future__ import annotations

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

DEFINITION = 0
RUN = 1
EXEC = 2
ACC = 3
CPU = 4
REQUESTED = 5
PEAK = 6
RESIDUAL = 7
OUTPUT = 8
PARAMS = 9
FLOPS = 10
N_STATS = 11

ORDER_BY_STAT: dict[str, int] = {
    "bytes": REQUESTED,
    "peak_bytes": PEAK,
    "residual_bytes": RESIDUAL,
    "output_bytes": OUTPUT,
    "micros": EXEC,
    "accelerator_micros": ACC,
    "cpu_micros": CPU,
    "params": PARAMS,
    "float_ops": FLOPS,
}


def add_into(total: list[int], other: list[int]) -> None:
    """``total += other`` element-wise, in place, wrapping around as tfprof's
    int64 sums do."""
    for i in range(N_STATS):
        value = total[i] + other[i]
        total[i] = value if INT64_MIN <= value <= INT64_MAX else wrap64(value)
