"""The column helpers of the XSpace memory records: interval lookup, free
matching and per-step records."""

from __future__ import annotations

import random

import numpy as np

from tests.xspace_files import SpaceBuilder
from tfprof_lite.formats.xspace.read.intervals import LineIntervals
from tfprof_lite.formats.xspace.read.load import model_from_bytes
from tfprof_lite.formats.xspace.read.memory import _matched_allocations
from tfprof_lite.model.memory_records import MemoryRef

GPU = "GPU_0_bfc"


def _walk_back(spans: list[tuple[int, int, int, int]], line: int, t: int) -> int:
    """The row of the last event on ``line`` started by ``t`` that still runs at ``t``,
    by walking back from the last one started (-1: none)."""
    mine = sorted((s, row, e) for row, ln, s, e in spans if ln == line)
    candidates = [(s, row, e) for s, row, e in mine if s <= t]
    for _, row, end in reversed(candidates):
        if end >= t:
            return row
    return -1


def test_line_intervals_agree_with_walking_back() -> None:
    rng = random.Random(7)
    for _ in range(200):
        spans = []
        for row in range(rng.randint(0, 40)):
            start = rng.randint(0, 100)
            spans.append((row, rng.randint(0, 2), start, start + rng.choice([0, 1, 5, 30, 90])))
        rows = np.asarray([s[0] for s in spans], dtype=np.int64)
        lines = np.asarray([s[1] for s in spans], dtype=np.int64)
        starts = np.asarray([s[2] for s in spans], dtype=np.int64)
        ends = np.asarray([s[3] for s in spans], dtype=np.int64)
        intervals = LineIntervals(rows, lines, starts, ends)
        q_lines = np.asarray([rng.randint(0, 3) for _ in range(30)], dtype=np.int64)
        q_times = np.asarray([rng.randint(-5, 200) for _ in range(30)], dtype=np.int64)
        at = intervals.around(q_lines, q_times)
        got = [int(intervals.rows[a]) if a >= 0 else -1 for a in at.tolist()]
        want = [_walk_back(spans, ln, t) for ln, t in zip(q_lines.tolist(), q_times.tolist())]
        assert got == want


def test_line_intervals_skip_long_runs_of_finished_events() -> None:
    # One long event, then 1000 short ones that end before the query time.
    starts = np.asarray([0, *range(1, 1001)], dtype=np.int64)
    ends = np.asarray([5000, *range(1, 1001)], dtype=np.int64)
    rows = np.arange(1001, dtype=np.int64)
    intervals = LineIntervals(rows, np.zeros(1001, dtype=np.int64), starts, ends)
    at = intervals.around(np.zeros(2, dtype=np.int64), np.asarray([2000, 6000], dtype=np.int64))
    assert at.tolist()[1] == -1 and int(intervals.rows[at[0]]) == 0


def test_a_free_frees_the_latest_allocation_not_freed_at_its_address() -> None:
    # By time: allocator 0 allocates twice at 8 and frees (the second one), allocator
    # 1 frees at 8 (made before the profile), allocates, allocator 0 frees at 8 again
    # (none left), address 0 never matches, allocator 1 frees its allocation.
    is_alloc = np.asarray([1, 1, 0, 0, 1, 0, 1, 0, 0], dtype=bool)
    allocator = np.asarray([0, 0, 0, 1, 1, 0, 0, 0, 1], dtype=np.int64)
    addr = np.asarray([8, 8, 8, 8, 8, 8, 0, 0, 8], dtype=np.int64)
    freed = _matched_allocations(is_alloc, allocator, addr)
    assert freed.tolist() == [-1, -1, 1, -1, -1, -1, -1, -1, 4]


def _alloc(b: SpaceBuilder, line: object, t: int, kind: str, nbytes: int, addr: int) -> None:
    b.event(b.host, line, kind, t, 0, allocator_name=GPU, allocation_bytes=nbytes, addr=addr,
            bytes_allocated=nbytes)  # fmt: skip


def test_reused_address_and_double_free_in_the_model() -> None:
    b = SpaceBuilder()
    line = b.line(b.host, 1, "python")
    b.event(b.host, line, "train", 1_000_000, 100_000, step_num=0, _r=1)
    b.event(b.host, line, "a/MatMul:MatMul", 1_010_000, 10_000, "MatMul")
    b.event(b.host, line, "b/Relu:Relu", 1_030_000, 10_000, "Relu")
    _alloc(b, line, 1_011_000, "MemoryAllocation", 100, 8)  # a/MatMul's
    _alloc(b, line, 1_020_000, "MemoryDeallocation", 100, 8)  # frees a/MatMul's
    _alloc(b, line, 1_031_000, "MemoryAllocation", 50, 8)  # b/Relu's, same address
    _alloc(b, line, 1_050_000, "MemoryDeallocation", 50, 8)  # frees b/Relu's
    _alloc(b, line, 1_060_000, "MemoryDeallocation", 50, 8)  # nothing left: no op
    model = model_from_bytes(b.bytes(), "hand.xplane.pb")
    execs = model.steps[0]
    by_node = {}
    for nid, ref in zip(execs.raw_node, execs.raw_stats, strict=True):
        assert isinstance(ref, MemoryRef)
        detail = ref.detail()
        by_node[model.names[nid]] = [b for use in detail.allocators for _, b in use.events]
    assert by_node == {"a/MatMul": [100, -100], "b/Relu": [50, -50], f"{GPU} (no op)": [-50]}
