"""Every step's columns joined end to end, for analyses that measure all steps at once.

:class:`JoinedSteps` lays the time records, spans and (node, device) pairs of
many steps end to end, each row with its step's index, and measures every
step in one pass: the wall time (:meth:`JoinedSteps.walls`, as
:meth:`~tfprof_lite.model.execs.StepExecs.wall_span`) and the union of a
subset of the time records (:meth:`JoinedSteps.union`, as
:func:`~tfprof_lite.analysis.intervals.union_length` per step). The batched
measures equal the per-step ones only where :meth:`JoinedSteps.exact` says so
(no zero start or end, no negative duration, times close enough to key (step,
time) into one int64); callers measure one step at a time otherwise.

Steps whose columns are rows of arrays many steps share (an XSpace's steps,
:mod:`tfprof_lite.model.step_batch`), untouched and contiguous, are joined by
one slice of those arrays, without touching each step's columns; other steps'
columns are read and concatenated. :func:`joined_steps` is every step of a
model, ascending, shared within a :func:`~tfprof_lite.base.shared.sharing`
block (the overview opens one, so its analyses join the steps once).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from tfprof_lite.base.shared import shared
from tfprof_lite.model.execs import StepExecs
from tfprof_lite.model.profile import ProfileModel

__all__ = ["JoinedSteps", "gathered", "joined_steps"]

I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
#: The batched union keys (step, time) into one int64 below this.
_KEY_LIMIT = 1 << 62


def _rows(steps: Sequence[StepExecs], group: str) -> tuple[list[Any], I64, I64]:
    """Per step, where its ``group`` rows are: the arrays they are rows
    ``lo:lo + size`` of (:meth:`StepExecs.group_rows`: arrays many steps
    share), or its own columns (``lo`` -1), without making the group of a
    deferred step."""
    n = len(steps)
    where: list[Any] = [None] * n
    lo = np.full(n, -1, dtype=np.int64)
    size = np.zeros(n, dtype=np.int64)
    for at, execs in enumerate(steps):
        found = execs.group_rows(group)
        if found is None:
            cols = getattr(execs, group)
            where[at], size[at] = cols, len(cols)
        else:
            where[at], lo[at], size[at] = found
    return where, lo, size


def _plan(steps: Sequence[StepExecs], group: str) -> tuple[list[tuple[Any, int, int]], I64]:
    """The runs of the steps' ``group`` rows, and each step's size: ``(arrays,
    lo, hi)`` for steps over contiguous rows of the same arrays, ``(columns,
    -1, -1)`` for a step whose columns are its own."""
    where, lo, size = _rows(steps, group)
    if not steps:
        return [], size
    ids = np.asarray([id(w) for w in where], dtype=np.uint64)
    rows = lo >= 0
    cont = np.zeros(len(steps), dtype=bool)
    cont[1:] = rows[1:] & rows[:-1] & (ids[1:] == ids[:-1]) & (lo[1:] == lo[:-1] + size[:-1])
    heads = np.flatnonzero(~cont).tolist()
    plan: list[tuple[Any, int, int]] = []
    for head, end in zip(heads, [*heads[1:], len(steps)], strict=True):
        first = int(lo[head])
        last = int(lo[end - 1] + size[end - 1]) if first >= 0 else -1
        plan.append((where[head], first, last))
    return plan, size


def _device_names(steps: Sequence[StepExecs]) -> list[list[str]]:
    """Each step's device strings, without making a deferred step's copy."""
    return [execs.device_table() for execs in steps]


def _gather(plan: list[tuple[Any, int, int]], name: str) -> I64:
    """Column ``name`` of every step of ``plan``, end to end, as int64."""
    parts = [src[name][lo:hi] if lo >= 0 else src[name] for src, lo, hi in plan]
    if not parts:
        return np.zeros(0, dtype=np.int64)
    joined: I64 = np.concatenate(parts).astype(np.int64)
    return joined


def gathered(steps: Sequence[StepExecs], group: str, name: str) -> tuple[I64, I64]:
    """Column ``name`` of column group ``group`` of every step of ``steps``, end
    to end (int64), and each row's step index (into ``steps``)."""
    plan, sizes = _plan(steps, group)
    return _gather(plan, name), _at(sizes)


def _at(sizes: I64) -> I64:
    """Each row's step index, for steps of ``sizes`` rows."""
    at: I64 = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    return at


class JoinedSteps:
    """The columns of ``steps`` end to end (``*_at``: each row's step index).

    ``t_*``: the time records (node, kind, start, duration); ``s_*``: the spans
    (start, end); ``p_*``: the (node, device) pairs, the device an index into
    :attr:`devices` (every step's device strings, each once; -1: none);
    ``has_span``/``span``: each step's own span.
    """

    def __init__(self, steps: Sequence[StepExecs], numbers: Sequence[int] = ()) -> None:
        self.n = len(steps)
        self.numbers = list(numbers)
        times, sizes = _plan(steps, "times")
        self.t_at = _at(sizes)
        self.t_start, self.t_dur = _gather(times, "start"), _gather(times, "dur")
        self.t_node, self.t_kind = _gather(times, "node"), _gather(times, "kind")
        spans, sizes = _plan(steps, "spans")
        self.s_at = _at(sizes)
        self.s_start, self.s_end = _gather(spans, "start"), _gather(spans, "end")
        self._pairs(steps)
        own = [e.span for e in steps]
        self.has_span = np.asarray([s is not None for s in own], dtype=bool).reshape(self.n)
        self.span = np.asarray([(s.start, s.end) if s else (0, 0) for s in own],
                               dtype=np.int64).reshape(self.n, 2)  # fmt: skip

    def _pairs(self, steps: Sequence[StepExecs]) -> None:
        """The pairs, their step-local device codes made indexes into :attr:`devices`."""
        pairs, sizes = _plan(steps, "pairs")
        self.p_at = _at(sizes)
        self.p_node, local = _gather(pairs, "node"), _gather(pairs, "dev")
        tables: dict[tuple[str, ...], int] = {}
        index: dict[str, int] = {}
        flat: list[int] = []
        bases: list[int] = []
        for names in _device_names(steps):
            key = tuple(names)
            base = tables.get(key)
            if base is None:
                base = tables[key] = len(flat)
                flat.extend(index.setdefault(d, len(index)) for d in key)
            bases.append(base)
        self.devices = list(index)
        self.p_dev = np.full(len(local), -1, dtype=np.int64)
        known = np.flatnonzero(local >= 0)
        if len(known):
            at = np.asarray(bases, dtype=np.int64)[self.p_at[known]] + local[known]
            self.p_dev[known] = np.asarray(flat, dtype=np.int64)[at]

    def exact(self) -> bool:
        """Whether the batched measures equal the per-step ones here."""
        if (self.s_start == 0).any() or (self.s_end == 0).any() or (self.t_dur < 0).any():
            return False
        if not len(self.t_start):
            return True
        width = self.width()
        return width * self.n < _KEY_LIMIT and int(self.t_dur.max()) * len(self.t_dur) < _KEY_LIMIT

    def width(self) -> int:
        """A bound on the time records' ends, from their first start, plus one."""
        return int(self.t_start.max()) + int(self.t_dur.max()) - int(self.t_start.min()) + 1

    def walls(self) -> tuple[I64, Mask]:
        """Each step's wall time and whether it has one (a start or a span)."""
        big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
        first = np.full(self.n, big, dtype=np.int64)
        last = np.full(self.n, small, dtype=np.int64)
        np.minimum.at(first, self.s_at, self.s_start)
        np.maximum.at(last, self.s_at, self.s_end)
        has = np.zeros(self.n, dtype=bool)
        has[self.s_at] = True
        first = np.where(self.has_span, np.minimum(first, self.span[:, 0]), first)
        last = np.where(self.has_span, np.maximum(last, self.span[:, 1]), last)
        has |= self.has_span
        return np.where(has, last - first, 0), has

    def union(self, keep: Mask | None = None) -> I64:
        """Each step's union length of its time records (those where ``keep``):
        records by step then start, each adding what runs past the latest end
        of the step's records before it."""
        busy = np.zeros(self.n, dtype=np.int64)
        at, start, dur = self.t_at, self.t_start, self.t_dur
        if keep is not None:
            at, start, dur = at[keep], start[keep], dur[keep]
        if not len(start):
            return busy
        low, width = int(self.t_start.min()), self.width()
        start = start - low
        end = start + dur
        order = np.lexsort((start, at))
        at, start, end = at[order], start[order], end[order]
        reach = np.maximum.accumulate(at * width + end) - at * width  # (keys rise by step)
        before = np.empty_like(reach)
        before[0] = -1
        before[1:] = reach[:-1]
        before[np.flatnonzero(np.diff(at)) + 1] = -1  # a step's first record
        np.add.at(busy, at, np.maximum(end - np.maximum(start, before), 0))
        return busy

    def devices_used(self) -> I64:
        """How many devices each step's nodes ran on (its distinct devices)."""
        keep = self.p_dev >= 0
        codes, at = self.p_dev[keep], self.p_at[keep]
        width = len(self.devices) or 1
        present = np.zeros(self.n * width, dtype=bool)
        present[at * width + codes] = True
        counts: I64 = present.reshape(self.n, width).sum(axis=1).astype(np.int64)
        return counts


def joined_steps(model: ProfileModel) -> JoinedSteps:
    """Every step of ``model``, ascending (one object shared within a
    :func:`~tfprof_lite.base.shared.sharing` block: read-only)."""

    def build() -> JoinedSteps:
        numbers = model.sorted_steps()
        return JoinedSteps([model.steps[s] for s in numbers], numbers)

    return shared("joined_steps", model, build)
