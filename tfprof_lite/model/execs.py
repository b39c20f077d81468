"""Per-step execution data, kept in columns.

One :class:`StepExecs` holds everything tfprof records for one step number: time
records as parallel integer columns (node id, kind, device, start, duration),
memory records as a list, and per-node start/end/device bookkeeping. Queries turn
the columns into dense per-node NumPy arrays once per step (:meth:`StepExecs.totals`).

Beyond tfprof, each step keeps what the memory profile and the GPU kernel
statistics read: the serialized NodeExecStats of every record with memory
entries (``raw_node``/``raw_stats``; serializing is much cheaper than decoding
every allocation record and shape while adding a step), expanded on first use
into :class:`AllocatorColumns` (every allocator's allocation records, per-op use
and output tensors with shapes), and :class:`KernelColumns` (every GPU tracer
record with its device, raw node name and ``timeline_label``). Both stay empty
for steps loaded from a ProfileProto, which does not carry them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from tfprof_lite.model.int64 import wrap64
from tfprof_lite.model.records import AllocationEvent, ExecRecord, MemoryDetail, OutputMemory

__all__ = [
    "KIND_ACCELERATOR",
    "KIND_CPU",
    "AllocatorColumns",
    "KernelColumns",
    "MemoryExec",
    "StepExecs",
    "StepTotals",
]

KIND_ACCELERATOR = 1
KIND_CPU = 2

IntArray = npt.NDArray[np.int64]


@dataclass
class MemoryExec:
    """One memory record (tfprof's ExecMemory) of a node in a step."""

    node: int
    memory_micros: int
    host_temp_bytes: int = 0
    host_persistent_bytes: int = 0
    accelerator_temp_bytes: int = 0
    accelerator_persistent_bytes: int = 0
    requested_bytes: int = 0
    peak_bytes: int = 0
    residual_bytes: int = 0
    output_bytes: int = 0
    allocator_bytes_in_use: int = 0
    output_memory: dict[int, OutputMemory] = field(default_factory=dict)


@dataclass
class StepTotals:
    """Dense per-node sums for one step (arrays indexed by node id)."""

    present: npt.NDArray[np.bool_]
    run_count: IntArray
    accelerator_exec_micros: IntArray
    cpu_exec_micros: IntArray
    requested_bytes: IntArray
    peak_bytes: IntArray
    residual_bytes: IntArray
    output_bytes: IntArray


@dataclass
class AllocatorColumns:
    """Per-allocator memory data of one step, in parallel columns.

    Allocators are numbered per step (``names``; ``index`` maps back). Three
    column groups: allocation records (``a_*``: node, allocator, micros, signed
    bytes), allocator use per op record (``u_*``: node, allocator, the op's
    start and end time, total, peak and live bytes, the allocator's bytes in
    use) and output tensors of the ops that allocated (``o_*``: node, slot,
    allocator, allocation id, requested and allocated bytes, buffer address,
    dtype enum, shape or None).
    """

    names: list[str] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)
    a_node: list[int] = field(default_factory=list)
    a_alloc: list[int] = field(default_factory=list)
    a_micros: list[int] = field(default_factory=list)
    a_bytes: list[int] = field(default_factory=list)
    u_node: list[int] = field(default_factory=list)
    u_alloc: list[int] = field(default_factory=list)
    u_start: list[int] = field(default_factory=list)
    u_end: list[int] = field(default_factory=list)
    u_total: list[int] = field(default_factory=list)
    u_peak: list[int] = field(default_factory=list)
    u_live: list[int] = field(default_factory=list)
    u_in_use: list[int] = field(default_factory=list)
    o_node: list[int] = field(default_factory=list)
    o_slot: list[int] = field(default_factory=list)
    o_alloc: list[int] = field(default_factory=list)
    o_id: list[int] = field(default_factory=list)
    o_requested: list[int] = field(default_factory=list)
    o_allocated: list[int] = field(default_factory=list)
    o_ptr: list[int] = field(default_factory=list)
    o_dtype: list[int] = field(default_factory=list)
    o_shape: list[tuple[int, ...] | None] = field(default_factory=list)

    def allocator_id(self, name: str) -> int:
        """The step-local number of allocator ``name`` (added when new)."""
        aid = self.index.get(name)
        if aid is None:
            aid = self.index[name] = len(self.names)
            self.names.append(name)
        return aid

    def add(self, node: int, detail: MemoryDetail) -> None:
        """Append one record's allocator entries and output tensors."""
        for use in detail.allocators:
            aid = self.allocator_id(use.allocator)
            self.u_node.append(node)
            self.u_alloc.append(aid)
            self.u_start.append(detail.start_micros)
            self.u_end.append(detail.end_micros)
            self.u_total.append(use.total_bytes)
            self.u_peak.append(use.peak_bytes)
            self.u_live.append(use.live_bytes)
            self.u_in_use.append(use.bytes_in_use)
            for micros, nbytes in use.events:
                self.a_node.append(node)
                self.a_alloc.append(aid)
                self.a_micros.append(micros)
                self.a_bytes.append(nbytes)
        for t in detail.tensors:
            self.o_node.append(node)
            self.o_slot.append(t.slot)
            self.o_alloc.append(self.allocator_id(t.allocator))
            self.o_id.append(t.allocation_id)
            self.o_requested.append(t.requested_bytes)
            self.o_allocated.append(t.allocated_bytes)
            self.o_ptr.append(t.ptr)
            self.o_dtype.append(t.dtype)
            self.o_shape.append(t.shape)


@dataclass
class KernelColumns:
    """GPU tracer records of one step (kernels, copies, syncs), in columns.

    ``name`` is the record's raw ``node_name`` (``op:Type`` annotation, or the
    kernel name when nothing annotated the launch), ``label`` its
    ``timeline_label``; records whose names are no graph node are kept too.
    """

    dev: list[str] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    label: list[str] = field(default_factory=list)
    start: list[int] = field(default_factory=list)
    dur: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.dev)

    def add(self, dev: str, rec: ExecRecord) -> None:
        """Append one tracer record."""
        self.dev.append(dev)
        self.name.append(rec.name)
        self.label.append(rec.label)
        self.start.append(rec.all_start_micros)
        self.dur.append(rec.op_end_rel_micros)


@dataclass
class StepExecs:
    """Everything recorded for one step number."""

    t_node: list[int] = field(default_factory=list)
    t_kind: list[int] = field(default_factory=list)
    t_dev: list[str] = field(default_factory=list)
    t_start: list[int] = field(default_factory=list)
    t_dur: list[int] = field(default_factory=list)
    memory: list[MemoryExec] = field(default_factory=list)
    devices: dict[int, set[str]] = field(default_factory=dict)
    all_start: dict[int, int] = field(default_factory=dict)
    latest_end: dict[int, int] = field(default_factory=dict)
    allocations: dict[int, list[AllocationEvent]] = field(default_factory=dict)
    raw_node: list[int] = field(default_factory=list)
    raw_stats: list[bytes] = field(default_factory=list)
    kernels: KernelColumns = field(default_factory=KernelColumns)
    _allocators: AllocatorColumns | None = None
    _allocators_n: int = -1
    _totals: StepTotals | None = None
    _totals_n: int = -1

    def touch(self, node: int, device: str) -> None:
        """Create the node's exec entry for this step (if new) and note the device."""
        devs = self.devices.get(node)
        if devs is None:
            self.devices[node] = {device}
        else:
            devs.add(device)
        self._totals = None

    def add_raw(self, node: int, raw: bytes) -> None:
        """Keep a serialized NodeExecStats with memory entries for the memory profile."""
        self.raw_node.append(node)
        self.raw_stats.append(raw)

    def allocator_columns(self, expand: Callable[[bytes], MemoryDetail]) -> AllocatorColumns:
        """The step's :class:`AllocatorColumns`, built from the kept NodeExecStats
        with ``expand`` (the proto layer's decoder) on first use, then cached
        until more records arrive."""
        if self._allocators is None or self._allocators_n != len(self.raw_stats):
            cols = AllocatorColumns()
            for node, raw in zip(self.raw_node, self.raw_stats):
                cols.add(node, expand(raw))
            self._allocators = cols
            self._allocators_n = len(self.raw_stats)
        return self._allocators

    def wall_span(self) -> tuple[int, int] | None:
        """The step's (first start, last end) over its nodes, or None when nothing
        started; the end is the start when no end is known (an end that wrapped
        past int64, say)."""
        if not self.all_start:
            return None
        start = min(self.all_start.values())
        return start, max(self.latest_end.values(), default=start)

    def add_time(self, node: int, kind: int, device: str, start: int, dur: int) -> None:
        """Record one (start, duration) pair; ``kind`` 0 only moves start/end."""
        prev = self.all_start.get(node, 0)
        self.all_start[node] = start if prev <= 0 else min(prev, start)
        end = wrap64(start + dur)
        if end > self.latest_end.get(node, 0):
            self.latest_end[node] = end
        if kind:
            self.t_node.append(node)
            self.t_kind.append(kind)
            self.t_dev.append(device)
            self.t_start.append(start)
            self.t_dur.append(dur)

    def totals(self, n_nodes: int) -> StepTotals:
        """Dense per-node sums over this step's records (cached until the step changes)."""
        if self._totals is not None and self._totals_n == n_nodes:
            return self._totals
        present = np.zeros(n_nodes, dtype=bool)
        if self.devices:
            present[np.fromiter(self.devices.keys(), dtype=np.int64)] = True
        nodes = np.asarray(self.t_node, dtype=np.int64)
        kinds = np.asarray(self.t_kind, dtype=np.int64)
        durs = np.asarray(self.t_dur, dtype=np.int64)
        cpu = kinds == KIND_CPU
        acc = kinds == KIND_ACCELERATOR
        mem_nodes = np.asarray([m.node for m in self.memory], dtype=np.int64)

        def msum(attr: str) -> IntArray:
            vals = np.asarray([getattr(m, attr) for m in self.memory], dtype=np.int64)
            return _bincount(mem_nodes, vals, n_nodes)

        self._totals = StepTotals(
            present=present,
            run_count=_bincount(nodes[cpu], np.ones(int(cpu.sum()), np.int64), n_nodes),
            accelerator_exec_micros=_bincount(nodes[acc], durs[acc], n_nodes),
            cpu_exec_micros=_bincount(nodes[cpu], durs[cpu], n_nodes),
            requested_bytes=msum("requested_bytes"),
            peak_bytes=msum("peak_bytes"),
            residual_bytes=msum("residual_bytes"),
            output_bytes=msum("output_bytes"),
        )
        self._totals_n = n_nodes
        return self._totals

    def times_by_node(self) -> dict[int, dict[int, dict[str, list[tuple[int, int]]]]]:
        """node -> kind -> device -> (start, duration) pairs, in record order."""
        out: dict[int, dict[int, dict[str, list[tuple[int, int]]]]] = {}
        for nid, kind, dev, start, dur in zip(
            self.t_node, self.t_kind, self.t_dev, self.t_start, self.t_dur
        ):
            per_kind = out.setdefault(nid, {}).setdefault(kind, {})
            per_kind.setdefault(dev, []).append((start, dur))
        return out


def _bincount(idx: IntArray, vals: IntArray, n: int) -> IntArray:
    """Integer segment sum of ``vals`` grouped by ``idx`` into ``n`` bins."""
    out = np.zeros(n, dtype=np.int64)
    if idx.size:
        np.add.at(out, idx, vals)
    return out
