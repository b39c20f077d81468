"""The trace viewer's lanes are packed into rows as :func:`pack_rows` packs them,
whichever way a lane is packed (one row, a scan of a few rows, the heap)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tfprof_lite.report.trace import _rows, pack_rows


def _lane(rng: random.Random, n: int, spread: int) -> tuple[list[int], list[int]]:
    """``n`` events in the lane's order: by start, longer first."""
    events = [(rng.randrange(spread), rng.choice((0, 0, 1, 2, 5, 9, 30, 200))) for _ in range(n)]
    events.sort(key=lambda e: (e[0], -e[1]))
    return [s for s, _ in events], [d for _, d in events]


@pytest.mark.parametrize("spread", [3, 40, 400, 100_000])
def test_lane_rows_equal_pack_rows(spread: int) -> None:
    rng = random.Random(spread)
    for _ in range(300):
        starts, durs = _lane(rng, rng.randrange(1, 60), spread)
        got = _rows(np.asarray(starts, dtype=np.int64), np.asarray(durs, dtype=np.int64))
        assert got == pack_rows(starts, durs)


def test_zero_length_event_at_a_running_event_start_takes_a_second_row() -> None:
    starts, durs = np.asarray([0, 0], dtype=np.int64), np.asarray([5, 0], dtype=np.int64)
    assert _rows(starts, durs) == ([0, 1], 2) == pack_rows([0, 0], [5, 0])


def test_sequential_and_deep_lanes() -> None:
    starts = np.arange(0, 100, 10, dtype=np.int64)
    assert _rows(starts, np.full(10, 10, dtype=np.int64)) == ([0] * 10, 1)
    deep = np.zeros(20, dtype=np.int64)  # 20 events at once: more rows than a scan takes
    assert _rows(deep, np.full(20, 5, dtype=np.int64)) == (list(range(20)), 20)


def test_a_lane_estimated_at_two_rows_that_needs_three() -> None:
    """Zero-length events at a start lower the estimate of the rows a lane needs:
    the rows are still those of :func:`pack_rows`."""
    starts, durs = [0, 0, 0], [5, 5, 0]
    got = _rows(np.asarray(starts, dtype=np.int64), np.asarray(durs, dtype=np.int64))
    assert got == ([0, 1, 2], 3) == pack_rows(starts, durs)


def test_a_lane_whose_ends_pass_int64_is_packed_in_python_integers() -> None:
    starts, durs = [5, 6], [2**63 - 1, 1]  # (5 + int64's maximum wraps in NumPy)
    got = _rows(np.asarray(starts, dtype=np.int64), np.asarray(durs, dtype=np.int64))
    assert got == ([0, 1], 2) == pack_rows(starts, durs)


def test_last_end_past_int64_in_python_integers() -> None:
    from tfprof_lite.report.trace_events import _last_end

    start = np.asarray([5, 9], dtype=np.int64)
    assert _last_end(start, np.asarray([2**63 - 1, 1], dtype=np.int64)) == 2**63 + 4
    assert _last_end(start, np.asarray([3, 1], dtype=np.int64)) == 10
