"""Allocator events of an XSpace as the memory records of its steps.

TensorFlow's and XLA's allocators write one instant event per allocation and
per free on the thread that asked (``MemoryAllocation`` / ``MemoryDeallocation``,
stats ``allocator_name``, ``bytes_allocated`` (the allocator's bytes in use after
the event), ``allocation_bytes``, ``requested_bytes``, ``addr``, ``tf_op``,
``region_type``, ``data_type``, ``shape``). :func:`add_memory` turns them into
the model's memory records (what a RunMetadata FULL_TRACE step holds, in
columns: :class:`~tfprof_lite.model.memory_records.MemoryRecords`), so the
memory profile, the views' memory columns, the report and the advisor read
them unchanged:

* each event belongs to a step as the ops do (inside a step root, or in the gap
  before it; events before the first root or after the last one belong to
  none) and to a node: the node its ``tf_op`` stat names (``name:type`` or a
  name), else the TF op running on its thread around it, else a new node
  named by ``tf_op`` (eager ops name their type), else the XLA program
  executing on its thread around it (node ``<module>``, op type
  :data:`PROGRAM_TYPE`), else node ``<allocator> (no op)`` (op type
  :data:`NO_OP_TYPE`); a free belongs to the node that made the allocation at
  its address (same allocator), else (no address) to the op its ``tf_op``
  names, else to the allocator's no-op node (an allocation made before the
  profile);
* per step and node, one record with one allocator use per allocator
  (``AllocatorMemoryUsed``): ``allocation_records`` (µs, bytes; frees negative),
  ``total_bytes`` (allocated), ``peak_bytes`` (highest running net),
  ``live_bytes`` (net at the end, not below 0), ``allocator_bytes_in_use`` (the
  highest ``bytes_allocated`` the allocator reported at those events); and one
  output per allocation whose event names a shape (dtype, shape, requested and
  allocated bytes, address);
* that record takes the place of the node's first record on its canonical
  device in the step (a TF op's or a program execution's host record keeps
  its times), or is new: on the host device for nodes with host records, else on
  ``.../device:GPU:<n>`` for a ``GPU_<n>_...`` allocator, else on the host
  device, at the node's first event, marked ``untimed`` so
  that it adds no time and no run (the model places the records,
  :mod:`tfprof_lite.model.record_memory`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from tfprof_lite.formats.xspace.read.events import EventTable
from tfprof_lite.formats.xspace.read.intervals import LineIntervals
from tfprof_lite.formats.xspace.read.memory_steps import add_memory_records
from tfprof_lite.formats.xspace.read.steps import StepRoots, program_of, step_of
from tfprof_lite.formats.xspace.wire.columns import (
    KIND_COMPRESSED,
    KIND_INT64,
    KIND_REF,
    KIND_STR,
    KIND_UINT64,
)
from tfprof_lite.model.records import NodeSpec
from tfprof_lite.model.step_records import LANE_GPU, LANE_HOST, Lane, StepRecords

__all__ = [
    "MEMORY_EVENTS",
    "NO_OP_TYPE",
    "PROGRAM_TYPE",
    "MemoryColumns",
    "MemoryEvent",
    "MemoryStats",
    "add_memory",
    "memory_columns",
    "memory_events",
    "memory_stats",
]

I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

#: The allocator events' names: an allocation, a free.
MEMORY_EVENTS = ("MemoryAllocation", "MemoryDeallocation")
#: Op type of a node standing for an XLA program's buffers.
PROGRAM_TYPE = "XlaModule"
#: Op type of the node holding an allocator's events outside any op.
NO_OP_TYPE = "AllocatorEvents"

_GPU_ALLOCATOR = re.compile(r"GPU_(\d+)_")
_TEXT_KINDS = (KIND_STR, KIND_REF, KIND_COMPRESSED)
_INT_KINDS = (KIND_INT64, KIND_UINT64)
_INT_STATS = ("allocation_bytes", "requested_bytes", "addr", "bytes_allocated",
              "bytes_reserved", "data_type")  # fmt: skip
_TEXT_STATS = ("allocator_name", "tf_op", "shape")
# What an event's owner lookup adds to the graph: nothing, its tf_op's node, its
# program's node, its allocator's no-op node.
_NEW_NONE, _NEW_TF_OP, _NEW_PROGRAM, _NEW_NO_OP = 0, 1, 2, 3


@dataclass
class MemoryEvent:
    """One allocator event: when, which allocator, signed bytes, and its node."""

    event: int
    start_ps: int
    allocator: str
    delta: int
    in_use: int
    addr: int
    node: str
    requested: int = 0
    dtype: int = 0
    shape: tuple[int, ...] | None = None


@dataclass
class MemoryColumns:
    """The allocator events of a file by time (start, then row), in columns:
    ``allocator``, ``node`` and ``shape`` index :attr:`allocators`, :attr:`nodes`
    and :attr:`shapes` (shape -1: the event names none)."""

    event: I64
    start_ps: I64
    allocator: I64
    delta: I64
    in_use: I64
    addr: I64
    node: I64
    requested: I64
    dtype: I64
    shape: I64
    allocators: list[str]
    nodes: list[str]
    shapes: list[tuple[int, ...]]

    def __len__(self) -> int:
        return len(self.event)

    def events(self) -> list[MemoryEvent]:
        """The events one object each."""
        shapes = [self.shapes[s] if s >= 0 else None for s in self.shape.tolist()]
        columns = zip(
            self.event.tolist(), self.start_ps.tolist(), self.allocator.tolist(),
            self.delta.tolist(), self.in_use.tolist(), self.addr.tolist(), self.node.tolist(),
            self.requested.tolist(), self.dtype.tolist(), shapes,
        )  # fmt: skip
        return [
            MemoryEvent(e, t, self.allocators[a], d, u, p, self.nodes[n], r, k, s)
            for e, t, a, d, u, p, n, r, k, s in columns
        ]


class _Names:
    """Interned node names."""

    def __init__(self) -> None:
        self.code: dict[str, int] = {}
        self.names: list[str] = []

    def __call__(self, name: str) -> int:
        code = self.code.get(name)
        if code is None:
            code = self.code[name] = len(self.names)
            self.names.append(name)
        return code


def _shape(text: Any) -> tuple[int, ...] | None:
    """``"[64,128]"`` as dims; None when not a shape."""
    if not isinstance(text, str) or not text.startswith("[") or not text.endswith("]"):
        return None
    inner = text[1:-1].strip()
    try:
        return tuple(int(d) for d in inner.split(",")) if inner else ()
    except ValueError:
        return None


@dataclass
class MemoryStats:
    """The allocator events of the host planes by (start, row) (``rows``),
    which are allocations, and their memory stats (see :func:`memory_stats`)."""

    rows: I64
    is_alloc: Bools
    stats: dict[str, npt.NDArray[np.signedinteger[Any]]]


def memory_stats(table: EventTable) -> MemoryStats:
    """The allocator events of ``table`` and their memory stats, one column per
    stat name: the value of the int stats (0 when absent), the ``strings`` index
    of the text ones (-1 when absent); ``allocation_bytes``, ``bytes_allocated``
    and ``bytes_reserved`` as what is read of them: ``bytes`` (allocated, else
    requested) and ``in_use`` (allocated + reserved). Read while the file's
    event stats are there; the rest of :func:`memory_columns` needs only the
    table's times."""
    rows, is_alloc = _memory_rows(table)
    if not len(rows):
        return MemoryStats(rows, is_alloc, {})
    stats = _stat_columns(table, rows)
    # Kept as what the records read: each event's bytes (allocated, else
    # requested) and the allocator's bytes in use (allocated + reserved).
    allocated = stats.pop("allocation_bytes")
    stats["bytes"] = np.where(allocated != 0, allocated, stats["requested_bytes"])
    del allocated
    stats["in_use"] = stats.pop("bytes_allocated")
    stats["in_use"] += stats.pop("bytes_reserved")
    return MemoryStats(rows, is_alloc, stats)


def _memory_rows(table: EventTable) -> tuple[I64, Bools]:
    """The allocator events of the host planes by (start, row), and which are allocations."""
    cols = table.cols
    metas = [m for m, name in enumerate(cols.meta_name) if name in MEMORY_EVENTS]
    host = table.host_events()
    rows = host[_among(cols.event_meta[host], metas)]
    rows = rows[np.lexsort((rows, table.start[rows]))]
    allocations = [m for m in metas if cols.meta_name[m] == MEMORY_EVENTS[0]]
    return rows, _among(cols.event_meta[rows], allocations)


def _among(values: npt.NDArray[Any], wanted: Iterable[int]) -> npt.NDArray[np.bool_]:
    """Where ``values`` is one of the few ``wanted``."""
    out = np.zeros(len(values), dtype=bool)
    for value in wanted:
        out |= values == value
    return out


def _stat_columns(table: EventTable, rows: I64) -> dict[str, npt.NDArray[np.signedinteger[Any]]]:
    """The memory stats of events ``rows`` (see :func:`memory_stats`; text
    columns int32), read from the stat columns at once."""
    cols = table.cols
    stats = cols.event_stats
    position = np.full(len(table) + 1, -1, dtype=np.int32)
    position[rows] = np.arange(len(rows), dtype=np.int32)
    out: dict[str, npt.NDArray[np.signedinteger[Any]]] = {}
    for name in _INT_STATS + _TEXT_STATS:
        text = name in _TEXT_STATS
        column: npt.NDArray[np.signedinteger[Any]] = np.full(
            len(rows), -1 if text else 0, dtype=np.int32 if text else np.int64
        )
        key = cols.key_of(name)
        if key >= 0:
            found = np.flatnonzero(stats.key == key)
            found = found[_among(stats.kind[found], _TEXT_KINDS if text else _INT_KINDS)]
            owner = position[np.searchsorted(cols.event_stat_at, found, side="right") - 1]
            column[owner[owner >= 0]] = stats.value[found[owner >= 0]]
        out[name] = column
    return out


def _texts(table: EventTable, column: npt.NDArray[Any]) -> tuple[list[str], I64]:
    """The distinct texts of a text stat column ("" when absent) and each event's."""
    strings = table.cols.strings
    uniq, inverse = _distinct(column, len(strings))
    return [strings[i] if i >= 0 else "" for i in uniq.tolist()], inverse


def _distinct(values: npt.NDArray[Any], size: int) -> tuple[I64, I64]:
    """The distinct values (each in -1 .. size - 1), sorted, and each value's
    index among them; by a presence table, without sorting."""
    present = np.zeros(size + 1, dtype=bool)
    present[values + 1] = True
    rank = np.cumsum(present) - 1
    return np.flatnonzero(present) - 1, rank[values + 1]


def _enclosing(
    table: EventTable, tf_ops: dict[int, tuple[str, str]], lines: I64, times: I64, names: _Names
) -> tuple[I64, I64]:
    """For each (line, time): the node of the TF op running there and that of the
    XLA program executing there (-1: none), as the innermost such host event
    on the line (see :class:`~tfprof_lite.formats.xspace.read.intervals.LineIntervals`)."""
    cols = table.cols
    host = table.host_events()
    on_line = np.zeros(len(cols.line_name) + 1, dtype=bool)
    on_line[lines] = True
    near = host[on_line[cols.event_line[host]]]
    op_mask = np.zeros(len(table), dtype=bool)
    op_mask[np.fromiter(tf_ops, dtype=np.int64, count=len(tf_ops))] = True
    is_op = op_mask[near]
    del op_mask
    # Which metadata run a program, decided once each (index + 1: -1 is none).
    near_meta = cols.event_meta[near]
    present = np.zeros(len(cols.meta_name) + 1, dtype=bool)
    present[near_meta[~is_op] + 1] = True
    modules = {
        m: program_of(cols.meta_name[m]) if m >= 0 else ""
        for m in (np.flatnonzero(present) - 1).tolist()
    }
    runs = np.zeros(len(cols.meta_name) + 1, dtype=bool)
    runs[[m + 1 for m, module in modules.items() if module]] = True
    ops, programs = near[is_op], near[~is_op & runs[near_meta + 1]]
    del near, near_meta, is_op
    meta = cols.event_meta
    op_node = _around(table, ops, lines, times, lambda e: names(tf_ops[e][0]))
    program_node = _around(table, programs, lines, times, lambda e: names(modules[int(meta[e])]))
    return op_node, program_node


def _around(
    table: EventTable, rows: I64, lines: I64, times: I64, node_of: Callable[[int], int]
) -> I64:
    """The node (``node_of`` an event row) of the innermost event of ``rows``
    around each (line, time); -1 when none."""
    spans = LineIntervals(rows, table.cols.event_line[rows].astype(np.int64),
                          table.start[rows], table.end[rows])  # fmt: skip
    at = spans.around(lines, times)
    hit = at >= 0
    found, inverse = _distinct(at[hit], len(spans))
    out = np.full(len(times), -1, dtype=np.int64)
    if len(found):
        codes = _codes([node_of(int(spans.rows[p])) for p in found.tolist()])
        out[hit] = codes[inverse]
    return out


def _matched_allocations(is_alloc: Bools, allocator: I64, addr: I64) -> I64:
    """For each free, the allocation it frees (-1: none): the event just before it
    at its address of its allocator, when that is an allocation (a free
    frees the latest allocation not freed yet)."""
    out = np.full(len(addr), -1, dtype=np.int64)
    pos = np.flatnonzero(addr != 0)
    pos = pos[np.lexsort((pos, addr[pos], allocator[pos]))]
    prev, this = pos[:-1], pos[1:]
    same = (allocator[this] == allocator[prev]) & (addr[this] == addr[prev])
    hit = same & is_alloc[prev] & ~is_alloc[this]
    out[this[hit]] = prev[hit]
    return out


def _codes(values: list[int]) -> I64:
    return np.asarray(values, dtype=np.int64)


def _empty() -> MemoryColumns:
    z = np.zeros(0, dtype=np.int64)
    return MemoryColumns(z, z, z, z, z, z, z, z, z, z, [], [], [])


def memory_columns(
    table: EventTable,
    tf_ops: dict[int, tuple[str, str]],
    known: set[str],
    found: MemoryStats | None = None,
) -> tuple[MemoryColumns, dict[str, str]]:
    """Every allocator event of the host planes by time, and the op type of each
    node they name that ``known`` (the graph's nodes) lacks, in the order the
    events first name them (``found``: :func:`memory_stats` of ``table``, read
    earlier, emptied of its stats here; None: read now)."""
    if found is None:
        found = memory_stats(table)
    rows, is_alloc, stats = found.rows, found.is_alloc, found.stats
    # Read once: the stat columns the result does not keep go with this call.
    found.stats = {}
    if not len(rows):
        return _empty(), {}
    names = _Names()
    texts, inverse = _texts(table, stats["allocator_name"])
    allocators = list(dict.fromkeys(text or "unknown allocator" for text in texts))
    allocator = _codes([allocators.index(t or "unknown allocator") for t in texts])[inverse]
    tf_texts, tf_at = _texts(table, stats["tf_op"])
    tf_name, tf_kind = [], []
    for text in tf_texts:
        name, _, kind = text.rpartition(":")
        if not name:
            name, kind = text, ""
        tf_name.append(names(name) if name else -1)
        tf_kind.append(kind or name)
    name_code = _codes(tf_name)[tf_at]
    in_known = np.asarray([names.names[c] in known if c >= 0 else False for c in tf_name])[tf_at]
    times = table.start[rows]
    op_node, program_node = _enclosing(
        table, tf_ops, table.cols.event_line[rows].astype(np.int64), times, names
    )
    no_op = _codes([names(f"{a} (no op)") for a in allocators])[allocator]
    program_new = np.asarray([n not in known for n in names.names], dtype=bool)
    # The owner of an allocation (see the module docstring) and what it adds.
    node = np.select(
        [in_known, op_node >= 0, name_code >= 0, program_node >= 0],
        [name_code, op_node, name_code, program_node],
        no_op,
    )
    new = np.select(
        [in_known, op_node >= 0, name_code >= 0, program_node >= 0],
        [_NEW_NONE, _NEW_NONE, _NEW_TF_OP,
         np.where(program_new[np.maximum(program_node, 0)], _NEW_PROGRAM, _NEW_NONE)],
        _NEW_NO_OP,
    )  # fmt: skip
    # A free: the node of the allocation it frees, else its tf_op's owner, else no op.
    addr = stats["addr"]
    freed = _matched_allocations(is_alloc, allocator, addr)
    matched = ~is_alloc & (freed >= 0)
    node[matched] = node[freed[matched]]
    new[matched] = _NEW_NONE
    lost = ~is_alloc & (freed < 0) & ~np.asarray([bool(t) for t in tf_texts], dtype=bool)[tf_at]
    node[lost] = no_op[lost]
    new[lost] = _NEW_NO_OP
    nbytes = stats["bytes"]
    shape, shapes = _shapes(table, stats["shape"])
    mem = MemoryColumns(
        rows, times, allocator, np.where(is_alloc, nbytes, -nbytes),
        stats["in_use"], addr, node,
        stats["requested_bytes"], stats["data_type"], shape, allocators, names.names, shapes,
    )  # fmt: skip
    return mem, _new_nodes(node, new, (tf_kind, tf_at), names.names)


def _shapes(table: EventTable, column: npt.NDArray[Any]) -> tuple[I64, list[tuple[int, ...]]]:
    """Each event's shape (-1: none) among the distinct shapes of a shape column."""
    texts, at = _texts(table, column)
    parsed = [_shape(text) for text in texts]
    code = np.cumsum([dims is not None for dims in parsed]) - 1
    code[[dims is None for dims in parsed]] = -1
    return code[at], [dims for dims in parsed if dims is not None]


def _new_nodes(
    node: I64, new: I64, tf_kinds: tuple[list[str], I64], names: list[str]
) -> dict[str, str]:
    """The op type of each node the events add, in the order they first name
    them (the first event's kind of addition decides; ``tf_kinds``: the
    distinct tf_op kinds and each event's)."""
    kind_of, kind_at = tf_kinds
    kinds = {_NEW_PROGRAM: PROGRAM_TYPE, _NEW_NO_OP: NO_OP_TYPE}
    out: dict[str, str] = {}
    pos = np.flatnonzero(new != _NEW_NONE)
    _, first = np.unique(node[pos], return_index=True)
    for at in pos[np.sort(first)].tolist():
        tf_kind = kind_of[kind_at[at]]
        out[names[node[at]]] = tf_kind if new[at] == _NEW_TF_OP else kinds[int(new[at])]
    return out


def memory_events(
    table: EventTable, tf_ops: dict[int, tuple[str, str]], known: set[str]
) -> tuple[list[MemoryEvent], dict[str, str]]:
    """:func:`memory_columns` with one :class:`MemoryEvent` per event."""
    mem, new_nodes = memory_columns(table, tf_ops, known)
    return mem.events(), new_nodes


def _lane_of(allocator: str) -> Lane:
    found = _GPU_ALLOCATOR.match(allocator)
    return Lane(LANE_GPU, int(found.group(1))) if found else Lane(LANE_HOST)


def add_memory(
    table: EventTable,
    tf_ops: dict[int, tuple[str, str]],
    roots: list[int] | StepRoots,
    records: StepRecords,
    nodes: list[NodeSpec],
    host_nodes: set[str] | frozenset[str] = frozenset(),
    found: MemoryStats | None = None,
    settle: Callable[[], None] = lambda: None,
) -> MemoryColumns:
    """Give the step ``records`` the memory records of the allocator events of
    ``table`` (:mod:`~tfprof_lite.formats.xspace.read.memory_steps`) and
    ``nodes`` the nodes they need; returns the events (by time).

    ``roots`` are the step roots (event rows, by start); an event's step is the
    one :func:`~tfprof_lite.formats.xspace.read.steps.step_of` gives its time (each
    root ending at its :attr:`~StepRoots.ends` when later: its work's end).
    ``host_nodes`` are nodes other than the TF ops that have host records (XLA
    program executions): their memory goes on the host device, beside those.
    ``found``: :func:`memory_stats` of ``table``, read earlier (None: now);
    ``settle`` runs once the events' owners are found (the caller's chance to
    give the memory that took back to the system).
    """
    known = {spec.name for spec in nodes}
    mem, new_nodes = memory_columns(table, tf_ops, known, found)
    del found
    settle()
    if not len(mem):
        return mem
    nodes.extend(NodeSpec(name=name, op=kind) for name, kind in new_nodes.items())
    op_names = {name for name, _ in tf_ops.values()} | set(host_nodes)
    lanes = [Lane(LANE_HOST)] * len(mem.nodes)
    codes, first = np.unique(mem.node, return_index=True)
    for code, at in zip(codes.tolist(), first.tolist()):
        if mem.nodes[code] not in op_names:
            lanes[code] = _lane_of(mem.allocators[mem.allocator[at]])
    rows = roots.events if isinstance(roots, StepRoots) else roots
    ends = table.end[np.asarray(rows, dtype=np.int64)]
    if isinstance(roots, StepRoots):
        ends = np.maximum(ends, np.asarray(roots.ends, dtype=np.int64))
    steps = step_of(table.start[np.asarray(rows, dtype=np.int64)], ends, mem.start_ps)
    add_memory_records(records, mem, steps, lanes)
    return mem
