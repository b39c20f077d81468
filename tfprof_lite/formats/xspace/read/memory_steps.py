"""The allocator events of each step as the model's memory records (columns).

:func:`memory_records` gives, for the allocator events of every step (see
:mod:`tfprof_lite.formats.xspace.read.memory`), per step and node one
record: one allocator use per allocator (by first event) with its events by
time, and one output per allocation that names a shape, all in the columns of
a :class:`~tfprof_lite.model.memory_records.MemoryRecords`, computed over the
events at once. In a step, the records come by lane (the first node's first),
then by their node's first event. The model places them among the step's
records (:mod:`tfprof_lite.model.record_memory`): nothing here knows a
step's other records, a device string or a serialized message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from tfprof_lite.base.arrays import first_seen
from tfprof_lite.model.exec_columns import segment_sum
from tfprof_lite.model.memory_records import MemoryRecords
from tfprof_lite.model.step_records import Lane, StepRecords, micros

if TYPE_CHECKING:
    from tfprof_lite.formats.xspace.read.memory import MemoryColumns

__all__ = ["add_memory_records", "memory_records"]

I64 = npt.NDArray[np.int64]


@dataclass
class _Segments:
    """The events by record, allocator (first event order) and time."""

    order: I64  # positions into the events
    starts: I64  # first sorted position of each (record, allocator) segment
    record: I64  # each segment's record
    allocator: I64  # each segment's allocator


def _segments(ev_record: I64, ev_alloc: I64, n_alloc: int) -> _Segments:
    pair = ev_record * n_alloc + ev_alloc
    # Segments of a record by the first event of their allocator; records in order.
    distinct, _, rank = first_seen(pair)
    seg_records = distinct // n_alloc
    seg_order = np.lexsort((np.arange(len(distinct)), seg_records))
    seg_of = np.empty(len(distinct), dtype=np.int64)
    seg_of[seg_order] = np.arange(len(distinct))
    seg = seg_of[rank]
    order = np.argsort(seg, kind="stable")
    starts = np.searchsorted(seg[order], np.arange(len(distinct)))
    return _Segments(order, starts, seg_records[seg_order], distinct[seg_order] % n_alloc)


def add_memory_records(
    records: StepRecords, mem: MemoryColumns, steps: I64, lanes: list[Lane]
) -> None:
    """Give ``records`` the memory records of the events ``mem`` (``steps``: per
    event, its step, -1 for none; ``lanes``: per node code, its lane), their
    node names and lanes added to the records' tables."""
    texts = {text: at for at, text in enumerate(records.texts)}
    node_text = np.asarray([texts.setdefault(name, len(texts)) for name in mem.nodes], np.int32)
    records.texts.extend(list(texts)[len(records.texts) :])
    known = {lane: at for at, lane in enumerate(records.lanes)}
    node_lane = np.asarray([known.setdefault(lane, len(known)) for lane in lanes], np.int32)
    records.lanes.extend(list(known)[len(records.lanes) :])
    found = memory_records(mem, steps, node_lane.reshape(-1), records.steps, records.origin_ns)
    found.node = node_text.reshape(-1)[found.node] if len(found) else found.node
    records.memory = found


def memory_records(
    mem: MemoryColumns, steps: I64, node_lane: npt.NDArray[np.int32], n_steps: int, origin_ns: int
) -> MemoryRecords:
    """The memory records of the events of ``mem`` in steps ``0:n_steps`` (see
    the module docstring; ``node`` holds ``mem``'s node codes)."""
    sel = np.flatnonzero((steps >= 0) & (steps < n_steps))
    sel = sel[np.argsort(steps[sel], kind="stable")]  # by step, by time in one
    n_nodes = max(len(mem.nodes), 1)
    pairs, first, rank = first_seen(steps[sel] * n_nodes + mem.node[sel])
    p_step, p_node = pairs // n_nodes, pairs % n_nodes
    # Records by step, then lane by its first pair, then pair.
    p_lane = node_lane[p_node].astype(np.int64) if len(pairs) else p_node
    lane_key = p_step * (int(node_lane.max(initial=0)) + 1) + p_lane
    _, lane_first, lane_rank = first_seen(lane_key)
    order = np.lexsort((np.arange(len(pairs)), lane_first[lane_rank], p_step))
    record_of_pair = np.empty(len(pairs), dtype=np.int64)
    record_of_pair[order] = np.arange(len(pairs))
    out = MemoryRecords(
        step=p_step[order], node=p_node[order].astype(np.int32),
        lane=p_lane[order].astype(np.int32), first_ps=mem.start_ps[sel][first][order],
        allocators=list(mem.allocators), shapes=list(mem.shapes),
    )  # fmt: skip
    ev_record = record_of_pair[rank]
    _uses(out, mem, sel, ev_record, micros(origin_ns, mem.start_ps[sel]))
    _outputs(out, mem, sel, ev_record)
    return out


def _uses(out: MemoryRecords, mem: MemoryColumns, sel: I64, ev_record: I64, times: I64) -> None:
    """Each record's allocator uses (per allocator: its sums and its events)."""
    n = len(out)
    segs = _segments(ev_record, mem.allocator[sel], max(len(mem.allocators), 1))
    order, starts = segs.order, segs.starts
    delta = mem.delta[sel][order]
    ends = np.append(starts[1:], len(order)).astype(np.int64)
    seg_id = np.repeat(np.arange(len(starts)), ends - starts)
    running = np.cumsum(delta)
    running -= np.where(starts > 0, running[np.maximum(starts - 1, 0)], 0)[seg_id]
    if len(starts):
        out.u_total = np.add.reduceat(np.maximum(delta, 0), starts)
        out.u_peak = np.maximum(np.maximum.reduceat(running, starts), 0)
        out.u_live = np.maximum(running[ends - 1], 0)
        out.u_in_use = np.maximum(np.maximum.reduceat(mem.in_use[sel][order], starts), 0)
    out.u_allocator = segs.allocator.astype(np.int32)
    out.use_at = np.searchsorted(segs.record, np.arange(n + 1)).astype(np.int64)
    out.event_at = np.append(starts, len(order)).astype(np.int64)
    out.e_micros, out.e_bytes = times[order], delta
    gpu = np.asarray(["GPU" in name for name in mem.allocators], dtype=bool)[segs.allocator]
    out.total = segment_sum(segs.record, out.u_total, n)
    out.peak = segment_sum(segs.record, out.u_peak, n)
    out.live = segment_sum(segs.record, out.u_live, n)
    out.gpu_allocs = np.bincount(segs.record[gpu], minlength=n).astype(np.int32)
    out.gpu_in_use = np.zeros(n, dtype=np.int64)
    np.maximum.at(out.gpu_in_use, segs.record[gpu], out.u_in_use[gpu])


def _outputs(out: MemoryRecords, mem: MemoryColumns, sel: I64, ev_record: I64) -> None:
    """Each record's outputs (its allocations that name a shape), by time."""
    shape, delta = mem.shape[sel], mem.delta[sel]
    pos = np.flatnonzero((delta > 0) & (shape >= 0))
    pos = pos[np.argsort(ev_record[pos], kind="stable")]
    records = ev_record[pos]
    out.out_at = np.searchsorted(records, np.arange(len(out) + 1)).astype(np.int64)
    out.o_slot = (np.arange(len(pos)) - np.searchsorted(records, records)).astype(np.int32)
    out.o_allocator = mem.allocator[sel][pos].astype(np.int32)
    out.o_requested = mem.requested[sel][pos]
    out.o_allocated = delta[pos]
    out.o_ptr = mem.addr[sel][pos].astype(np.uint64)
    out.o_dtype = mem.dtype[sel][pos].astype(np.int32)
    out.o_shape = shape[pos].astype(np.int32)
