"""Message classes for the subset of XLA's HLO protos that tfprof_lite reads.

Contract: :data:`HloProto` (and the classes it contains) are built from
``hlo.proto`` in the package's private descriptor pool (see
:mod:`tfprof_lite.proto.messages`), proto package ``tfprof_lite.xla``. They parse
the serialized ``HloProto`` that XLA's profiler stores in the ``Hlo Proto`` stat of
an XSpace's ``/host:metadata`` plane (and the ``*.hlo.pb`` files of
``--xla_dump_hlo_as_proto``): the module with its instructions' shapes, windows
and dimension numbers, the schedule, the stack frame index, and the buffer
assignment. Field numbers are XLA's; fields left out of the subset are kept as
unknown fields. :func:`parse_hlo_proto` returns the whole message,
:func:`parse_hlo_module` only the module (the bytes read as an
:data:`HloProtoModule`, whose buffer assignment stays unread); both raise
:class:`~tfprof_lite.errors.InvalidInputError` naming the program.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import DecodeError

from tfprof_lite.errors import InvalidInputError
from tfprof_lite.proto.messages import _cls

__all__ = [
    "BufferAllocationProto",
    "BufferAssignmentProto",
    "HeapSimulatorTrace",
    "HloComputationProto",
    "HloInputOutputAliasProto",
    "HloInstructionProto",
    "HloModuleProto",
    "HloProto",
    "HloProtoModule",
    "HloScheduleProto",
    "LayoutProto",
    "LogicalBufferProto",
    "OpMetadata",
    "ShapeProto",
    "StackFrameIndexProto",
    "parse_hlo_module",
    "parse_hlo_proto",
]

_XLA = "tfprof_lite.xla."

HloProto: Any = _cls(_XLA + "HloProto")
HloProtoModule: Any = _cls(_XLA + "HloProtoModule")
HloModuleProto: Any = _cls(_XLA + "HloModuleProto")
HloComputationProto: Any = _cls(_XLA + "HloComputationProto")
HloInstructionProto: Any = _cls(_XLA + "HloInstructionProto")
HloScheduleProto: Any = _cls(_XLA + "HloScheduleProto")
HloInputOutputAliasProto: Any = _cls(_XLA + "HloInputOutputAliasProto")
StackFrameIndexProto: Any = _cls(_XLA + "StackFrameIndexProto")
OpMetadata: Any = _cls(_XLA + "OpMetadata")
ShapeProto: Any = _cls(_XLA + "ShapeProto")
LayoutProto: Any = _cls(_XLA + "LayoutProto")
BufferAssignmentProto: Any = _cls(_XLA + "BufferAssignmentProto")
LogicalBufferProto: Any = _cls(_XLA + "LogicalBufferProto")
BufferAllocationProto: Any = _cls(_XLA + "BufferAllocationProto")
HeapSimulatorTrace: Any = _cls(_XLA + "HeapSimulatorTrace")


def _parse(cls: Any, data: bytes, what: str) -> Any:
    msg = cls()
    try:
        msg.ParseFromString(bytes(data))
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise InvalidInputError(
            f"{what}: not a serialized XLA HloProto ({exc}); "
            "pass the 'Hlo Proto' bytes of the /host:metadata plane"
        ) from None
    return msg


def parse_hlo_proto(data: bytes, what: str = "HLO proto") -> Any:
    """Parse serialized ``HloProto`` bytes (the module and its buffer assignment).

    Raises:
        InvalidInputError: the bytes are not an ``HloProto`` (``what`` names them).
    """
    return _parse(HloProto, data, what)


def parse_hlo_module(data: bytes, what: str = "HLO proto") -> Any:
    """The ``hlo_module`` of serialized ``HloProto`` bytes, the buffer assignment
    left unread.

    Raises:
        InvalidInputError: the bytes are not an ``HloProto`` (``what`` names them).
    """
    return _parse(HloProtoModule, data, what).hlo_module
