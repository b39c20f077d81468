"""Allocator events of an XSpace as RunMetadata memory records.

The profilers write each allocation and free of a BFC allocator as a host event
``MemoryAllocation`` / ``MemoryDeallocation`` with stats ``allocator_name``,
``allocation_bytes`` (else ``requested_bytes``), ``bytes_allocated`` (the
allocator's bytes in use after it) and, in TensorFlow, ``tf_op``. Per step,
:func:`memory_records` groups them by allocator and op into what a FULL_TRACE
RunMetadata holds for an op (``AllocatorMemoryUsed`` with its
``allocation_records``), for a node named ``memory/<allocator>/<op>`` (the op is
``(no op)`` where the event names none, as in JAX): the memory profile then
gives each allocator's timeline, its peak and what is live at the peak.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tfprof_lite.model.xspace_events import EventTable
from tfprof_lite.model.xspace_steps import step_of
from tfprof_lite.proto.xplane import XSpaceColumns

__all__ = ["MEMORY_EVENTS", "MemoryRecord", "memory_records"]

MEMORY_EVENTS = {"MemoryAllocation": 1, "MemoryDeallocation": -1}
#: The stats of an allocator event that :func:`memory_records` reads.
_READ = ("allocator_name", "allocation_bytes", "requested_bytes", "tf_op", "bytes_allocated")


@dataclass
class MemoryRecord:
    """One node's allocator use in one step: ``(time ps, signed bytes)`` records
    and the most bytes the allocator reported in use after one of them."""

    node: str
    allocator: str
    records: list[tuple[int, int]] = field(default_factory=list)
    in_use: int = 0

    def sums(self) -> tuple[int, int, int]:
        """``(total, peak, live)`` bytes: allocated, highest held, held at the end."""
        total = held = peak = 0
        for _, delta in self.records:
            total += max(delta, 0)
            held += delta
            peak = max(peak, held)
        return total, peak, max(held, 0)


def _read_stats(cols: XSpaceColumns, events: list[int]) -> dict[int, dict[str, Any]]:
    """``{name: value}`` of the :data:`_READ` stats of each event of ``events``
    (the last of a name wins, as in ``event_stat_dict``), found as columns: only
    those stats are decoded, not every stat of every event."""
    out: dict[int, dict[str, Any]] = {event: {} for event in events}
    keys = {cols.key_of(name): name for name in _READ}
    keys.pop(-1, None)
    if not keys:
        return out
    stats = cols.event_stats
    rows = np.flatnonzero(np.isin(stats.key, list(keys)))
    owners = np.searchsorted(cols.event_stat_at, rows, side="right") - 1
    keep = np.isin(owners, events)
    for row, owner in zip(rows[keep].tolist(), owners[keep].tolist(), strict=True):
        out[owner][keys[int(stats.key[row])]] = cols.stat_value(stats, row)
    return out


def memory_records(
    table: EventTable, root_starts: np.ndarray, root_ends: np.ndarray, n_steps: int
) -> list[list[MemoryRecord]]:
    """Per step, the memory records of its allocator events (by event time)."""
    out: list[dict[tuple[str, str], MemoryRecord]] = [{} for _ in range(n_steps)]
    events = [e for e in table.host_events().tolist() if table.names[e] in MEMORY_EVENTS]
    if not events:
        return [[] for _ in range(n_steps)]
    times = table.start[events]
    steps = step_of(root_starts, root_ends, times).tolist()
    read = _read_stats(table.cols, events)
    for event, step in zip(events, steps):
        if step < 0:
            continue
        stats = read[event]
        allocator = str(stats.get("allocator_name") or "unknown")
        size = stats.get("allocation_bytes") or stats.get("requested_bytes") or 0
        if not isinstance(size, int) or size <= 0:
            continue
        op = str(stats.get("tf_op") or "").rpartition(":")[0] or "(no op)"
        node = f"memory/{allocator}/{op}"
        record = out[step].setdefault((node, allocator), MemoryRecord(node, allocator))
        record.records.append((int(table.start[event]), MEMORY_EVENTS[table.names[event]] * size))
        in_use = stats.get("bytes_allocated")
        if isinstance(in_use, int):
            record.in_use = max(record.in_use, in_use)
    return [list(step.values()) for step in out]
