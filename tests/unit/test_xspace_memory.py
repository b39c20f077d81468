"""Allocator events to memory records (``model/xspace_memory.py``): the stats it
reads as columns give what reading every event's stats as a dict gives."""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.xspace_files import SpaceBuilder, stat
from tfprof_lite.model.xspace_events import event_table
from tfprof_lite.model.xspace_memory import MEMORY_EVENTS, memory_records
from tfprof_lite.proto.xplane import decode_xspace


def _reference(table: Any, events: list[int]) -> list[tuple[str, str, list[Any], int]]:
    """The records as a per-event ``event_stat_dict`` reading gives them (one step)."""
    out: dict[tuple[str, str], tuple[str, str, list[Any], list[int]]] = {}
    for event in events:
        stats = table.cols.event_stat_dict(event)
        allocator = str(stats.get("allocator_name") or "unknown")
        size = stats.get("allocation_bytes") or stats.get("requested_bytes") or 0
        if not isinstance(size, int) or size <= 0:
            continue
        op = str(stats.get("tf_op") or "").rpartition(":")[0] or "(no op)"
        node = f"memory/{allocator}/{op}"
        record = out.setdefault((node, allocator), (node, allocator, [], [0]))
        record[2].append((int(table.start[event]), MEMORY_EVENTS[table.names[event]] * size))
        in_use = stats.get("bytes_allocated")
        if isinstance(in_use, int):
            record[3][0] = max(record[3][0], in_use)
    return [(n, a, r, u[0]) for n, a, r, u in out.values()]


def test_records_equal_a_full_reading_of_each_event() -> None:
    b = SpaceBuilder()
    main = b.line(b.host, 1, "python")
    b.event(b.host, main, "MemoryAllocation", 1_000, 0, allocator_name="bfc",
            allocation_bytes=4096, bytes_allocated=4096, tf_op="a/MatMul:MatMul")  # fmt: skip
    b.event(b.host, main, "dense/MatMul:MatMul", 1_500, 10, allocation_bytes=77)
    b.event(b.host, main, "MemoryAllocation", 2_000, 0, allocator_name="bfc",
            allocation_bytes=0, requested_bytes=100)  # fmt: skip
    b.event(b.host, main, "MemoryAllocation", 2_500, 0)  # no stats: skipped
    twice = b.event(b.host, main, "MemoryAllocation", 3_000, 0, allocator_name="first",
                    requested_bytes=8)  # fmt: skip
    names = {m.name: k for k, m in b.host.stat_metadata.items()}
    twice.stats.append(stat(b.host, names, "allocator_name", str_value="second"))
    b.event(b.host, main, "MemoryAllocation", 3_500, 0, allocator_name="bfc",
            allocation_bytes="not a number")  # fmt: skip
    b.event(b.host, main, "MemoryDeallocation", 4_000, 0, allocator_name="bfc",
            allocation_bytes=4096, bytes_allocated=100, tf_op="a/MatMul:MatMul")  # fmt: skip
    table = event_table(decode_xspace(b.bytes(), "memory"))
    events = [e for e in range(len(table)) if table.names[e] in MEMORY_EVENTS]
    (got,) = memory_records(table, np.array([0]), np.array([10**15]), 1)

    assert [(r.node, r.allocator, r.records, r.in_use) for r in got] == _reference(table, events)
    assert {r.allocator for r in got} == {"bfc", "second"}  # the last of a name wins
    (matmul,) = [r for r in got if r.node == "memory/bfc/a/MatMul"]
    assert [delta for _, delta in matmul.records] == [4096, -4096]
    assert matmul.in_use == 4096
    (no_op,) = [r for r in got if r.node == "memory/bfc/(no op)"]
    assert [delta for _, delta in no_op.records] == [100]  # requested when allocated is 0
