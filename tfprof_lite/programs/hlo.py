"""A parsed XLA program, indexed: computations and instructions by id, shapes.

Contract:

* :class:`Program` wraps one parsed ``HloProto``
  (:func:`tfprof_lite.proto.xla_program.parse_program`): ``module``, ``buffers``
  (its buffer assignment), ``computations`` and ``instructions`` by id,
  ``entry`` (the entry computation), ``computation_of`` (instruction id -> the
  computation holding it), ``by_name`` (instruction name -> instruction; names
  are unique in a module).
* :func:`element_bytes` is the storage size of one element of an XLA primitive
  type (sub-byte types count as a fraction of a byte, as XLA packs them);
  :func:`element_count` and :func:`byte_size` the elements and bytes of an
  array shape (a tuple counts its elements, not the pointer table: see
  :func:`tuple_table_bytes`); :func:`shape_text` the shape as XLA prints it
  (``f32[512,1024]``, ``(f32[], s32[2])``).
"""

from __future__ import annotations

from functools import cached_property, lru_cache
from math import prod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tfprof_lite.model.xla_records import ProgramRecord

__all__ = [
    "ELEMENT_BITS",
    "TYPE_NAMES",
    "Program",
    "parsed",
    "program_label",
    "byte_size",
    "element_bytes",
    "element_count",
    "is_array",
    "shape_text",
    "tuple_table_bytes",
]

#: XLA ``PrimitiveType`` value -> its name as XLA prints it in shapes.
TYPE_NAMES: dict[int, str] = {
    1: "pred", 2: "s8", 3: "s16", 4: "s32", 5: "s64", 6: "u8", 7: "u16", 8: "u32",
    9: "u64", 10: "f16", 11: "f32", 12: "f64", 13: "tuple", 14: "opaque", 15: "c64",
    16: "bf16", 17: "token", 18: "c128", 19: "f8e5m2", 20: "f8e4m3fn", 21: "s4",
    22: "u4", 23: "f8e4m3b11fnuz", 24: "f8e5m2fnuz", 25: "f8e4m3fnuz", 26: "s2",
    27: "u2", 28: "f8e4m3", 29: "f8e3m4", 30: "s1", 31: "u1", 32: "f4e2m1fn",
    33: "f8e8m0fnu",
}  # fmt: skip

#: Bits per element of each array type (XLA's storage size).
ELEMENT_BITS: dict[int, int] = {
    1: 8, 2: 8, 3: 16, 4: 32, 5: 64, 6: 8, 7: 16, 8: 32, 9: 64, 10: 16, 11: 32,
    12: 64, 15: 64, 16: 16, 18: 128, 19: 8, 20: 8, 21: 4, 22: 4, 23: 8, 24: 8,
    25: 8, 26: 2, 27: 2, 28: 8, 29: 8, 30: 1, 31: 1, 32: 4, 33: 8,
}  # fmt: skip

_TUPLE, _OPAQUE, _TOKEN = 13, 14, 17
#: Bytes of one pointer in a tuple's table of element addresses.
POINTER_BYTES = 8


def is_array(shape: Any) -> bool:
    """Whether ``shape`` (a ``ShapeProto``) is an array (not a tuple, token or opaque)."""
    return int(shape.element_type) in ELEMENT_BITS


def element_bytes(element_type: int) -> float:
    """Bytes per element of ``element_type`` (0 for tuple, token, opaque, unknown)."""
    return ELEMENT_BITS.get(int(element_type), 0) / 8


def element_count(shape: Any) -> int:
    """Elements of an array shape (1 for a scalar); of a tuple, its arrays' summed."""
    kind = shape.element_type
    if kind == _TUPLE:
        return sum(element_count(s) for s in shape.tuple_shapes)
    return prod(shape.dimensions) if kind in ELEMENT_BITS else 0


def byte_size(shape: Any) -> int:
    """Bytes of an array shape's data (sub-byte types rounded up to whole bytes);
    of a tuple, its elements' data summed (without the tuple's pointer table)."""
    if int(shape.element_type) == _TUPLE:
        return sum(byte_size(s) for s in shape.tuple_shapes)
    if not is_array(shape):
        return 0
    bits = ELEMENT_BITS[int(shape.element_type)]
    return (element_count(shape) * bits + 7) // 8


def tuple_table_bytes(shape: Any) -> int:
    """Bytes of a tuple's own table of element pointers (0 for an array)."""
    if int(shape.element_type) != _TUPLE:
        return 0
    return POINTER_BYTES * len(shape.tuple_shapes)


def shape_text(shape: Any) -> str:
    """``shape`` as XLA prints it, without layout: ``f32[2,3]``, ``(f32[], s32[])``."""
    kind = int(shape.element_type)
    if kind == _TUPLE:
        return "(" + ", ".join(shape_text(s) for s in shape.tuple_shapes) + ")"
    name = TYPE_NAMES.get(kind, f"type{kind}")
    if kind in (_TOKEN, _OPAQUE):
        return f"{name}[]"
    return f"{name}[{','.join(str(int(d)) for d in shape.dimensions)}]"


class Program:
    """One parsed ``HloProto``, indexed (see the module docstring)."""

    def __init__(self, proto: Any) -> None:
        self.proto = proto
        self.module = proto.hlo_module
        self.buffers = proto.buffer_assignment

    @cached_property
    def computations(self) -> dict[int, Any]:
        """Computation id -> ``HloComputationProto``."""
        return {int(c.id): c for c in self.module.computations}

    @cached_property
    def instructions(self) -> dict[int, Any]:
        """Instruction id -> ``HloInstructionProto`` (every computation's)."""
        return {int(i.id): i for c in self.module.computations for i in c.instructions}

    @cached_property
    def computation_of(self) -> dict[int, Any]:
        """Instruction id -> the computation that holds it."""
        return {int(i.id): c for c in self.module.computations for i in c.instructions}

    @cached_property
    def by_name(self) -> dict[str, Any]:
        """Instruction name -> instruction."""
        return {i.name: i for c in self.module.computations for i in c.instructions}

    @cached_property
    def entry(self) -> Any:
        """The entry computation (by id, else by name, else the last one)."""
        module = self.module
        found = self.computations.get(int(module.entry_computation_id))
        if found is None:
            named = [c for c in module.computations if c.name == module.entry_computation_name]
            found = named[0] if named else module.computations[-1]
        return found

    @cached_property
    def fused_instruction_ids(self) -> frozenset[int]:
        """Ids of the instructions inside the computations that fusions call."""
        bodies = {
            int(c)
            for comp in self.module.computations
            for i in comp.instructions
            if i.opcode == "fusion"
            for c in i.called_computation_ids
        }
        computations = self.module.computations
        return frozenset(
            int(i.id) for c in computations if int(c.id) in bodies for i in c.instructions
        )

    def operands(self, instruction: Any) -> list[Any]:
        """The operand instructions of ``instruction`` (those the module holds)."""
        table = self.instructions
        return [table[i] for i in instruction.operand_ids if int(i) in table]

    def root(self, computation: Any) -> Any:
        """The root instruction of ``computation`` (its last when the id is unknown)."""
        for instruction in computation.instructions:
            if int(instruction.id) == int(computation.root_id):
                return instruction
        return computation.instructions[-1]

    def called(self, instruction: Any) -> list[Any]:
        """The computations ``instruction`` calls (fused, body, condition, ...)."""
        table = self.computations
        return [table[i] for i in instruction.called_computation_ids if int(i) in table]


@lru_cache(maxsize=16)
def parsed(record: ProgramRecord) -> Program:
    """The :class:`Program` of a profile's program record, parsed once for the
    tools that read it in one run (the report's op profile and memory viewer).

    Raises:
        InvalidInputError: the record's bytes are not an ``HloProto``.
    """
    from tfprof_lite.proto.xla_program import parse_program

    label = program_label(record.module, record.program_id)
    return Program(parse_program(record.hlo, f"program {label}"))


def program_label(name: str, program_id: int | None) -> str:
    """``name(program_id)``, as XProf names a program; ``name`` without an id."""
    return name if program_id is None else f"{name}({program_id})"
