"""The records of every step of an XSpace, in columns, and their step columns.

:func:`step_rows` lays out, for all steps at once, the records
:func:`tfprof_lite.formats.xspace.read.conversion.convert` gives each step (see its module
docstring): two records per GPU kernel or copy and one per other GPU event (by
launch time into the steps) and the host op executions (cut at the step
boundaries); each step's root is no record but the step's span
(:meth:`StepRows.spans`). Records are arrays (step, lane, node, role, kernel,
details, start, end), lanes (:class:`~tfprof_lite.model.step_records.Lane`)
and strings interned once per distinct value, grouped by step, then lane
(first seen in the step first), then the order they were added, as a
RunMetadata's step stats list them; :meth:`StepRows.records` hands them to
the model as its typed :class:`~tfprof_lite.model.step_records.StepRecords`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from tfprof_lite.formats.xspace.read.events import EventTable, distinct_codes, gpu_ordinal
from tfprof_lite.formats.xspace.read.steps import StepRoots, StepSpan, step_of
from tfprof_lite.model.step_records import (
    HOST_DEVICE,
    LANE_ALL_STREAMS,
    LANE_COPIES,
    LANE_COPY,
    LANE_GPU_ACTIVITY,
    LANE_HOST,
    LANE_STREAM,
    ROLE_ACTIVITY,
    ROLE_COPY,
    ROLE_KERNEL,
    ROLE_OP,
    Lane,
    StepRecords,
    micros,
)

__all__ = ["CPU_DEVICE", "DeviceNodes", "StepRows", "device_steps", "step_rows"]

I64 = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

CPU_DEVICE = HOST_DEVICE
_LOW = np.iinfo(np.int64).min


class DeviceNodes:
    """The device events to lay out and what the attribution found for them:
    ``events`` (GPU event rows, ascending), ``launch`` (host launch event, -1:
    none), ``node`` (index into ``names``, the node names)."""

    def __init__(self, events: I64, launch: I64, node: I64, names: list[str]) -> None:
        self.events = events
        self.launch = launch
        self.node = node
        self.names = names


class _Strings:
    """Values (strings, lanes) interned to ids."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self._ids: dict[Any, int] = {}

    def id(self, text: Any) -> int:
        found = self._ids.get(text)
        if found is None:
            found = self._ids[text] = len(self.values)
            self.values.append(text)
        return found

    def ids(self, texts: list[str]) -> I64:
        return np.asarray([self.id(t) for t in texts], dtype=np.int64).reshape(len(texts))


_FIELDS = ("step", "dev", "name", "role", "kernel", "details", "start", "end")


class _Part:
    """Records in the order they are added: their step, lane (``dev``), node
    name, role, kernel and details (ids, int32; role int8) and start and end (ps)."""

    def __init__(
        self,
        step: npt.NDArray[np.integer[Any]],
        dev: npt.NDArray[np.integer[Any]],
        name: npt.NDArray[np.integer[Any]],
        role: npt.NDArray[np.integer[Any]],
        kernel: npt.NDArray[np.integer[Any]],
        details: npt.NDArray[np.integer[Any]],
        start: I64,
        end: I64,
    ) -> None:
        self.step = step.astype(np.int32, copy=False)
        self.dev = dev.astype(np.int32, copy=False)
        self.name = name.astype(np.int32, copy=False)
        self.role = role.astype(np.int8, copy=False)
        self.kernel = kernel.astype(np.int32, copy=False)
        self.details = details.astype(np.int32, copy=False)
        self.start = start
        self.end = end


def _concat(parts: list[_Part]) -> _Part:
    return _Part(*(np.concatenate([getattr(p, f) for p in parts]) for f in _FIELDS))


def _per_pair(
    a: npt.NDArray[np.integer[Any]],
    b: npt.NDArray[np.integer[Any]],
    make: Callable[[int, int], int],
) -> npt.NDArray[np.int32]:
    """The id ``make(a[i], b[i])`` gives, made once per distinct pair."""
    if not len(a):
        return np.zeros(0, dtype=np.int32)
    span = int(b.max()) + 2
    low = int(a.min())
    key = a.astype(np.int64)
    key -= low
    key *= span
    key += b
    key += 1
    used, inverse = np.unique(key, return_inverse=True)
    del key
    made = [make(int(k // span) + low, int(k % span) - 1) for k in used.tolist()]
    out: npt.NDArray[np.int32] = np.asarray(made, dtype=np.int32)[inverse.reshape(-1)]
    return out


def _per_code(
    codes: npt.NDArray[np.integer[Any]], make: Callable[[int], int]
) -> npt.NDArray[np.int32]:
    """The id ``make(codes[i])`` gives, made once per distinct code (rows or
    string codes, -1 for none: :func:`distinct_codes`, no sort)."""
    if not len(codes):
        return np.zeros(0, dtype=np.int32)
    used, inverse = distinct_codes(codes, int(codes.max()) + 1)
    made = [make(code) for code in used.tolist()]
    out: npt.NDArray[np.int32] = np.asarray(made, dtype=np.int32)[inverse]
    return out


def _device_part(
    table: EventTable, nodes: DeviceNodes, steps: I64, strings: _Strings, lanes: _Strings
) -> _Part:
    """The records of the device events with a step: a kernel's on its stream and
    on all streams, a copy's on its stream's copy lane and on all copies, any
    other's on the GPU's activity lane; a kernel's or copy's name and details."""
    cols = table.cols
    keep = steps >= 0
    events, steps = nodes.events[keep], steps[keep]
    node_ids = strings.ids(nodes.names)[nodes.node[keep]] if len(events) else steps
    texts = cols.strings
    # Narrow columns (rows and codes): this runs over every GPU event.
    line = cols.event_line[events]
    meta = cols.event_meta[events]
    details = table.codes["kernel_details"][events]
    copies = table.codes["memcpy_details"][events]
    names = cols.meta_name
    ordinal = [gpu_ordinal(name) for name in cols.plane_name]

    def gpu(line_row: int) -> int:
        return ordinal[int(cols.line_plane[line_row])]

    def copy_kind(m: int) -> str:
        name = names[m] if m >= 0 else ""
        return name if name.startswith("Memcpy") else "Memcpy"

    def text_id(code: int) -> int:
        return strings.id(texts[code]) if code >= 0 and texts[code] else -1

    kernel = _nonempty(details, texts)
    memcpy_name = np.asarray([name.startswith("Memcpy") for name in names] + [False])
    copy = ~kernel & (_nonempty(copies, texts) | memcpy_name[meta])
    other = ~kernel & ~copy
    first = np.empty(len(events), dtype=np.int32)
    second = np.full(len(events), -1, dtype=np.int32)
    role = np.full(len(events), ROLE_ACTIVITY, dtype=np.int8)
    name = np.full(len(events), -1, dtype=np.int32)
    detail = np.full(len(events), -1, dtype=np.int32)
    if kernel.any():
        ln, mt, dt = line[kernel], meta[kernel], details[kernel]
        role[kernel] = ROLE_KERNEL
        first[kernel] = _per_code(
            ln, lambda r: lanes.id(Lane(LANE_STREAM, gpu(r), int(cols.line_id[r])))
        )
        second[kernel] = _per_code(ln, lambda r: lanes.id(Lane(LANE_ALL_STREAMS, gpu(r))))
        name[kernel] = _per_code(mt, lambda m: strings.id(names[m] if m >= 0 else ""))
        detail[kernel] = _per_code(dt, text_id)
    if copy.any():
        ln, mt, cp = line[copy], meta[copy], copies[copy]
        role[copy] = ROLE_COPY
        first[copy] = _per_pair(
            ln,
            mt,
            lambda r, m: lanes.id(Lane(LANE_COPY, gpu(r), int(cols.line_id[r]), copy_kind(m))),
        )
        second[copy] = _per_code(ln, lambda r: lanes.id(Lane(LANE_COPIES, gpu(r))))
        name[copy] = _per_code(mt, lambda m: strings.id(copy_kind(m)))
        detail[copy] = _per_code(cp, text_id)
    if other.any():
        first[other] = _per_code(line[other], lambda r: lanes.id(Lane(LANE_GPU_ACTIVITY, gpu(r))))
    del line, meta, details, copies, kernel, copy, other
    # Two records for an event with a second lane, one for the others; each
    # column made and narrowed in turn (this is the largest part of a big file).
    at = np.repeat(np.arange(len(events), dtype=np.int32), np.where(second >= 0, 2, 1))
    is_second = np.zeros(len(at), dtype=bool)
    is_second[1:] = at[1:] == at[:-1]
    dev = first[at]
    dev[is_second] = second[at[is_second]]
    del first, second, is_second
    return _Part(
        step=steps.astype(np.int32)[at],
        dev=dev,
        name=node_ids.astype(np.int32)[at],
        role=role[at],
        kernel=name[at],
        details=detail[at],
        start=table.start[events][at],
        end=table.end[events][at],
    )


def _nonempty(codes: I64, texts: list[str]) -> BoolArray:
    """Whether each code names a non-empty string (-1: absent)."""
    if not len(codes):
        return np.zeros(0, dtype=bool)
    used, inverse = distinct_codes(codes, len(texts))
    flags = np.asarray([c >= 0 and bool(texts[c]) for c in used.tolist()], dtype=bool)
    return flags[inverse.reshape(-1)]


def _host_part(ops: _Part, windows: list[tuple[int, int]]) -> _Part:
    """Host op executions into the steps whose time they share. An execution that
    crosses a step's end (a background thread's, say) is cut there: each step
    keeps its part, no step grows past its own span, and what runs between steps
    belongs to none (a RunMetadata, too, holds only what ran in its step)."""
    lows = np.asarray([low for low, _ in windows], dtype=np.int64)
    highs = np.asarray(
        [min(end, windows[i + 1][0]) if i + 1 < len(windows) else end
         for i, (_, end) in enumerate(windows)],
        dtype=np.int64,
    )  # fmt: skip
    first = np.maximum(np.searchsorted(lows, ops.start, side="right") - 1, 0)
    last = np.searchsorted(lows, ops.end, side="right") - 1
    count = np.maximum(last - first + 1, 0)
    at = np.repeat(np.arange(len(count)), count)
    offsets = np.cumsum(count) - count
    step = first[at] + (np.arange(len(at)) - offsets[at])
    start, end = ops.start[at], ops.end[at]
    low, high = np.maximum(start, lows[step]), np.minimum(end, highs[step])
    point = (start == end) & (lows[step] <= start) & (start <= highs[step])
    keep = (low < high) | point
    return _Part(step[keep], ops.dev[at][keep], ops.name[at][keep], ops.role[at][keep],
                 ops.kernel[at][keep], ops.details[at][keep], low[keep], high[keep])  # fmt: skip


def _first_between(table: EventTable, roots: I64, lows: I64, highs: I64) -> I64:
    """For each root, the first start in ``[lows[i], highs[i])`` among the events
    of its line, else ``highs[i]`` (each line's starts sorted once)."""
    out = highs.copy()
    lines = np.asarray([table.line_of(r) for r in roots.tolist()], dtype=np.int64).reshape(-1)
    cols = table.cols
    for line in np.unique(lines, return_index=True)[0].tolist():  # (not bare: numpy.ma)
        mine = np.flatnonzero(lines == line)
        lo, hi = int(cols.line_event_at[line]), int(cols.line_event_at[line + 1])
        starts = np.sort(table.start[lo:hi])
        at = np.searchsorted(starts, lows[mine], side="left")
        found = starts[np.minimum(at, max(len(starts) - 1, 0))] if len(starts) else highs[mine]
        hit = (at < len(starts)) & (found < highs[mine])
        out[mine[hit]] = found[hit]
    return out


def _step_windows(
    table: EventTable, roots: StepRoots, added: _Part, steps: int
) -> tuple[list[tuple[int, int]], list[str]]:
    """Each step's window (ps) and the name of its root (``step`` without one).

    A step runs to the last end of its root, of its records and of the program
    run the root launched (``roots.ends``), from its root's start or, when the
    root's thread worked between the end of the previous step and the root (the
    loop reading its next batch, say), from the first event the thread started
    there; an inferred step (``roots.contiguous``) from the previous one's end.
    Without roots, the one step spans its records (none: no window).
    """
    if not roots.events:
        if not len(added.step):
            return [], []
        return [(int(added.start.min()), int(added.end.max()))], ["step"]
    last = np.full(steps, _LOW, dtype=np.int64)
    np.maximum.at(last, added.step, added.end)
    rows = np.asarray(roots.events[:steps], dtype=np.int64)
    starts = table.start[rows].astype(np.int64)
    ends = np.maximum(np.maximum(table.end[rows], last), np.asarray(roots.ends[:steps], np.int64))
    early = np.zeros(steps, dtype=bool)  # a gap after the previous step's end
    early[1:] = ends[:-1] < starts[1:]
    gap = np.flatnonzero(early)
    if roots.contiguous:  # an inferred step: one loop period
        starts[gap] = ends[gap - 1]
    elif len(gap):
        starts[gap] = _first_between(table, rows[gap], ends[gap - 1], starts[gap])
    names = [table.names[root] or "step" for root in rows.tolist()]
    return list(zip(starts.tolist(), ends.tolist(), strict=True)), names


class StepRows:
    """The records of every step (see the module docstring), grouped by step and
    lane: ``bounds[i]:bounds[i + 1]`` are step ``i``'s rows; ``strings`` and
    ``lanes`` the tables the rows' ids index."""

    def __init__(
        self,
        rows: _Part,
        bounds: list[int],
        strings: list[str],
        lanes: list[Lane],
        windows: list[tuple[int, int]] | None = None,
        names: list[str] | None = None,
    ) -> None:
        self.rows = rows
        self.bounds = bounds
        self.strings = strings
        self.lanes = lanes
        self.windows = windows or []
        self.names = names or []

    def records(self, numbers: list[int], origin_ns: int) -> StepRecords:
        """The model's typed records of the steps ``numbers`` (these rows' columns)."""
        rows = self.rows
        return StepRecords(
            numbers=list(numbers), bounds=np.asarray(self.bounds, dtype=np.int64),
            lanes=self.lanes, texts=self.strings, lane=rows.dev, role=rows.role,
            node=rows.name, kernel=rows.kernel, details=rows.details, origin_ns=origin_ns,
            start_ps=rows.start, end_ps=rows.end, spans=self.spans(origin_ns),
        )  # fmt: skip

    def spans(self, origin_ns: int) -> list[StepSpan | None]:
        """Each step's span (absolute µs, as its records), None without one."""
        steps = len(self.bounds) - 1
        windows = np.asarray(self.windows, dtype=np.int64).reshape(-1, 2)
        bounds = micros(origin_ns, windows).tolist()
        return [StepSpan(self.names[i], *bounds[i]) if i < len(bounds) else None
                for i in range(steps)]  # fmt: skip


def device_steps(table: EventTable, roots: StepRoots, events: I64, launch: I64) -> I64:
    """The step of each device event, by its launch's start (its own without a
    launch); -1: none. Inferred steps run from one's end to the next's: an
    event launched after a root, before that step's work ended (a copy of its
    result), is that step's; ``roots.ends`` becomes the end of each one's work
    (for the memory records' steps)."""
    starts = table.start[np.asarray(roots.events, dtype=np.int64)]
    ends = table.end[np.asarray(roots.events, dtype=np.int64)]
    times = table.start[np.where(launch >= 0, launch, events)]
    steps = step_of(starts, ends, times) if len(times) else np.zeros(0, dtype=np.int64)
    if roots.contiguous and len(starts):
        work = _work_ends(table, roots, steps, events)
        before = np.maximum(steps - 1, 0)
        late = (steps > 0) & (times > ends[before]) & (times <= work[before])
        steps[late] -= 1
        roots.ends = _work_ends(table, roots, steps, events).tolist()
    return steps


def _work_ends(table: EventTable, roots: StepRoots, steps: I64, events: I64) -> I64:
    """The last end of each root, of the run it launched and of its device
    events, or of its thread's wait for them (an event of the root's thread
    begun in the step and ending after that work, before the next root)."""
    rows = np.asarray(roots.events, dtype=np.int64)
    work = np.maximum(table.end[rows], roots.ends)
    mine = steps >= 0
    np.maximum.at(work, steps[mine], table.end[events[mine]])
    limits = np.append(table.start[rows[1:]], np.iinfo(np.int64).max)
    by_line: dict[int, tuple[I64, I64]] = {}
    for i, root in enumerate(rows.tolist()):
        starts, ends = _by_start(table, table.line_of(root), by_line)
        # The events of the root's thread begun in the step, before its work ended.
        low = int(np.searchsorted(starts, table.start[root], side="left"))
        high = int(np.searchsorted(starts, work[i], side="right"))
        end = ends[low:high]
        waits = end[(end > work[i]) & (end <= limits[i])]
        if len(waits):
            work[i] = waits.max()
    return work


def _by_start(table: EventTable, line: int, known: dict[int, tuple[I64, I64]]) -> tuple[I64, I64]:
    """The starts and ends of ``line``'s events by start (kept in ``known``)."""
    found = known.get(line)
    if found is None:
        cols = table.cols
        low, high = int(cols.line_event_at[line]), int(cols.line_event_at[line + 1])
        order = np.argsort(table.start[low:high], kind="stable")
        found = known[line] = (table.start[low:high][order], table.end[low:high][order])
    return found


def step_rows(
    table: EventTable,
    roots: StepRoots,
    nodes: DeviceNodes,
    dev_steps: I64,
    host_ops: dict[int, str],
) -> StepRows:
    """The records of every step (``dev_steps``: :func:`device_steps`;
    ``host_ops``: host op event -> its node)."""
    strings, lanes = _Strings(), _Strings()
    steps = max(len(roots), 1)
    device = _device_part(table, nodes, dev_steps, strings, lanes)
    ordered = sorted(host_ops)
    events = np.asarray(ordered, dtype=np.int64)
    names = strings.ids([host_ops[e] for e in ordered])
    none = np.full(len(events), -1, dtype=np.int32)
    ops = _Part(np.zeros(len(events), dtype=np.int64),
                np.full(len(events), lanes.id(Lane(LANE_HOST)), dtype=np.int64),
                names, np.full(len(events), ROLE_OP, dtype=np.int8), none, none,
                table.start[events], table.end[events])  # fmt: skip
    if roots.events:
        windows, roots_names = _step_windows(table, roots, device, steps)
        parts = [device, _host_part(ops, windows)]
    else:
        parts = [_concat([device, ops])]
        windows, roots_names = _step_windows(table, roots, parts[0], steps)
    del device, ops
    found = _grouped(parts, steps, strings.values, lanes.values)
    found.windows, found.names = windows, roots_names
    return found


def _grouped(parts: list[_Part], steps: int, strings: list[str], lanes: list[Lane]) -> StepRows:
    """The records of ``parts`` (emptied as they are read) ordered by step, then
    device (first seen in the step first), then the order they were added;
    joined and ordered one field at a time."""
    # Each record's (step, device) group, numbered without sorting the records:
    # the devices used, then the pairs present, from tables of the codes present.
    used, pair = distinct_codes(np.concatenate([p.dev for p in parts]), len(lanes))
    pair += np.concatenate([p.step for p in parts]).astype(np.int64) * len(used)
    size = steps * len(used)
    if size <= 4 * len(pair):
        distinct, inverse = distinct_codes(pair, size)
    else:  # many steps and devices, few records: sort them
        distinct, inverse = np.unique(pair, return_inverse=True)
        inverse = inverse.reshape(-1)
    del pair
    first = np.full(len(distinct), len(inverse), dtype=np.int64)
    np.minimum.at(first, inverse, np.arange(len(inverse)))
    # The groups by step, then first record; the records by group, then record
    # (a stable sort): sorting the few groups, not every record by three keys.
    group_rank = np.empty(len(distinct), dtype=np.int64)
    group_rank[np.lexsort((first, distinct // max(len(used), 1)))] = np.arange(len(distinct))
    order = np.argsort(group_rank[inverse], kind="stable")
    del distinct, first, inverse, group_rank
    fields = {}
    for name in _FIELDS:
        fields[name] = np.concatenate([getattr(p, name) for p in parts])[order]
        for p in parts:
            setattr(p, name, None)
    parts.clear()
    ordered = _Part(**fields)
    bounds = np.searchsorted(ordered.step, np.arange(steps + 1)).tolist()
    return StepRows(ordered, bounds, strings, lanes)
