"""The memory viewer: a compiled XLA program's memory, from its buffer assignment.

Contract: :func:`program_memory` reads one :class:`~tfprof_lite.programs.hlo.Program`
(its ``HloProto``'s buffer assignment) for one memory space (``color``, 0: the
device's default memory) and returns a :class:`ProgramMemory`:

* ``total_bytes``: the sizes of the space's buffer allocations added up, what
  XLA's ``*-memory-usage-report.txt`` calls "Total bytes". By allocation
  (XLA's ``CompiledMemoryStats`` rules): ``argument_bytes`` (entry parameters),
  ``output_bytes`` (maybe live out), ``alias_bytes`` (parameters the module's
  input/output alias table gives back as outputs: counted in both),
  ``temp_bytes`` (neither, nor constant, nor thread-local), ``constant_bytes``
  and ``thread_local_bytes``, so that ``total = argument + output - alias +
  temp + constant + thread_local`` (``compiled.memory_analysis()`` gives the
  first four).
* ``heap``: bytes in use at each step of program order: the buffers that live
  for the whole program (every parameter, output, constant and thread-local
  allocation, and any temporary allocation the heap trace does not cover:
  ``base_bytes``) plus the temporaries live after each event of XLA's heap
  simulator trace (:mod:`~tfprof_lite.programs.buffers_heap`); ``heap[0]`` is
  before the first event, ``steps[i]`` the instruction of the event that led to
  ``heap[i]``.
* ``peak_bytes`` (``heap[peak_at]``, the first highest point) and
  ``buffers_at_peak``: what is live there, largest first, as :class:`Buffer`
  (an allocation of the whole program counts its allocation's size, named after
  its largest logical buffer; a temporary its logical buffer's size), so that
  they add up to ``peak_bytes``. ``peak_bytes <= total_bytes``.
* A program without a buffer assignment has every number 0 and ``heap == [0]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tfprof_lite.base.units import format_size
from tfprof_lite.programs.buffers_heap import HeapRun, pick_trace, simulate
from tfprof_lite.programs.hlo import Program, program_label, shape_text

__all__ = [
    "KINDS",
    "Buffer",
    "ProgramMemory",
    "allocation_kind",
    "program_label",
    "program_memory",
]

#: Buffer kinds, in the order an allocation's flags decide them.
KINDS = ("parameter", "output", "thread-local", "constant", "temporary")
_TOP = 10
_SHAPE_WIDTH = 24
_SCOPE_WIDTH = 60


@dataclass(frozen=True)
class Buffer:
    """One buffer live at the peak: its ``bytes``, ``shape`` (as XLA prints it),
    defining ``instruction`` (with the shape index of a tuple element: ``fusion{1}``),
    ``scope`` (the instruction's ``metadata.op_name``: the JAX or TF scope) and
    ``kind`` (one of :data:`KINDS`)."""

    bytes: int
    shape: str
    instruction: str
    scope: str
    kind: str

    def to_dict(self) -> dict[str, Any]:
        """``{"bytes", "shape", "instruction", "scope", "kind"}``."""
        return {
            "bytes": self.bytes,
            "shape": self.shape,
            "instruction": self.instruction,
            "scope": self.scope,
            "kind": self.kind,
        }


@dataclass
class ProgramMemory:
    """A program's memory (see the module docstring)."""

    program: str
    program_id: int | None
    total_bytes: int = 0
    peak_bytes: int = 0
    heap: list[int] = field(default_factory=lambda: [0])
    peak_at: int = 0
    buffers_at_peak: list[Buffer] = field(default_factory=list)
    steps: list[str] = field(default_factory=lambda: [""])
    base_bytes: int = 0
    color: int = 0
    argument_bytes: int = 0
    output_bytes: int = 0
    alias_bytes: int = 0
    temp_bytes: int = 0
    constant_bytes: int = 0
    thread_local_bytes: int = 0

    @property
    def label(self) -> str:
        """``name(program_id)``."""
        return program_label(self.program, self.program_id)

    @property
    def peak_instruction(self) -> str:
        """The instruction whose heap event reached the peak ("" before any)."""
        return self.steps[self.peak_at] if self.peak_at < len(self.steps) else ""

    def to_dict(self) -> dict[str, Any]:
        """The numbers as JSON-ready data: ``program``, ``program_id``, ``total_bytes``,
        ``peak_bytes``, ``buffers_at_peak`` (each :meth:`Buffer.to_dict`), and the
        categories, ``peak_at``, ``peak_instruction``, ``base_bytes`` and ``heap``."""
        return {
            "program": self.program,
            "program_id": self.program_id,
            "total_bytes": self.total_bytes,
            "peak_bytes": self.peak_bytes,
            "buffers_at_peak": [b.to_dict() for b in self.buffers_at_peak],
            "memory_space": self.color,
            "argument_bytes": self.argument_bytes,
            "output_bytes": self.output_bytes,
            "alias_bytes": self.alias_bytes,
            "temp_bytes": self.temp_bytes,
            "constant_bytes": self.constant_bytes,
            "thread_local_bytes": self.thread_local_bytes,
            "base_bytes": self.base_bytes,
            "peak_at": self.peak_at,
            "peak_instruction": self.peak_instruction,
            "heap": list(self.heap),
        }

    def to_text(self, top: int = _TOP) -> str:
        """A short table for the terminal: totals, the peak and its ``top`` largest buffers."""
        return _text(self, top)


def allocation_kind(allocation: Any) -> str:
    """The :data:`KINDS` entry of a ``BufferAllocationProto`` (parameter first, as XProf)."""
    if allocation.is_entry_computation_parameter:
        return "parameter"
    if allocation.maybe_live_out:
        return "output"
    if allocation.is_thread_local:
        return "thread-local"
    if allocation.is_constant:
        return "constant"
    return "temporary"


def _lives_whole_program(allocation: Any) -> bool:
    return bool(
        allocation.is_entry_computation_parameter
        or allocation.maybe_live_out
        or allocation.is_thread_local
        or allocation.is_constant
    )


class _Assignment:
    """A program's buffer assignment indexed for one memory space."""

    def __init__(self, program: Program, color: int) -> None:
        self.program = program
        proto = program.buffers
        self.logical = {int(b.id): b for b in proto.logical_buffers}
        self.allocations = [a for a in proto.buffer_allocations if int(a.color) == color]
        self.allocation_of: dict[int, Any] = {}
        for allocation in proto.buffer_allocations:
            for assigned in allocation.assigned:
                self.allocation_of[int(assigned.logical_buffer_id)] = allocation
        color_of = {i: int(b.color) for i, b in self.logical.items()}
        self.run: HeapRun = simulate(
            pick_trace(proto, color_of, color), {i: int(b.size) for i, b in self.logical.items()}
        )
        covered = {
            int(self.allocation_of[i].index) for i in self.run.seen if i in self.allocation_of
        }
        self.base = [
            a for a in self.allocations if _lives_whole_program(a) or int(a.index) not in covered
        ]

    def buffer(self, logical_id: int, size: int, kind: str) -> Buffer:
        """The :class:`Buffer` of logical buffer ``logical_id`` counted as ``size`` bytes."""
        logical = self.logical.get(logical_id)
        if logical is None:
            return Buffer(size, "", "", "", kind)
        where = logical.defined_at
        index = [int(i) for i in where.shape_index]
        instruction = self.program.instructions.get(int(where.instruction_id))
        if instruction is None:
            instruction = self.program.by_name.get(where.instruction_name)
        name = instruction.name if instruction is not None else where.instruction_name
        label = f"{name}{{{','.join(map(str, index))}}}" if index else name
        if instruction is None:
            return Buffer(size, "", label, "", kind)
        return Buffer(
            size, _shape_at(instruction.shape, index), label, instruction.metadata.op_name, kind
        )

    def whole_program_buffer(self, allocation: Any) -> Buffer:
        """An allocation of the whole program, named after its largest logical buffer."""
        largest, best = -1, -1
        for assigned in allocation.assigned:
            logical = self.logical.get(int(assigned.logical_buffer_id))
            if logical is not None and int(logical.size) > best:
                largest, best = int(logical.id), int(logical.size)
        return self.buffer(largest, int(allocation.size), allocation_kind(allocation))


def _shape_at(shape: Any, index: list[int]) -> str:
    for i in index:
        if i >= len(shape.tuple_shapes):
            break
        shape = shape.tuple_shapes[i]
    return shape_text(shape)


def _aliased_parameters(program: Program) -> set[tuple[int, tuple[int, ...]]]:
    entries = program.module.input_output_alias.entries
    return {
        (int(e.parameter_number), tuple(int(i) for i in e.parameter_shape_index)) for e in entries
    }


def _categories(memory: ProgramMemory, program: Program, allocations: list[Any]) -> None:
    aliased = _aliased_parameters(program)
    for a in allocations:
        size = int(a.size)
        memory.total_bytes += size
        if a.is_entry_computation_parameter:
            memory.argument_bytes += size
            key = (int(a.parameter_number), tuple(int(i) for i in a.parameter_shape_index))
            if key in aliased:
                memory.alias_bytes += size
        if a.maybe_live_out:
            memory.output_bytes += size
        if a.is_constant:
            memory.constant_bytes += size
        if a.is_thread_local:
            memory.thread_local_bytes += size
        if not _lives_whole_program(a):
            memory.temp_bytes += size


def program_memory(
    program: Program, program_id: int | None, name: str, color: int = 0
) -> ProgramMemory:
    """The memory of ``program`` in memory space ``color`` (see the module docstring);
    ``program_id`` and ``name`` (the module name) label it."""
    memory = ProgramMemory(name, program_id, color=color)
    if not len(program.buffers.buffer_allocations):
        return memory
    found = _Assignment(program, color)
    _categories(memory, program, found.allocations)
    run = found.run
    base = [found.whole_program_buffer(a) for a in found.base]
    memory.base_bytes = sum(b.bytes for b in base)
    memory.heap = [memory.base_bytes + h for h in run.heap]
    memory.steps = list(run.instructions)
    memory.peak_at = run.peak_at
    memory.peak_bytes = memory.base_bytes + run.peak
    sizes = {i: int(b.size) for i, b in found.logical.items()}
    temporaries = [found.buffer(i, sizes[i], "temporary") for i in run.live_at_peak]
    memory.buffers_at_peak = sorted(base + temporaries, key=lambda b: -b.bytes)
    return memory


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _amount(what: str, n: int, note: str) -> str:
    return f"  {what:<10} {n:>15,} B  {format_size(n):>10}   {note}"


def _text(memory: ProgramMemory, top: int) -> str:
    fs = format_size
    steps = len(memory.heap) - 1
    where = f"at step {memory.peak_at} of {steps}" if steps else "no heap trace"
    if memory.peak_instruction:
        where += f" ({memory.peak_instruction})"
    parts = (
        f"arguments {fs(memory.argument_bytes)}, outputs {fs(memory.output_bytes)} "
        f"({fs(memory.alias_bytes)} aliased), temporaries {fs(memory.temp_bytes)}, "
        f"constants {fs(memory.constant_bytes)}, thread-local {fs(memory.thread_local_bytes)}"
    )
    lines = [
        f"{memory.label} (memory space {memory.color})",
        _amount("total", memory.total_bytes, parts),
        _amount("peak", memory.peak_bytes, where),
        _amount("base", memory.base_bytes, "live for the whole program"),
    ]
    shown = memory.buffers_at_peak[:top]
    if shown:
        count = len(memory.buffers_at_peak)
        lines.append(f"  largest buffers at the peak ({len(shown)} of {count}):")
        lines.append(_row("bytes", "share", "kind", "shape", "instruction  scope"))
        for b in shown:
            share = f"{100.0 * b.bytes / memory.peak_bytes:.1f}%" if memory.peak_bytes else "-"
            what = b.instruction + (f"  {_cut(b.scope, _SCOPE_WIDTH)}" if b.scope else "")
            lines.append(_row(f"{b.bytes:,}", share, b.kind, _cut(b.shape, _SHAPE_WIDTH), what))
    return "\n".join(lines) + "\n"


def _row(size: str, share: str, kind: str, shape: str, what: str) -> str:
    return f"  {size:>15}  {share:>6}  {kind:<12}  {shape:<{_SHAPE_WIDTH}}  {what}".rstrip()
