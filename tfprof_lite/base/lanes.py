"""Lanes for intervals: each interval goes to the first lane that is free when it starts.

Every trace the package draws or writes packs events into lanes (rows, tids,
XLines) this one way; the callers differ only in when a lane counts as free
again, which each one's reader fixes:

* ``strict=False``: a lane is free at the instant its last interval ends (an
  interval may start where the previous one ended): the report's trace rows,
  tfprof's timeline, the XSpace writer's lanes;
* ``strict=True``: only strictly after it ended, with lane 0 taken until time
  ``0`` (``first_lane_end``): TensorFlow's client ``Timeline``, whose lanes
  the Chrome trace output reproduces.

tfprof's own timeline (``outputs/timeline.py``) keeps its scan of each lane's
intervals from the latest back: it gives these lanes (``strict=False``) except
when an interval with a negative duration ends before an earlier one, where
tfprof's answer is kept.

In start order a lane that has become free stays free until it is given an
interval, so the free lanes are kept in a heap (lowest first) and the busy ones
in a heap by end: each interval costs a logarithm of the lanes. Intervals out of
start order are packed by a scan of every lane, which gives what a scan gives.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

__all__ = ["first_free", "scan_free"]


def first_free(
    starts: Sequence[int],
    durs: Sequence[int],
    *,
    strict: bool = False,
    first_lane_end: int | None = None,
) -> tuple[list[int], int]:
    """The lane of each interval (``starts[i]``, ``starts[i] + durs[i]``), in the
    order given, and the number of lanes used.

    Args:
        starts: the intervals' starts.
        durs: their durations (a negative one ends before it starts).
        strict: a lane is free only strictly after its last interval ended.
        first_lane_end: when given, lane 0 exists from the outset, busy until then.
    """
    ordered = all(b >= a for a, b in zip(starts, starts[1:]))
    if not ordered:
        return scan_free(starts, durs, strict=strict, first_lane_end=first_lane_end)
    free: list[int] = []
    busy: list[tuple[int, int]] = []  # (end, lane)
    count = 0
    if first_lane_end is not None:
        busy.append((first_lane_end, 0))
        count = 1
    lanes: list[int] = []
    for start, dur in zip(starts, durs):
        while busy and (busy[0][0] < start if strict else busy[0][0] <= start):
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            lane = heapq.heappop(free)
        else:
            lane = count
            count += 1
        lanes.append(lane)
        heapq.heappush(busy, (start + dur, lane))
    return lanes, count


def scan_free(
    starts: Sequence[int],
    durs: Sequence[int],
    *,
    strict: bool = False,
    first_lane_end: int | None = None,
) -> tuple[list[int], int]:
    """:func:`first_free` by a scan of every lane: any order; the cheaper way
    when there are few lanes."""
    ends: list[int] = [] if first_lane_end is None else [first_lane_end]
    lanes: list[int] = []
    for start, dur in zip(starts, durs):
        lane = next(
            (i for i, end in enumerate(ends) if end < start or (not strict and end == start)),
            len(ends),
        )
        if lane == len(ends):
            ends.append(0)
        ends[lane] = start + dur
        lanes.append(lane)
    return lanes, len(ends)
