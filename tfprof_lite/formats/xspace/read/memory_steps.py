"""One step's allocator events as the memory records of its step columns.

:func:`step_memory` gives, for the allocator events of one step (see
:mod:`tfprof_lite.formats.xspace.read.memory`), per node one row with one
``AllocatorMemoryUsed`` per allocator and one output per allocation that names
a shape, in the columns :func:`~tfprof_lite.proto.steps.columns_from_message`
would read from the ``RunMetadata`` holding those records (devices in the order
their first node appears, nodes by first event, allocators of a node by first
event), computed over the events' columns at once. :func:`take_rows` and
:func:`concat_columns` cut and join step columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import compress
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from tfprof_lite.formats.xspace.read.memory_wire import (
    AllocatorUse,
    OutputTensor,
    allocation_records,
    node_exec_stats,
)
from tfprof_lite.proto.steps import StepColumns

if TYPE_CHECKING:
    from tfprof_lite.formats.xspace.read.memory import MemoryColumns

__all__ = ["BATCH", "StepMemory", "add_step_memory", "concat_columns", "micros", "take_rows"]

I64 = npt.NDArray[np.int64]
#: Events whose steps :func:`add_step_memory` does at once (whole steps).
BATCH = 1 << 16


def micros(origin_ns: int, ps: I64) -> I64:
    """Absolute microseconds of ps offsets from ``origin_ns`` (floored)."""
    origin_us, rest_ns = divmod(origin_ns, 1000)
    return (origin_us + (ps + rest_ns * 1000) // 1_000_000).astype(np.int64)


@dataclass
class _Place:
    """Where a node's memory record goes in one step."""

    device: str
    start: int
    rel: int
    label: str
    row: int  # the replaced record's row, -1: a new one


class _Finder:
    """A step's first record of a node on a device (only the rows of that device
    are looked at)."""

    def __init__(self, cols: StepColumns) -> None:
        self.cols = cols
        self.on_device: dict[str, list[int]] = {}

    def place(self, node: str, first_us: int, device: str) -> _Place:
        """The node's first record on ``device``, else a new one at ``first_us``."""
        cols = self.cols
        rows = self.on_device.get(device)
        if rows is None:
            wanted = [d for d, name in enumerate(cols.devices) if name == device]
            mask = np.zeros(len(cols), dtype=bool)
            for d in wanted:
                mask |= cols.dev == d
            rows = self.on_device[device] = np.flatnonzero(mask).tolist()
        names = cols.name
        for row in rows:
            if names[row] == node:
                return _Place(
                    device, int(cols.start[row]), int(cols.rel[row]), cols.label[row], row
                )
        return _Place(device, first_us, 0, "", -1)


def _first_order(keys: I64) -> tuple[I64, I64, I64]:
    """The distinct keys by first appearance, where each first appears, and each
    key's rank in that order."""
    uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[order] = np.arange(len(uniq))
    return uniq[order], first[order], rank[inverse.reshape(-1)]


@dataclass
class _Segments:
    """The step's events by row, allocator (first event order) and time."""

    order: I64  # positions into the step's events
    starts: I64  # first sorted position of each (row, allocator) segment
    row: I64  # each segment's row
    allocator: I64  # each segment's allocator


def _segments(ev_row: I64, ev_alloc: I64, n_alloc: int) -> _Segments:
    pair = ev_row * n_alloc + ev_alloc
    # Segments of a row by the first event of their allocator; rows in row order.
    distinct, _, rank = _first_order(pair)
    seg_rows = distinct // n_alloc
    seg_order = np.lexsort((np.arange(len(distinct)), seg_rows))
    seg_of = np.empty(len(distinct), dtype=np.int64)
    seg_of[seg_order] = np.arange(len(distinct))
    seg = seg_of[rank]
    order = np.argsort(seg, kind="stable")
    starts = np.searchsorted(seg[order], np.arange(len(distinct)))
    return _Segments(order, starts, seg_rows[seg_order], distinct[seg_order] % n_alloc)


@dataclass
class _StepRows:
    """The memory rows of one step: a range of all steps' rows, and its devices."""

    first: int
    count: int
    devices: list[str]


@dataclass
class StepMemory:
    """One step's memory records (``rows``) and which of its records stay
    (``keep``: those the memory records do not replace)."""

    keep: npt.NDArray[np.bool_]
    rows: StepColumns

    def join(self, cols: StepColumns) -> StepColumns:
        """The step's columns ``cols`` with these records in place."""
        return concat_columns(take_rows(cols, self.keep), self.rows)


def add_step_memory(
    columns: list[StepColumns],
    mem: MemoryColumns,
    steps: I64,
    devices: list[str],
    origin_ns: int,
    pending: dict[int, StepMemory] | None = None,
) -> None:
    """Put the memory records of the events into the columns of their step
    (``steps``: per event, -1 for none): per step, a node's record replaces
    its first record on its device (``devices``: per node code), or is new and
    ``untimed``. With ``pending``, each step's records go there instead, for
    the caller to join when it takes the step (joined columns hold every
    memory column in full: all steps' at once would be most of a large
    file's steps again). The steps are done in batches of whole steps of
    about :data:`BATCH` events: a step's records read its own events only, and
    the per-event temporaries stay the size of a batch."""
    sel = np.flatnonzero((steps >= 0) & (steps < len(columns)))
    if not len(sel):
        return
    # The events by step (by time within one: ``sel`` ascends), cut between steps.
    sel = sel[np.argsort(steps[sel], kind="stable")]
    step_of = steps[sel]
    change = np.flatnonzero(step_of[1:] != step_of[:-1]) + 1
    cuts, last = [0], 0
    for at in change.tolist():
        if at - last >= BATCH:
            cuts.append(at)
            last = at
    cuts.append(len(sel))
    del step_of, change
    for low, high in zip(cuts[:-1], cuts[1:], strict=True):
        _add_steps(columns, mem, sel[low:high], steps, devices, origin_ns, pending)


def _add_steps(
    columns: list[StepColumns],
    mem: MemoryColumns,
    sel: I64,
    steps: I64,
    devices: list[str],
    origin_ns: int,
    pending: dict[int, StepMemory] | None,
) -> None:
    """:func:`add_step_memory` of events ``sel`` (whole steps, by time in each)."""
    n_nodes = len(mem.nodes)
    pairs, first, rank = _first_order(steps[sel] * n_nodes + mem.node[sel])
    times = micros(origin_ns, mem.start_ps[sel])
    by_step: dict[int, list[int]] = {}
    for pair, key in enumerate(pairs.tolist()):
        by_step.setdefault(key // n_nodes, []).append(pair)
    row_of_pair = np.empty(len(pairs), dtype=np.int64)
    places: list[_Place] = []
    names: list[str] = []
    layout: dict[int, _StepRows] = {}
    for step, step_pairs in sorted(by_step.items()):
        finder = _Finder(columns[step])
        node_of = [int(pairs[p]) % n_nodes for p in step_pairs]
        device_of = [devices[n] for n in node_of]
        device_list = list(dict.fromkeys(device_of))
        layout[step] = _StepRows(len(places), len(step_pairs), device_list)
        for i in sorted(range(len(step_pairs)), key=lambda i: device_list.index(device_of[i])):
            row_of_pair[step_pairs[i]] = len(places)
            names.append(mem.nodes[node_of[i]])
            first_us = int(times[first[step_pairs[i]]])
            places.append(finder.place(names[-1], first_us, device_of[i]))
    records = _records(mem, sel, row_of_pair[rank], times, places, names)
    for step, rows in layout.items():
        memory = _row_range(records, rows.first, rows.first + rows.count)
        memory.devices = rows.devices
        step_places = places[rows.first : rows.first + rows.count]
        memory.dev = np.asarray([rows.devices.index(p.device) for p in step_places], np.int32)
        keep = np.ones(len(columns[step]), dtype=bool)
        keep[[p.row for p in step_places if p.row >= 0]] = False
        if pending is None:
            columns[step] = StepMemory(keep, memory).join(columns[step])
        else:
            pending[step] = StepMemory(keep, memory)


def _row_range(cols: StepColumns, lo: int, hi: int) -> StepColumns:
    """Rows ``lo`` to ``hi`` of ``cols`` (sparse columns sorted by row; no devices)."""
    fields: dict[str, Any] = {name: getattr(cols, name)[lo:hi] for name in _ROW_FIELDS}
    for row_field, sparse in (*_SPARSE, ("r_row", ("raw",))):
        rows = getattr(cols, row_field)
        a, b = np.searchsorted(rows, [lo, hi])
        fields[row_field] = (rows[a:b] - lo).astype(np.int32)
        fields.update((name, getattr(cols, name)[a:b]) for name in sparse)
    return StepColumns(name=cols.name[lo:hi], label=cols.label[lo:hi], untimed=cols.untimed[lo:hi],
                       has_step_stats=cols.has_step_stats, **fields)  # fmt: skip


def _records(
    mem: MemoryColumns, sel: I64, ev_row: I64, times: I64, places: list[_Place], names: list[str]
) -> StepColumns:
    """The memory rows (one per place) of events ``sel``, in step columns."""
    n_rows = len(places)
    segs = _segments(ev_row, mem.allocator[sel], len(mem.allocators))
    order, starts = segs.order, segs.starts
    delta = mem.delta[sel][order]
    seg_id = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(order))))
    running = np.cumsum(delta)
    running -= np.where(starts > 0, running[np.maximum(starts - 1, 0)], 0)[seg_id]
    seg_total = np.add.reduceat(np.maximum(delta, 0), starts)
    seg_peak = np.maximum(np.maximum.reduceat(running, starts), 0)
    seg_live = np.maximum(running[np.append(starts[1:], len(order)) - 1], 0)
    seg_in_use = np.maximum(np.maximum.reduceat(mem.in_use[sel][order], starts), 0)
    gpu = np.asarray(["GPU" in mem.allocators[a] for a in segs.allocator.tolist()], dtype=bool)
    out = StepColumns(
        name=names,
        label=[p.label for p in places],
        start=np.asarray([p.start for p in places], dtype=np.int64),
        rel=np.asarray([p.rel for p in places], dtype=np.int64),
        has_step_stats=True,
    )
    out.total = _row_sum(segs.row, seg_total, n_rows)
    out.peak = _row_sum(segs.row, seg_peak, n_rows)
    out.live = _row_sum(segs.row, seg_live, n_rows)
    out.gpu_allocs = np.bincount(segs.row[gpu], minlength=n_rows).astype(np.int32)
    out.gpu_in_use = np.zeros(n_rows, dtype=np.int64)
    np.maximum.at(out.gpu_in_use, segs.row[gpu], seg_in_use[gpu])
    out.temp = np.zeros(n_rows, dtype=np.int64)
    out.persist = np.zeros(n_rows, dtype=np.int64)
    ev_gpu = gpu[seg_id]
    out.a_row = ev_row[order][ev_gpu].astype(np.int32)
    out.a_micros = times[order][ev_gpu]
    out.a_bytes = delta[ev_gpu]
    outputs = _outputs(mem, sel, ev_row, out)
    records, offsets = allocation_records(times[order], delta)
    ends = np.append(starts[1:], len(order))
    # Each row's allocator entries and outputs are made as its bytes are written
    # (rows in order, their segments in order): no object per entry outlives its row.
    seg_of_row = np.searchsorted(segs.row, np.arange(n_rows + 1)).tolist()
    allocators = [mem.allocators[a] for a in segs.allocator.tolist()]
    totals, peaks, lives = seg_total.tolist(), seg_peak.tolist(), seg_live.tolist()
    in_use, begin, end = seg_in_use.tolist(), offsets[starts].tolist(), offsets[ends].tolist()

    def uses(row: int) -> list[AllocatorUse]:
        return [
            AllocatorUse(allocators[s], totals[s], peaks[s], lives[s], in_use[s],
                         records[begin[s] : end[s]])
            for s in range(seg_of_row[row], seg_of_row[row + 1])
        ]  # fmt: skip

    out.r_row = np.arange(n_rows, dtype=np.int32)
    out.raw = [
        node_exec_stats(names[r], p.label, p.start, p.rel, uses(r), outputs.of(r))
        for r, p in enumerate(places)
    ]
    out.untimed = np.asarray([p.row < 0 for p in places], dtype=bool)
    return out


def _row_sum(rows: I64, values: I64, n: int) -> I64:
    out = np.zeros(n, dtype=np.int64)
    np.add.at(out, rows, values)
    return out


class _Outputs:
    """The outputs of each row in columns; :meth:`of` makes a row's objects."""

    def __init__(self, mem: MemoryColumns, bounds: list[int], columns: list[I64]) -> None:
        self.mem = mem
        self.bounds = bounds
        self.columns = columns

    def of(self, row: int) -> list[OutputTensor]:
        """Row ``row``'s outputs, by time."""
        mem, low, high = self.mem, self.bounds[row], self.bounds[row + 1]
        return [
            OutputTensor(slot, dtype, mem.shapes[shape], requested, size,
                         mem.allocators[allocator], addr)
            for slot, dtype, shape, requested, size, allocator, addr in zip(
                *(column[low:high].tolist() for column in self.columns), strict=True
            )
        ]  # fmt: skip


def _outputs(mem: MemoryColumns, sel: I64, ev_row: I64, out: StepColumns) -> _Outputs:
    """The outputs (allocations naming a shape) of each row, by time, into ``out``'s
    ``o_*`` columns; returns them by row."""
    shape, delta = mem.shape[sel], mem.delta[sel]
    pos = np.flatnonzero((delta > 0) & (shape >= 0))
    pos = pos[np.argsort(ev_row[pos], kind="stable")]
    rows = ev_row[pos]
    slots = np.arange(len(pos)) - np.searchsorted(rows, rows, side="left")
    requested, addr = mem.requested[sel][pos], mem.addr[sel][pos]
    out.o_row = rows.astype(np.int32)
    out.o_slot = slots.astype(np.int32)
    out.o_bytes = np.maximum(delta[pos], requested)
    out.o_ptr = addr.astype(np.uint64)
    bounds = np.searchsorted(rows, np.arange(len(out.name) + 1)).tolist()
    # Kept as arrays, read into Python a row at a time (as its bytes are written).
    columns = [slots, mem.dtype[sel][pos], shape[pos], requested, delta[pos],
               mem.allocator[sel][pos], addr]  # fmt: skip
    return _Outputs(mem, bounds, columns)


# ------------------------------------------------------------------ cutting and joining

_ROW_FIELDS = ("start", "rel", "total", "peak", "live", "gpu_allocs", "gpu_in_use", "temp",
               "persist")  # fmt: skip
_SPARSE = (("o_row", ("o_slot", "o_bytes", "o_ptr")), ("a_row", ("a_micros", "a_bytes")))


def take_rows(cols: StepColumns, keep: np.ndarray) -> StepColumns:
    """The rows of ``cols`` where ``keep`` is true (sparse entries follow their rows)."""
    if keep.all():
        return cols
    new_index = np.cumsum(keep) - 1
    fields: dict[str, Any] = {name: getattr(cols, name)[keep] for name in _ROW_FIELDS}
    for row_field, sparse in _SPARSE:
        rows = getattr(cols, row_field)
        sel = keep[rows] if rows.size else np.zeros(0, dtype=bool)
        fields[row_field] = new_index[rows[sel]].astype(np.int32)
        fields.update((name, getattr(cols, name)[sel]) for name in sparse)
    r_keep = keep[cols.r_row] if cols.r_row.size else np.zeros(0, dtype=bool)
    listed = keep.tolist()
    return StepColumns(
        devices=list(cols.devices),
        dev=cols.dev[keep],
        name=list(compress(cols.name, listed)),
        label=list(compress(cols.label, listed)),
        untimed=cols.untimed[keep] if cols.untimed.size else cols.untimed,
        r_row=new_index[cols.r_row[r_keep]].astype(np.int32),
        raw=list(compress(cols.raw, r_keep.tolist())),
        has_step_stats=cols.has_step_stats,
        **fields,
    )


def concat_columns(a: StepColumns, b: StepColumns) -> StepColumns:
    """The rows of ``a`` then those of ``b`` (devices of ``b`` after ``a``'s)."""
    n, d = len(a), len(a.devices)
    fields: dict[str, Any] = {
        name: np.concatenate([getattr(a, name), getattr(b, name)]) for name in _ROW_FIELDS
    }
    if a.untimed.size or b.untimed.size:
        fields["untimed"] = np.concatenate([_untimed(a), _untimed(b)])
    for row_field, sparse in (*_SPARSE, ("r_row", ())):
        rows = np.concatenate([getattr(a, row_field), getattr(b, row_field) + n])
        fields[row_field] = rows.astype(np.int32)
        fields.update(
            (name, np.concatenate([getattr(a, name), getattr(b, name)])) for name in sparse
        )
    return StepColumns(
        devices=a.devices + b.devices,
        dev=np.concatenate([a.dev, b.dev + d]).astype(np.int32),
        name=a.name + b.name,
        label=a.label + b.label,
        raw=a.raw + b.raw,
        has_step_stats=a.has_step_stats or b.has_step_stats,
        **fields,
    )


def _untimed(cols: StepColumns) -> np.ndarray:
    return cols.untimed if cols.untimed.size else np.zeros(len(cols), dtype=bool)
