"""Message classes for the subset of XLA's HLO protos that tfprof_lite reads.

Contract: :data:`HloProto` (and the classes it contains) are built from
``hlo.proto`` in the package's private descriptor pool (see
:mod:`tfprof_lite.proto.messages`), proto package ``tfprof_lite.xla``. They parse
the serialized ``HloProto`` that XLA's profiler stores in the ``Hlo Proto`` stat of
an XSpace's ``/host:metadata`` plane: field numbers are XLA's, fields left out of
the subset are kept as unknown fields. :func:`parse_hlo_proto` returns the
message or raises :class:`~tfprof_lite.errors.InvalidInputError` naming the
program.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import DecodeError

from tfprof_lite.errors import InvalidInputError
from tfprof_lite.proto.messages import _cls

__all__ = [
    "HloComputationProto",
    "HloInstructionProto",
    "HloModuleProto",
    "HloProto",
    "HloScheduleProto",
    "OpMetadata",
    "StackFrameIndexProto",
    "parse_hlo_proto",
]

_XLA = "tfprof_lite.xla."

HloProto: Any = _cls(_XLA + "HloProto")
HloModuleProto: Any = _cls(_XLA + "HloModuleProto")
HloComputationProto: Any = _cls(_XLA + "HloComputationProto")
HloInstructionProto: Any = _cls(_XLA + "HloInstructionProto")
HloScheduleProto: Any = _cls(_XLA + "HloScheduleProto")
StackFrameIndexProto: Any = _cls(_XLA + "StackFrameIndexProto")
OpMetadata: Any = _cls(_XLA + "OpMetadata")


def parse_hlo_proto(data: bytes, what: str = "HLO proto") -> Any:
    """Parse serialized ``HloProto`` bytes.

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
