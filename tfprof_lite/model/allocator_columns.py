"""Per-allocator memory data of one step in columns (:class:`AllocatorColumns`).

Built on first use from a step's kept NodeExecStats (see
:meth:`tfprof_lite.model.execs.StepExecs.allocator_columns`), for the memory
profile; nothing else reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tfprof_lite.model.records import MemoryDetail

__all__ = ["AllocatorColumns"]


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
