"""One lane packer (tfprof_lite.base.lanes) for the report's rows, the Chrome trace
lanes and tfprof's timeline, against plain reference scans."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tfprof_lite.base.lanes import first_free, scan_free
from tfprof_lite.outputs.chrome_trace.columns import assign_lanes
from tfprof_lite.outputs.timeline import _free_lane

_EVENTS = st.lists(st.tuples(st.integers(-5, 60), st.integers(-3, 20)), max_size=40)


def _tf_timeline_lanes(starts: list[int], durs: list[int]) -> list[int]:
    """TensorFlow's client Timeline: lane 0 ends at 0; the first lane whose last
    end is strictly before the start, else a new lane."""
    ends, out = [0], []
    for start, dur in zip(starts, durs):
        lane = next((i for i, end in enumerate(ends) if start > end), None)
        if lane is None:
            lane = len(ends)
            ends.append(0)
        ends[lane] = start + dur
        out.append(lane)
    return out


def _tfprof_lanes(starts: list[int], durs: list[int]) -> list[int]:
    lanes: list[list[tuple[int, int]]] = []
    out = []
    for start, dur in zip(starts, durs):
        lane = _free_lane(lanes, start)
        if lane < 0:
            lane = len(lanes)
            lanes.append([])
        lanes[lane].append((start, start + dur))
        out.append(lane)
    return out


@given(_EVENTS, st.booleans())
def test_the_heap_gives_the_scan_lanes(events: list[tuple[int, int]], strict: bool) -> None:
    events.sort(key=lambda e: (e[0], -e[1]))
    starts, durs = [e[0] for e in events], [e[1] for e in events]
    for first in (None, 0, 7):
        got = first_free(starts, durs, strict=strict, first_lane_end=first)
        assert got == scan_free(starts, durs, strict=strict, first_lane_end=first)
        lanes, count = got
        assert count == len(set(lanes) | ({0} if first is not None else set()))


@given(_EVENTS)
def test_chrome_trace_lanes_are_tensorflows(events: list[tuple[int, int]]) -> None:
    starts, durs = [e[0] for e in events], [e[1] for e in events]
    assert assign_lanes(starts, durs) == _tf_timeline_lanes(starts, durs)
    starts.sort()
    assert assign_lanes(starts, durs) == _tf_timeline_lanes(starts, durs)


@given(_EVENTS)
def test_tfprof_timeline_lanes_equal_the_packer(events: list[tuple[int, int]]) -> None:
    """tfprof's scan (start order) is the packer's non-strict lanes for durations >= 0."""
    events = sorted((s, abs(d)) for s, d in events)
    starts, durs = [e[0] for e in events], [e[1] for e in events]
    assert _tfprof_lanes(starts, durs) == first_free(starts, durs)[0]


def test_lanes_by_hand() -> None:
    assert first_free([0, 0, 5, 5], [5, 5, 1, 1]) == ([0, 1, 0, 1], 2)
    assert first_free([0, 0, 5, 5], [5, 5, 1, 1], strict=True) == ([0, 1, 2, 3], 4)
    assert first_free([0, 1], [3, 1], strict=True, first_lane_end=0) == ([1, 0], 2)
    assert first_free([5, 0], [1, 1]) == ([0, 1], 2)  # out of order: the scan
    assert first_free([], []) == ([], 0)
