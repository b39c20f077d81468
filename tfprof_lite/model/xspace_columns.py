"""The memory columns of an XSpace step's :class:`StepColumns` (see
:mod:`tfprof_lite.model.xspace_memory`)."""

from __future__ import annotations

import numpy as np

from tfprof_lite.model.xspace_memory import MemoryRecord
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto.steps import StepColumns

__all__ = ["add_memory_columns"]


def _micros(origin_ns: int, ps: int) -> int:
    return (origin_ns * 1000 + ps) // 1_000_000


def add_memory_columns(
    cols: StepColumns, memory: list[tuple[int, MemoryRecord]], origin_ns: int
) -> None:
    """Fill ``cols``' memory columns for the rows in ``memory`` (row, record), as
    a RunMetadata's NodeExecStats with one ``AllocatorMemoryUsed`` would."""
    raw: list[bytes] = []
    a_row: list[int] = []
    a_micros: list[int] = []
    a_bytes: list[int] = []
    for row, record in memory:
        total, peak, live = record.sums()
        gpu = "GPU" in record.allocator
        used = pb.AllocatorMemoryUsed(
            allocator_name=record.allocator,
            total_bytes=total,
            peak_bytes=peak,
            live_bytes=live,
            allocator_bytes_in_use=record.in_use,
        )
        for ps, delta in record.records:
            micros = _micros(origin_ns, ps)
            used.allocation_records.add(alloc_micros=micros, alloc_bytes=delta)
            if gpu:
                a_row.append(row)
                a_micros.append(micros)
                a_bytes.append(delta)
        stats = pb.NodeExecStats(
            node_name=cols.name[row], all_start_micros=int(cols.start[row]), memory=[used]
        )
        raw.append(stats.SerializeToString())
        cols.total[row], cols.peak[row], cols.live[row] = total, peak, live
        cols.gpu_allocs[row] = 1 if gpu else 0
        cols.gpu_in_use[row] = max(record.in_use, 0) if gpu else 0
    cols.r_row = np.asarray([row for row, _ in memory], dtype=np.int32)
    cols.raw = raw
    cols.a_row = np.asarray(a_row, dtype=np.int32)
    cols.a_micros = np.asarray(a_micros, dtype=np.int64)
    cols.a_bytes = np.asarray(a_bytes, dtype=np.int64)
