"""Building XSpace planes: interned metadata, lines of properly nested events.

:class:`PlaneBuilder` wraps one ``XPlane`` message (``tfprof_lite.xplane``,
wire-compatible with the profiler's ``xplane.proto``): event and stat metadata
are interned by name, events are given in absolute microseconds (or
picoseconds) and stored as offsets from their line's ``timestamp_ns``, and
each line's events are sorted by start when the plane is finished.
:func:`pack_lanes` puts the intervals of one source (a device) on lanes:
without thread ids greedy interval partitioning
(:func:`tfprof_lite.base.lanes.first_free`: the events of a lane never
overlap, so XProf's per-line self time equals duration); with
them, one set of lanes per thread where an event nests inside another only
when it lies strictly inside it on that thread (:class:`ThreadLanes`).

Stat values map to the XStat field of their Python type: ``int`` to
``int64_value``, ``float`` to ``double_value``, ``str`` to ``str_value``.
No ``group_id`` stat is ever declared (XProf would then skip its own step
grouping).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tfprof_lite.base.lanes import first_free
from tfprof_lite.proto import messages as pb

__all__ = ["PS_PER_US", "PlaneBuilder", "StatValue", "ThreadLanes", "pack_lanes"]

PS_PER_US = 1_000_000
StatValue = int | float | str


class PlaneBuilder:
    """One plane under construction.

    Line timestamps are 0: times are relative to ``origin_ns``, the profile's
    start (the ``Task Environment`` plane's ``profile_start_time``), as newer
    profilers write them.
    """

    def __init__(self, plane_id: int, name: str, origin_ns: int) -> None:
        self.plane = pb.XPlane(id=plane_id, name=name)
        self.origin_ns = origin_ns
        self._events: dict[str, int] = {}
        self._stats: dict[str, int] = {}
        self._lines: dict[int, Any] = {}
        self._pending: dict[int, list[tuple[int, int, Any]]] = {}

    def stat_id(self, name: str) -> int:
        """The id of stat metadata ``name`` (declared on first use)."""
        got = self._stats.get(name)
        if got is None:
            got = self._stats[name] = len(self._stats) + 1
            self.plane.stat_metadata[got].id = got
            self.plane.stat_metadata[got].name = name
        return got

    def event_id(self, name: str) -> int:
        """The id of event metadata ``name`` (declared on first use)."""
        got = self._events.get(name)
        if got is None:
            got = self._events[name] = len(self._events) + 1
            self.plane.event_metadata[got].id = got
            self.plane.event_metadata[got].name = name
        return got

    def set_stats(self, target: Any, stats: Mapping[str, StatValue]) -> None:
        """Append ``stats`` to the ``stats`` field of ``target`` (event or plane)."""
        for key, value in stats.items():
            stat = target.stats.add(metadata_id=self.stat_id(key))
            if isinstance(value, int):
                stat.int64_value = int(value)
            elif isinstance(value, float):
                stat.double_value = value
            else:
                stat.str_value = value

    def line(self, line_id: int, name: str) -> int:
        """Declare line ``line_id`` (idempotent); returns its id."""
        if line_id not in self._lines:
            line = self.plane.lines.add(id=line_id, display_id=line_id, name=name, timestamp_ns=0)
            self._lines[line_id] = line
            self._pending[line_id] = []
        return line_id

    def add_ps(
        self, line_id: int, name: str, start_ps: int, dur_ps: int, stats: Mapping[str, StatValue]
    ) -> None:
        """One event from ``start_ps`` (absolute, ps) lasting ``dur_ps``."""
        event = pb.XEvent(
            metadata_id=self.event_id(name),
            offset_ps=max(start_ps - self.origin_ns * 1000, 0),
            duration_ps=max(dur_ps, 0),
        )
        self.set_stats(event, stats)
        self._pending[line_id].append((event.offset_ps, -event.duration_ps, event))

    def add(
        self, line_id: int, name: str, start_us: int, dur_us: int, stats: Mapping[str, StatValue]
    ) -> None:
        """One event from ``start_us`` (absolute microseconds) lasting ``dur_us``."""
        self.add_ps(line_id, name, start_us * PS_PER_US, dur_us * PS_PER_US, stats)

    def finish(self) -> Any:
        """The plane, each line's events sorted by start (outer events first)."""
        for line_id, line in self._lines.items():
            events = self._pending[line_id]
            events.sort(key=lambda item: (item[0], item[1]))
            line.events.extend(item[2] for item in events)
            if events:
                end = max(e.offset_ps + e.duration_ps for _, _, e in events)
                line.duration_ps = end
        return self.plane


class ThreadLanes:
    """Lanes of one thread, where an interval may nest inside another.

    An interval goes to the first lane where, once the intervals that ended by
    its start are closed, it either starts a new top level (nothing open) or
    lies inside the innermost open interval: starting at or after its start
    and ending strictly before its end. XProf's per-line nesting (a stack of
    begin and end points, ends before begins at one time only in the order the
    line holds them) loses an inner event that ends exactly when its parent
    does, and a partial overlap drops the later event altogether; neither is
    ever written.
    """

    def __init__(self) -> None:
        self._open: list[list[tuple[int, int]]] = []

    def assign(self, start: int, dur: int) -> int:
        """The lane (0-based) for ``[start, start + dur)``; intervals must come
        sorted by start (longest first among equal starts)."""
        end = start + max(dur, 0)
        for lane, stack in enumerate(self._open):
            while stack and stack[-1][1] <= start:
                stack.pop()
            if not stack or (stack[-1][0] <= start and end < stack[-1][1]):
                stack.append((start, end))
                return lane
        self._open.append([(start, end)])
        return len(self._open) - 1


def pack_lanes(
    starts: Sequence[int], durs: Sequence[int], threads: Sequence[int] | None = None
) -> list[tuple[int, int]]:
    """``(thread, lane)`` of each interval of one device, in the given order.

    Without ``threads`` (or where a thread is 0, unknown) the intervals go to
    the first lane free at their start (:func:`tfprof_lite.base.lanes.first_free`)
    under thread 0: no event of a lane overlaps another, so XProf's self time
    of each is its duration. With thread ids, each thread's intervals are
    packed by :class:`ThreadLanes`: an interval nests inside another only when
    it ran within it on that same thread.
    """
    order = sorted(range(len(starts)), key=lambda i: (starts[i], -durs[i]))
    out: list[tuple[int, int]] = [(0, 0)] * len(starts)
    unknown = [i for i in order if threads is None or not int(threads[i])]
    lanes, _ = first_free(
        [int(starts[i]) for i in unknown], [max(int(durs[i]), 0) for i in unknown]
    )
    for i, lane in zip(unknown, lanes, strict=True):
        out[i] = (0, lane)
    packers: dict[int, ThreadLanes] = {}
    for i in order:
        thread = int(threads[i]) if threads is not None else 0
        if thread:
            packer = packers.setdefault(thread, ThreadLanes())
            out[i] = (thread, packer.assign(int(starts[i]), int(durs[i])))
    return out
