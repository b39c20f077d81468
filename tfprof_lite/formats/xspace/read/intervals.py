"""Which event of a thread spans a given time, for many times at once.

:class:`LineIntervals` holds events of host lines (start, end in ps), sorted by
line, start and row, and answers :meth:`~LineIntervals.around`: for each query
(line, time t), the last event of that line, in start order, that started at
or before ``t`` and ends at or after ``t`` -- what walking back from the last
event started by ``t`` to the first one still running at ``t`` gives, without
the walk: a table of the running maximum end over blocks of 2^k events lets
each query skip the events that ended before ``t`` in log2(n) vector steps.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["LineIntervals"]

I64 = npt.NDArray[np.int64]


class LineIntervals:
    """Events (rows of an event table) on host lines, by line, start and row."""

    def __init__(self, rows: I64, lines: I64, starts: I64, ends: I64) -> None:
        order = np.lexsort((rows, starts, lines))
        self.rows = rows[order]
        self.lines = lines[order]
        self.starts = starts[order]
        self.ends = ends[order]
        # Level k, at i: the latest end among events i - 2^k + 1 .. i (from 0 when
        # shorter). Only the even levels are kept (half the memory); an odd level
        # is read from the even one below it (:meth:`_level`).
        self.depth = 0  # the number of levels
        kept = [self.ends]
        last, width = self.ends, 1
        while width < len(self.ends):
            higher = last.copy()
            higher[width:] = np.maximum(last[width:], last[:-width])
            self.depth += 1
            if self.depth % 2 == 0:
                kept.append(higher)
            last, width = higher, width * 2
        self.depth += 1
        self.kept = kept

    def _level(self, k: int, at: I64) -> I64:
        """Level ``k`` at positions ``at`` (each >= 0)."""
        below = self.kept[k // 2]
        if k % 2 == 0:
            return below[at]
        half = 1 << (k - 1)
        out = below[at]
        far = at >= half
        out[far] = np.maximum(out[far], below[at[far] - half])
        return out

    def __len__(self) -> int:
        return len(self.rows)

    def first_of(self, lines: I64) -> I64:
        """The position of the first event of each line (where it would be when none)."""
        return np.searchsorted(self.lines, lines, side="left")

    def around(self, lines: I64, times: I64) -> I64:
        """For each (line, time): the position (into :attr:`rows`) of the last
        event on that line, by start, with ``start <= t <= end``; -1 when none."""
        if not len(self.rows) or not len(times):
            return np.full(len(times), -1, dtype=np.int64)
        first = self.first_of(lines)
        last = np.searchsorted(self.lines, lines, side="right")
        # The last event of the line started at or before t: search each line's
        # starts (the queries of one line at once).
        at = np.empty(len(times), dtype=np.int64)
        for line in np.flatnonzero(np.bincount(lines)).tolist():
            sel = np.flatnonzero(lines == line)
            lo, hi = int(first[sel[0]]), int(last[sel[0]])
            at[sel] = lo + np.searchsorted(self.starts[lo:hi], times[sel], side="right") - 1
        return self.last_running(at, times, first)

    def last_running(self, at: I64, times: I64, first: I64) -> I64:
        """For each query: the last position from ``first`` up to ``at`` whose event
        ends at or after its time; -1 when none."""
        at = at.copy()
        # Skip back over the events that ended before t, largest blocks first.
        for k in range(self.depth - 1, -1, -1):
            live = at >= 0
            block = np.where(live, self._level(k, np.maximum(at, 0)), 0)
            skip = live & (block < times)
            at[skip] -= 1 << k
        found = (at >= first) & (at >= 0)
        if len(self.ends):
            found &= self.ends[np.maximum(at, 0)] >= times
        return np.where(found, at, -1)
