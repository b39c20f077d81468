"""Memory records of many steps in columns: the memory side of the ingest contract.

A producer that reads allocator events (an XSpace's,
:mod:`tfprof_lite.formats.xspace.read.memory_steps`) hands the model, beside
its :class:`~tfprof_lite.model.step_records.StepRecords`, one
:class:`MemoryRecords`: per step, per op (node and lane), what that op's
allocator events add up to, with the events themselves and the tensors they
allocated, all in columns. The model places each record in its step as
tfprof's ``AddStep`` places a NodeExecStats with memory entries
(:mod:`tfprof_lite.model.record_memory`) and keeps, for the memory profile, a
:class:`MemoryRef` per record: the record's index into these columns, read
into a :class:`~tfprof_lite.model.records.MemoryDetail` only when the memory
profile asks (nothing is serialized, no object per event is held).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tfprof_lite.base.arrays import I32, I64, U64, empty_i32, empty_i64, empty_u64
from tfprof_lite.model.records import AllocatorUse, MemoryDetail, OutputTensor

__all__ = ["MemoryRecords", "MemoryRef"]


def _bounds() -> I64:
    return np.zeros(1, dtype=np.int64)


@dataclass(eq=False)
class MemoryRecords:
    """Memory records in columns (see the module docstring).

    Per record, by step (ascending), in a step in the order they go into it:
    ``step`` (index into the records' steps), ``node`` (its name, into the step
    records' ``texts``), ``lane`` (into their ``lanes``), ``first_ps`` (its
    first event, an offset from their ``origin_ns``: where a record that takes
    no op's place starts), ``total``/``peak``/``live`` (bytes over its
    allocators, as ``AllocatorMemoryUsed`` sums them), ``gpu_allocs`` (how many
    of its allocators are GPU ones) and ``gpu_in_use`` (their largest bytes in
    use).

    Per allocator use (``use_at[r]:use_at[r + 1]`` are record ``r``'s):
    ``u_allocator`` (into ``allocators``), ``u_total``, ``u_peak``, ``u_live``,
    ``u_in_use``; its events ``event_at[u]:event_at[u + 1]`` of ``e_micros``
    and ``e_bytes`` (signed: a free is negative), by time.

    Per output (``out_at[r]:out_at[r + 1]`` are record ``r``'s, by time):
    ``o_slot``, ``o_allocator``, ``o_requested``, ``o_allocated``, ``o_ptr``,
    ``o_dtype`` (DataType enum) and ``o_shape`` (into ``shapes``).
    """

    step: I64 = field(default_factory=empty_i64)
    node: I32 = field(default_factory=empty_i32)
    lane: I32 = field(default_factory=empty_i32)
    first_ps: I64 = field(default_factory=empty_i64)
    total: I64 = field(default_factory=empty_i64)
    peak: I64 = field(default_factory=empty_i64)
    live: I64 = field(default_factory=empty_i64)
    gpu_allocs: I32 = field(default_factory=empty_i32)
    gpu_in_use: I64 = field(default_factory=empty_i64)
    use_at: I64 = field(default_factory=_bounds)
    u_allocator: I32 = field(default_factory=empty_i32)
    u_total: I64 = field(default_factory=empty_i64)
    u_peak: I64 = field(default_factory=empty_i64)
    u_live: I64 = field(default_factory=empty_i64)
    u_in_use: I64 = field(default_factory=empty_i64)
    event_at: I64 = field(default_factory=_bounds)
    e_micros: I64 = field(default_factory=empty_i64)
    e_bytes: I64 = field(default_factory=empty_i64)
    out_at: I64 = field(default_factory=_bounds)
    o_slot: I32 = field(default_factory=empty_i32)
    o_allocator: I32 = field(default_factory=empty_i32)
    o_requested: I64 = field(default_factory=empty_i64)
    o_allocated: I64 = field(default_factory=empty_i64)
    o_ptr: U64 = field(default_factory=empty_u64)
    o_dtype: I32 = field(default_factory=empty_i32)
    o_shape: I32 = field(default_factory=empty_i32)
    allocators: list[str] = field(default_factory=list)
    shapes: list[tuple[int, ...]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.step)

    def of_steps(self, first: int, last: int) -> MemoryRecords:
        """The records of steps ``first:last``, their steps counted from
        ``first`` (the uses, events and outputs shared)."""
        lo, hi = np.searchsorted(self.step, [first, last]).tolist()
        out = MemoryRecords(**{name: getattr(self, name) for name in _SHARED})
        for name in _PER_RECORD:
            setattr(out, name, getattr(self, name)[lo:hi])
        out.step = self.step[lo:hi] - first
        out.use_at, out.out_at = self.use_at[lo : hi + 1], self.out_at[lo : hi + 1]
        return out

    def detail(self, index: int, start: int, end: int) -> MemoryDetail:
        """Record ``index`` as the memory profile reads it (``start``/``end``:
        the µs of the op whose place it took, or its own)."""
        lo, hi = int(self.use_at[index]), int(self.use_at[index + 1])
        uses = []
        for u in range(lo, hi):
            a, b = int(self.event_at[u]), int(self.event_at[u + 1])
            micros, nbytes = self.e_micros[a:b].tolist(), self.e_bytes[a:b].tolist()
            events = tuple(zip(micros, nbytes, strict=True))
            uses.append(AllocatorUse(
                self.allocators[int(self.u_allocator[u])], int(self.u_total[u]),
                int(self.u_peak[u]), int(self.u_live[u]), int(self.u_in_use[u]), events,
            ))  # fmt: skip
        lo, hi = int(self.out_at[index]), int(self.out_at[index + 1])
        columns = (self.o_slot, self.o_allocator, self.o_requested, self.o_allocated, self.o_ptr,
                   self.o_dtype, self.o_shape)  # fmt: skip
        tensors = tuple(
            OutputTensor(slot, self.allocators[alloc], 0, requested, allocated, ptr, dtype,
                         self.shapes[shape])
            for slot, alloc, requested, allocated, ptr, dtype, shape in zip(
                *(column[lo:hi].tolist() for column in columns), strict=True)
        )  # fmt: skip
        return MemoryDetail(start, end, tuple(uses), tensors)

    def gpu_events(self) -> tuple[I64, I64, I64]:
        """(record, µs, bytes) of every event of a GPU allocator (the
        allocation records a RunMetadata keeps per op), by record."""
        gpu = np.asarray(["GPU" in name for name in self.allocators] + [False], dtype=bool)
        u_lo, u_hi = int(self.use_at[0]), int(self.use_at[-1])
        uses = np.arange(u_lo, u_hi)
        per_use = self.event_at[uses + 1] - self.event_at[uses]
        record_of_use = np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.use_at))
        on_gpu = np.repeat(gpu[self.u_allocator[uses].astype(np.int64)], per_use)
        record = np.repeat(record_of_use, per_use)
        events = np.arange(int(self.event_at[u_lo]), int(self.event_at[u_hi]))
        return record[on_gpu], self.e_micros[events][on_gpu], self.e_bytes[events][on_gpu]


_PER_RECORD = ("node", "lane", "first_ps", "total", "peak", "live", "gpu_allocs", "gpu_in_use")
_SHARED = ("u_allocator", "u_total", "u_peak", "u_live", "u_in_use", "event_at", "e_micros",
           "e_bytes", "o_slot", "o_allocator", "o_requested", "o_allocated", "o_ptr", "o_dtype",
           "o_shape", "allocators", "shapes")  # fmt: skip


class MemoryRef:
    """One memory record kept by a step: ``records``' record ``record``, placed
    at ``start``/``end`` µs; :meth:`detail` reads it. Equal to another record
    (or a :class:`MemoryDetail`) that reads the same."""

    __slots__ = ("end", "record", "records", "start")

    def __init__(self, records: MemoryRecords, record: int, start: int, end: int) -> None:
        self.records = records
        self.record = record
        self.start = start
        self.end = end

    def detail(self) -> MemoryDetail:
        """The record as the memory profile reads it."""
        return self.records.detail(self.record, self.start, self.end)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MemoryRef):
            other = other.detail()
        return isinstance(other, MemoryDetail) and self.detail() == other

    def __hash__(self) -> int:
        return hash(self.detail())

    def __repr__(self) -> str:
        return f"MemoryRef({self.detail()!r})"
