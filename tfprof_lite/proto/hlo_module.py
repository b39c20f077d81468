"""An XLA program's ``HloModuleProto``, read without protobuf where it can be.

Contract: :func:`read_hlo_module` returns the ``hlo_module`` of serialized
``HloProto`` bytes (what XLA's profiler stores in the ``Hlo Proto`` stat of an
XSpace's ``/host:metadata`` plane). The native decoder (``_native/_hlodecode.c``)
gives it as the named tuples below, one per message of ``hlo.proto``, with the
fields its readers use (:mod:`tfprof_lite.model.xla_hlo`,
:mod:`tfprof_lite.model.xspace_code`) and the values protobuf's parse gives
them (repeated fields as tuples, the schedule's ``sequences`` as a dict, an
absent message as its defaults), so that opening an XSpace imports no
protobuf. When the extension is not built, is turned off
(``TFPROF_LITE_PURE_PYTHON``) or declines the bytes (anything outside the plain
wire format it reads), the pure path parses them with protobuf
(:func:`tfprof_lite.proto.hlo.parse_hlo_proto`) and returns the message, which
its readers use through the same field names; its errors are that path's.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from tfprof_lite._native import active

__all__ = [
    "FileLocation",
    "HloComputation",
    "HloInstruction",
    "HloModule",
    "HloSchedule",
    "InstructionSequence",
    "OpMetadata",
    "StackFrame",
    "StackFrameIndex",
    "read_hlo_module",
]

_MODULE = "_hlodecode"


class OpMetadata(NamedTuple):
    """``xla.OpMetadata`` (the fields read): where an instruction came from."""

    op_type: str = ""
    op_name: str = ""
    source_file: str = ""
    source_line: int = 0
    stack_frame_id: int = 0


class HloInstruction(NamedTuple):
    """``xla.HloInstructionProto``'s fields that tfprof_lite reads."""

    name: str = ""
    opcode: str = ""
    metadata: OpMetadata = OpMetadata()
    fusion_kind: str = ""
    custom_call_target: str = ""
    id: int = 0
    operand_ids: tuple[int, ...] = ()
    called_computation_ids: tuple[int, ...] = ()
    backend_config: bytes = b""


class HloComputation(NamedTuple):
    """``xla.HloComputationProto``'s fields that tfprof_lite reads."""

    name: str = ""
    instructions: tuple[HloInstruction, ...] = ()
    id: int = 0
    root_id: int = 0


class InstructionSequence(NamedTuple):
    """``xla.HloScheduleProto.InstructionSequence``."""

    instruction_ids: tuple[int, ...] = ()


class HloSchedule(NamedTuple):
    """``xla.HloScheduleProto``: computation id -> its instructions in order."""

    sequences: dict[int, InstructionSequence]


class FileLocation(NamedTuple):
    """``xla.StackFrameIndexProto.FileLocation``'s file, function and line (ids
    are 1-based)."""

    file_name_id: int = 0
    function_name_id: int = 0
    line: int = 0


class StackFrame(NamedTuple):
    """``xla.StackFrameIndexProto.StackFrame`` (ids are 1-based, 0 = none)."""

    file_location_id: int = 0
    parent_frame_id: int = 0


class StackFrameIndex(NamedTuple):
    """``xla.StackFrameIndexProto``: the module's Python call stacks."""

    file_names: tuple[str, ...] = ()
    function_names: tuple[str, ...] = ()
    file_locations: tuple[FileLocation, ...] = ()
    stack_frames: tuple[StackFrame, ...] = ()


class HloModule(NamedTuple):
    """``xla.HloModuleProto``'s fields that tfprof_lite reads."""

    name: str
    entry_computation_name: str
    computations: tuple[HloComputation, ...]
    id: int
    entry_computation_id: int
    schedule: HloSchedule
    stack_frame_index: StackFrameIndex


#: The classes the native decoder builds, in its order.
CLASSES = (
    HloModule,
    HloComputation,
    HloInstruction,
    OpMetadata,
    HloSchedule,
    InstructionSequence,
    StackFrameIndex,
    FileLocation,
    StackFrame,
)


def native_module(data: bytes) -> HloModule | None:
    """The module of serialized ``HloProto`` ``data`` from the native decoder, or
    None: not built, turned off, or declined."""
    module = active(_MODULE)
    if module is None:
        return None
    found: HloModule | None = module.decode(bytes(data), CLASSES)
    return found


def read_hlo_module(data: bytes, what: str = "HLO proto") -> Any:
    """The ``hlo_module`` of serialized ``HloProto`` ``data`` (see the module
    docstring for which form).

    Raises:
        InvalidInputError: the bytes are not an ``HloProto`` (``what`` names them).
    """
    found = native_module(data)
    if found is not None:
        return found
    from tfprof_lite.proto.hlo import parse_hlo_proto

    return parse_hlo_proto(data, what).hlo_module
