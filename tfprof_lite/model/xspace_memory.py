"""Allocator events of an XSpace as the memory records of its steps.

TensorFlow's and XLA's allocators write one instant event per allocation and
per free on the thread that asked (``MemoryAllocation`` / ``MemoryDeallocation``,
stats ``allocator_name``, ``bytes_allocated`` (the allocator's bytes in use after
the event), ``allocation_bytes``, ``requested_bytes``, ``addr``, ``tf_op``,
``region_type``, ``data_type``, ``shape``). :func:`add_memory` turns them into
what a RunMetadata FULL_TRACE step holds, so the memory profile, the views'
memory columns, the report and the advisor read them unchanged:

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
* per step and node, one ``NodeExecStats`` with one ``AllocatorMemoryUsed`` per
  allocator: ``allocation_records`` (µs, bytes; frees negative),
  ``total_bytes`` (allocated), ``peak_bytes`` (highest running net),
  ``live_bytes`` (net at the end, not below 0), ``allocator_bytes_in_use`` (the
  highest ``bytes_allocated`` the allocator reported at those events); and one
  output per allocation whose event names a shape (dtype, shape, requested and
  allocated bytes, address);
* that record takes the place of the node's first record on its canonical
  device in the step (a TF op's or a program execution's host record keeps
  its times), or is new: on the host device for nodes with host records, else on
  ``.../device:GPU:<n>`` for a ``GPU_<n>_...`` allocator, else on the host
  device, at the node's first event, marked ``untimed`` in the step columns so
  that it adds no time and no run.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tfprof_lite.model.records import NodeSpec
from tfprof_lite.model.xspace_events import EventTable
from tfprof_lite.model.xspace_steps import step_of
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto.steps import StepColumns, columns_from_message
from tfprof_lite.proto.xplane import KIND_COMPRESSED, KIND_INT64, KIND_REF, KIND_STR, KIND_UINT64

__all__ = [
    "MEMORY_EVENTS",
    "NO_OP_TYPE",
    "PROGRAM_TYPE",
    "MemoryEvent",
    "add_memory",
    "memory_events",
]

#: The allocator events' names: an allocation, a free.
MEMORY_EVENTS = ("MemoryAllocation", "MemoryDeallocation")
#: Op type of a node standing for an XLA program's buffers.
PROGRAM_TYPE = "XlaModule"
#: Op type of the node holding an allocator's events outside any op.
NO_OP_TYPE = "AllocatorEvents"

_HOST_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"
_GPU_ALLOCATOR = re.compile(r"GPU_(\d+)_")
_TEXT_KINDS = (KIND_STR, KIND_REF, KIND_COMPRESSED)
_INT_KINDS = (KIND_INT64, KIND_UINT64)
_PROGRAM = (
    re.compile(r"(?P<m>[^\s:]+):XLA \w+ module"),
    re.compile(r".*Execute \((?P<m>[^)]+)\)"),
)


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
class _Enclosing:
    """Host events of one kind (TF ops, XLA program executions) per line, by start."""

    names: dict[int, list[str]] = field(default_factory=dict)
    starts: dict[int, list[int]] = field(default_factory=dict)
    ends: dict[int, list[int]] = field(default_factory=dict)

    def add(self, line: int, name: str, start: int, end: int) -> None:
        self.names.setdefault(line, []).append(name)
        self.starts.setdefault(line, []).append(start)
        self.ends.setdefault(line, []).append(end)

    def around(self, line: int, t: int) -> str:
        """The innermost event on ``line`` spanning time ``t`` ("" when none)."""
        starts = self.starts.get(line)
        if not starts:
            return ""
        ends, names = self.ends[line], self.names[line]
        at = bisect.bisect_right(starts, t) - 1
        while at >= 0:
            if ends[at] >= t:
                return names[at]
            at -= 1
        return ""


def _enclosing(
    table: EventTable, tf_ops: dict[int, tuple[str, str]], lines: set[int]
) -> tuple[_Enclosing, ...]:
    """The TF ops and XLA program executions of host ``lines``."""
    ops, programs = _Enclosing(), _Enclosing()
    host = table.host_events()
    on_lines = host[np.isin(table.cols.event_line[host], list(lines))].tolist()
    module_of: dict[str, str] = {}
    starts = table.start
    for event in sorted(on_lines, key=lambda e: int(starts[e])):
        found = tf_ops.get(event)
        name = table.names[event]
        if found is None:
            if name not in module_of:
                module_of[name] = _program_of(name)
            if not module_of[name]:
                continue
        line, start, end = table.line_of(event), int(starts[event]), int(table.end[event])
        if found is not None:
            ops.add(line, found[0], start, end)
        else:
            programs.add(line, module_of[name], start, end)
    return ops, programs


def _program_of(name: str) -> str:
    """The XLA module an execution event runs (``""``: not one)."""
    for pattern in _PROGRAM:
        match = pattern.fullmatch(name)
        if match:
            return match.group("m")
    return ""


def _shape(text: Any) -> tuple[int, ...] | None:
    """``"[64,128]"`` as dims; None when not a shape."""
    if not isinstance(text, str) or not text.startswith("[") or not text.endswith("]"):
        return None
    inner = text[1:-1].strip()
    try:
        return tuple(int(d) for d in inner.split(",")) if inner else ()
    except ValueError:
        return None


_INT_STATS = ("allocation_bytes", "requested_bytes", "addr", "bytes_allocated",
              "bytes_reserved", "data_type")  # fmt: skip
_TEXT_STATS = ("allocator_name", "tf_op", "shape")


def _stat_columns(table: EventTable, rows: list[int]) -> dict[str, list[Any]]:
    """The memory stats of events ``rows``, one list per stat name (0 or "" when
    absent), read from the stat columns at once."""
    cols = table.cols
    stats = cols.event_stats
    at = cols.event_stat_at
    ev = np.asarray(rows, dtype=np.int64)
    lengths = (at[ev + 1] - at[ev]).astype(np.int64)
    owner = np.repeat(np.arange(len(rows)), lengths)
    idx = np.repeat(at[ev] - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
    keys, kinds, values = stats.key[idx], stats.kind[idx], stats.value[idx]
    out: dict[str, list[Any]] = {}
    for name in _INT_STATS + _TEXT_STATS:
        key = cols.key_of(name)
        text = name in _TEXT_STATS
        column: list[Any] = ["" if text else 0] * len(rows)
        if key >= 0:
            wanted = _TEXT_KINDS if text else _INT_KINDS
            sel = (keys == key) & np.isin(kinds, wanted)
            for row, value in zip(owner[sel].tolist(), values[sel].tolist()):
                column[row] = cols.strings[value] if text else value
        out[name] = column
    return out


def memory_events(
    table: EventTable, tf_ops: dict[int, tuple[str, str]], known: set[str]
) -> tuple[list[MemoryEvent], dict[str, str]]:
    """Every allocator event of the host planes by time, and the op type of each
    node they name that ``known`` (the graph's nodes) lacks."""
    names = table.names
    rows = [e for e in table.host_events().tolist() if names[e] in MEMORY_EVENTS]
    rows.sort(key=lambda e: (int(table.start[e]), e))
    if not rows:
        return [], {}
    ops, programs = _enclosing(table, tf_ops, {table.line_of(e) for e in rows})
    live: dict[tuple[str, int], str] = {}
    new_nodes: dict[str, str] = {}
    out: list[MemoryEvent] = []
    stats = _stat_columns(table, rows)
    for i, event in enumerate(rows):
        allocator = stats["allocator_name"][i] or "unknown allocator"
        tf_op = stats["tf_op"][i]
        nbytes = stats["allocation_bytes"][i] or stats["requested_bytes"][i]
        addr = stats["addr"][i]
        if names[event] == MEMORY_EVENTS[0]:
            node = _owner(table, event, allocator, tf_op, ops, programs, known, new_nodes)
            if addr:
                live[(allocator, addr)] = node
            delta = nbytes
        else:
            node = live.pop((allocator, addr), "") if addr else ""
            if not node and tf_op:
                node = _owner(table, event, allocator, tf_op, ops, programs, known, new_nodes)
            if not node:
                node = f"{allocator} (no op)"
                new_nodes.setdefault(node, NO_OP_TYPE)
            delta = -nbytes
        in_use = stats["bytes_allocated"][i] + stats["bytes_reserved"][i]
        out.append(
            MemoryEvent(event, int(table.start[event]), allocator, delta, in_use, addr, node,
                        stats["requested_bytes"][i], stats["data_type"][i],
                        _shape(stats["shape"][i]))
        )  # fmt: skip
    return out, new_nodes


def _owner(
    table: EventTable,
    event: int,
    allocator: str,
    tf_op: str,
    ops: _Enclosing,
    programs: _Enclosing,
    known: set[str],
    new_nodes: dict[str, str],
) -> str:
    """The node an allocation belongs to (see the module docstring)."""
    name, _, kind = tf_op.rpartition(":")
    if not name:
        name, kind = tf_op, ""
    if name and name in known:
        return name
    line, t = table.line_of(event), int(table.start[event])
    around = ops.around(line, t)
    if around:
        return around
    if name:
        new_nodes.setdefault(name, kind or name)
        return name
    program = programs.around(line, t)
    if program:
        if program not in known:
            new_nodes.setdefault(program, PROGRAM_TYPE)
        return program
    node = f"{allocator} (no op)"
    new_nodes.setdefault(node, NO_OP_TYPE)
    return node


def _micros(origin_ns: int, ps: int) -> int:
    return (origin_ns * 1000 + ps) // 1_000_000


def _device_of(allocator: str) -> str:
    found = _GPU_ALLOCATOR.match(allocator)
    if found:
        return f"/job:localhost/replica:0/task:0/device:GPU:{found.group(1)}"
    return _HOST_DEVICE


def _allocator_use(ns: Any, allocator: str, events: list[MemoryEvent], origin_ns: int) -> None:
    mem = ns.memory.add()
    mem.allocator_name = allocator
    total = running = peak = in_use = 0
    for ev in events:
        rec = mem.allocation_records.add()
        rec.alloc_micros = _micros(origin_ns, ev.start_ps)
        rec.alloc_bytes = ev.delta
        running += ev.delta
        peak = max(peak, running)
        total += max(ev.delta, 0)
        in_use = max(in_use, ev.in_use)
    mem.total_bytes = total
    mem.peak_bytes = peak
    mem.live_bytes = max(running, 0)
    mem.allocator_bytes_in_use = in_use


def _outputs(ns: Any, events: list[MemoryEvent]) -> None:
    slot = 0
    for ev in events:
        if ev.delta <= 0 or ev.shape is None:
            continue
        out = ns.output.add()
        out.slot = slot
        slot += 1
        desc = out.tensor_description
        desc.dtype = ev.dtype
        for size in ev.shape:
            desc.shape.dim.add().size = size
        alloc = desc.allocation_description
        alloc.requested_bytes = ev.requested
        alloc.allocated_bytes = ev.delta
        alloc.allocator_name = ev.allocator
        alloc.ptr = ev.addr


@dataclass
class _Place:
    """Where a node's memory record goes in one step."""

    device: str
    start: int
    rel: int
    label: str


def _place(cols: StepColumns, node: str, first_us: int, device: str) -> tuple[_Place, int]:
    """The node's first record on ``device`` in the step (its row, or -1: a new one)."""
    for row, name in enumerate(cols.name):
        if name == node and cols.devices[int(cols.dev[row])] == device:
            return _Place(device, int(cols.start[row]), int(cols.rel[row]), cols.label[row]), row
    return _Place(device, first_us, 0, ""), -1


def _step_memory(
    cols: StepColumns, events: list[MemoryEvent], devices: dict[str, str], origin_ns: int
) -> StepColumns:
    """``cols`` with the memory records of ``events`` (one step's)."""
    by_node: dict[str, list[MemoryEvent]] = {}
    for ev in events:
        by_node.setdefault(ev.node, []).append(ev)
    meta = pb.RunMetadata()
    dev_stats: dict[str, Any] = {}
    replaced: list[int] = []
    untimed: dict[str, list[bool]] = {}
    for node, node_events in by_node.items():
        first_us = _micros(origin_ns, node_events[0].start_ps)
        place, row = _place(cols, node, first_us, devices[node])
        if row >= 0:
            replaced.append(row)
        stats = dev_stats.get(place.device)
        if stats is None:
            stats = dev_stats[place.device] = meta.step_stats.dev_stats.add()
            stats.device = place.device
        ns = stats.node_stats.add()
        ns.node_name = node
        ns.timeline_label = place.label
        ns.all_start_micros = place.start
        ns.op_end_rel_micros = place.rel
        ns.all_end_rel_micros = place.rel
        untimed.setdefault(place.device, []).append(row < 0)
        per_allocator: dict[str, list[MemoryEvent]] = {}
        for ev in node_events:
            per_allocator.setdefault(ev.allocator, []).append(ev)
        for allocator, allocator_events in per_allocator.items():
            _allocator_use(ns, allocator, allocator_events, origin_ns)
        _outputs(ns, node_events)
    keep = np.ones(len(cols), dtype=bool)
    keep[replaced] = False
    memory = columns_from_message(meta)
    memory.untimed = np.asarray(
        [flag for d in meta.step_stats.dev_stats for flag in untimed[d.device]], dtype=bool
    )
    return concat_columns(take_rows(cols, keep), memory)


def add_memory(
    table: EventTable,
    tf_ops: dict[int, tuple[str, str]],
    roots: list[int],
    columns: list[StepColumns],
    nodes: list[NodeSpec],
    host_nodes: set[str] | frozenset[str] = frozenset(),
) -> list[MemoryEvent]:
    """Add the allocator events of ``table`` to the step columns (in place) and the
    nodes they need to ``nodes``; returns the events (by time).

    ``roots`` are the step roots (event rows, by start); an event's step is the
    one :func:`~tfprof_lite.model.xspace_steps.step_of` gives its time.
    ``host_nodes`` are nodes other than the TF ops that have host records (XLA
    program executions): their memory goes on the host device, beside those.
    """
    known = {spec.name for spec in nodes}
    events, new_nodes = memory_events(table, tf_ops, known)
    if not events:
        return events
    nodes.extend(NodeSpec(name=name, op=kind) for name, kind in new_nodes.items())
    op_names = {name for name, _ in tf_ops.values()} | set(host_nodes)
    devices: dict[str, str] = {}
    for ev in events:
        if ev.node not in devices:
            devices[ev.node] = _HOST_DEVICE if ev.node in op_names else _device_of(ev.allocator)
    per_step: dict[int, list[MemoryEvent]] = {}
    times = np.asarray([ev.start_ps for ev in events], dtype=np.int64)
    starts = np.asarray([int(table.start[r]) for r in roots], dtype=np.int64)
    ends = np.asarray([int(table.end[r]) for r in roots], dtype=np.int64)
    for ev, step in zip(events, step_of(starts, ends, times).tolist()):
        if step >= 0:
            per_step.setdefault(int(step), []).append(ev)
    origin_ns = table.cols.origin_ns
    for step, step_events in per_step.items():
        if step < len(columns):
            columns[step] = _step_memory(columns[step], step_events, devices, origin_ns)
    return events


# ------------------------------------------------------------------ step columns

_ROW_FIELDS = ("start", "rel", "total", "peak", "live", "gpu_allocs", "gpu_in_use", "temp",
               "persist")  # fmt: skip
_SPARSE = (("o_row", ("o_slot", "o_bytes", "o_ptr")), ("a_row", ("a_micros", "a_bytes")))


def take_rows(cols: StepColumns, keep: np.ndarray) -> StepColumns:
    """The rows of ``cols`` where ``keep`` is true (sparse entries follow their rows)."""
    if keep.all():
        return cols
    new_index = np.cumsum(keep) - 1
    out = StepColumns(
        devices=list(cols.devices),
        dev=cols.dev[keep],
        name=[n for n, k in zip(cols.name, keep.tolist()) if k],
        label=[n for n, k in zip(cols.label, keep.tolist()) if k],
        has_step_stats=cols.has_step_stats,
    )
    for name in _ROW_FIELDS:
        setattr(out, name, getattr(cols, name)[keep])
    out.untimed = cols.untimed[keep] if cols.untimed.size else cols.untimed
    for row_field, fields in _SPARSE:
        rows = getattr(cols, row_field)
        sel = keep[rows] if rows.size else np.zeros(0, dtype=bool)
        setattr(out, row_field, new_index[rows[sel]].astype(np.int32))
        for name in fields:
            setattr(out, name, getattr(cols, name)[sel])
    r_keep = keep[cols.r_row] if cols.r_row.size else np.zeros(0, dtype=bool)
    out.r_row = new_index[cols.r_row[r_keep]].astype(np.int32)
    out.raw = [raw for raw, k in zip(cols.raw, r_keep.tolist()) if k]
    return out


def concat_columns(a: StepColumns, b: StepColumns) -> StepColumns:
    """The rows of ``a`` then those of ``b`` (devices of ``b`` after ``a``'s)."""
    n, d = len(a), len(a.devices)
    out = StepColumns(
        devices=a.devices + b.devices,
        dev=np.concatenate([a.dev, b.dev + d]).astype(np.int32),
        name=a.name + b.name,
        label=a.label + b.label,
        has_step_stats=a.has_step_stats or b.has_step_stats,
    )
    for name in _ROW_FIELDS:
        setattr(out, name, np.concatenate([getattr(a, name), getattr(b, name)]))
    if a.untimed.size or b.untimed.size:
        out.untimed = np.concatenate([_untimed(a), _untimed(b)])
    for row_field, fields in (*_SPARSE, ("r_row", ())):
        rows = np.concatenate([getattr(a, row_field), getattr(b, row_field) + n])
        setattr(out, row_field, rows.astype(np.int32))
        for name in fields:
            setattr(out, name, np.concatenate([getattr(a, name), getattr(b, name)]))
    out.raw = a.raw + b.raw
    return out


def _untimed(cols: StepColumns) -> np.ndarray:
    return cols.untimed if cols.untimed.size else np.zeros(len(cols), dtype=bool)
