"""Message classes for an XLA program as the program tools read it.

Contract: :data:`HloProto` (and the classes it contains) are built from
``xla_program.proto`` in the package's private descriptor pool (see
:mod:`tfprof_lite.proto.messages`), proto package ``tfprof_lite.xla_program``:
XLA's field numbers, with the instructions' shapes, dimension numbers, windows
and the buffer assignment that :mod:`tfprof_lite.proto.hlo` leaves out. They
parse the serialized ``HloProto`` that XLA's profiler stores in the ``Hlo Proto``
stat of an XSpace's ``/host:metadata`` plane, and the ``*.hlo.pb`` /
``*.hlo_proto.pb`` files of ``--xla_dump_hlo_as_proto``. :func:`parse_program`
returns the message or raises :class:`~tfprof_lite.errors.InvalidInputError`
naming the program.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import DecodeError

from tfprof_lite.errors import InvalidInputError
from tfprof_lite.proto.messages import _cls

__all__ = [
    "BufferAssignmentProto",
    "HloComputationProto",
    "HloInstructionProto",
    "HloModuleProto",
    "HloProto",
    "ShapeProto",
    "parse_program",
]

_PKG = "tfprof_lite.xla_program."

HloProto: Any = _cls(_PKG + "HloProto")
HloModuleProto: Any = _cls(_PKG + "HloModuleProto")
HloComputationProto: Any = _cls(_PKG + "HloComputationProto")
HloInstructionProto: Any = _cls(_PKG + "HloInstructionProto")
ShapeProto: Any = _cls(_PKG + "ShapeProto")
BufferAssignmentProto: Any = _cls(_PKG + "BufferAssignmentProto")


def parse_program(data: bytes, what: str = "HLO proto") -> Any:
    """Parse serialized ``HloProto`` bytes (a module and its buffer assignment).

    Raises:
        InvalidInputError: the bytes are not an ``HloProto`` (``what`` names them).
    """
    msg = HloProto()
    try:
        msg.ParseFromString(bytes(data))
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise InvalidInputError(
            f"{what}: not a serialized XLA HloProto ({exc}); "
            "pass the 'Hlo Proto' bytes of the /host:metadata plane"
        ) from None
    return msg
