"""Plain records that feed the profile model.

The proto layer decodes GraphDefs, op logs and RunMetadata into these records;
the model never sees a protobuf message. Every record is a small frozen or slotted
class so decoding stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = [
    "AllocationEvent",
    "AllocatorUse",
    "CodeFrame",
    "MemoryDetail",
    "NodeSpec",
    "OpLogEntrySpec",
    "OutputMemory",
    "OutputTensor",
]


@dataclass(frozen=True)
class CodeFrame:
    """One frame of a Python call stack, outermost first in a node's trace.

    ``file`` and ``function`` are the resolved strings; ``*_id`` keep the
    string-table ids the op log used so a profile can be written back.
    """

    file: str
    lineno: int
    function: str
    func_start_line: int = -1
    line: str = ""
    file_id: int = 0
    function_id: int = 0
    line_id: int = 0


@dataclass
class NodeSpec:
    """A graph node as tfprof keeps it (from a GraphDef NodeDef).

    Attributes:
        name: unique node name.
        op: the op type string (``NodeDef.op``).
        inputs: producer names and output indices in input position order;
            control inputs (``^name``) are kept as ordinary inputs.
        shape: dims of the ``shape`` attribute (``None`` when absent, ``[]`` for an
            unknown rank, ``[1]`` for a scalar).
        output_shapes: output index -> dims, from ``_output_shapes``.
        attrs: attribute name -> serialized AttrValue bytes (opaque to the model).
        str_attrs: attribute name -> decoded string for the string-valued attributes
            analyses read (``data_format``).
    """

    name: str
    op: str
    inputs: list[tuple[str, int]] = field(default_factory=list)
    shape: list[int] | None = None
    output_shapes: dict[int, list[int]] = field(default_factory=dict)
    attrs: dict[str, bytes] = field(default_factory=dict)
    str_attrs: dict[str, str] = field(default_factory=dict)


@dataclass
class OpLogEntrySpec:
    """One OpLogEntry: extra types, a static FLOP count and a code trace."""

    name: str
    float_ops: int = 0
    types: list[str] = field(default_factory=list)
    trace: list[CodeFrame] | None = None


@dataclass(frozen=True)
class AllocationEvent:
    """An allocation record (time in microseconds, signed byte delta)."""

    alloc_micros: int
    alloc_bytes: int


@dataclass(frozen=True)
class OutputMemory:
    """Bytes and buffer address of one output slot."""

    slot: int
    bytes: int
    ptr: int


class AllocatorUse(NamedTuple):
    """One ``AllocatorMemoryUsed`` entry of a record: an allocator's use by the op.

    ``events`` are the allocation records as ``(alloc_micros, alloc_bytes)``
    pairs in proto order (negative bytes free memory).
    """

    allocator: str
    total_bytes: int
    peak_bytes: int
    live_bytes: int
    bytes_in_use: int
    events: tuple[tuple[int, int], ...]


class OutputTensor(NamedTuple):
    """One output's tensor description: allocator, allocation and shape.

    ``shape`` is ``None`` for an unknown rank and ``()`` for a scalar; ``dtype``
    is the DataType enum value.
    """

    slot: int
    allocator: str
    allocation_id: int
    requested_bytes: int
    allocated_bytes: int
    ptr: int
    dtype: int
    shape: tuple[int, ...] | None


class MemoryDetail(NamedTuple):
    """The memory side of one NodeExecStats: times, allocator entries, outputs."""

    start_micros: int
    end_micros: int
    allocators: tuple[AllocatorUse, ...]
    tensors: tuple[OutputTensor, ...]
