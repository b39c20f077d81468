"""An XLA program as the program tools read it: its whole ``HloProto``.

Contract: :func:`parse_program` reads serialized ``HloProto`` bytes (the ``Hlo
Proto`` stat of an XSpace's ``/host:metadata`` plane, or a ``*.hlo.pb`` /
``*.hlo_proto.pb`` file of ``--xla_dump_hlo_as_proto``): the module with its
instructions' shapes, windows and dimension numbers, and its buffer assignment.
It returns the native decoder's :class:`~tfprof_lite.proto.hlo_module.HloProgram`
(named tuples, :func:`tfprof_lite.proto.hlo_module.native_program`) when the
extension is built, not turned off and accepts the bytes; else protobuf's
message of ``hlo.proto``'s ``HloProto`` (:mod:`tfprof_lite.proto.hlo`, whose
classes are re-exported here). Both have the same attribute names and values
(a repeated field is a tuple or a repeated container, an absent message its
defaults), so a reader uses plain attribute reads, never protobuf's methods.
Bytes that are not an ``HloProto`` raise
:class:`~tfprof_lite.errors.InvalidInputError` naming the program (``what``).
"""

from __future__ import annotations

from typing import Any

from tfprof_lite.proto.hlo_module import native_program

__all__ = ["parse_program"]

#: The message classes of :mod:`tfprof_lite.proto.hlo` also reachable here.
_MESSAGES = frozenset(
    {
        "BufferAssignmentProto",
        "HloComputationProto",
        "HloInstructionProto",
        "HloModuleProto",
        "HloProto",
        "ShapeProto",
    }
)


def parse_program(data: bytes, what: str = "HLO proto") -> Any:
    """Read serialized ``HloProto`` bytes (a module and its buffer assignment).

    Raises:
        InvalidInputError: the bytes are not an ``HloProto`` (``what`` names them).
    """
    found = native_program(data)
    if found is not None:
        return found
    from tfprof_lite.proto.hlo import parse_hlo_proto

    return parse_hlo_proto(data, what)


def __getattr__(name: str) -> Any:
    """The message classes of :mod:`tfprof_lite.proto.hlo` (imported when asked
    for, so that a native parse imports no protobuf)."""
    if name in _MESSAGES:
        from tfprof_lite.proto import hlo

        return getattr(hlo, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
