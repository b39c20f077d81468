"""Turn user input into one of our message classes, or fail with one clear line.

:func:`parse` accepts, for an expected message class ``cls``:

* an instance of ``cls`` itself: returned as is (not copied);
* ``bytes`` / ``bytearray`` / ``memoryview``: the serialized message;
* any other protobuf message whose type has the same short name (the last component
  of its full name, e.g. TensorFlow's ``tensorflow.RunMetadata`` for our
  ``tfprof_lite.tf.RunMetadata``): it is serialized and re-parsed into ``cls``.

Anything else fails with :class:`~tfprof_lite.errors.InvalidInputError`, whose
message is one line that starts with ``what`` (the caller's name for the input, e.g.
``"run_meta"``) and says what was wrong: bytes that do not parse, a message of
another type (naming both the given and the expected type), or an unsupported Python
type. Empty bytes are a valid, empty message; callers that need content check it.
For the four input kinds (GraphDef, RunMetadata, OpLogProto, ProfileProto), bytes
that do not parse cleanly as the expected kind but plainly are another are refused
with the kind they look like and where it goes (:mod:`tfprof_lite.proto.kinds`).
"""

from __future__ import annotations

from typing import Any, TypeVar

from google.protobuf.message import DecodeError, Message

from tfprof_lite.errors import InvalidInputError
from tfprof_lite.proto import kinds

__all__ = ["message_copy", "parse", "wire_bytes"]

_M = TypeVar("_M")


def _type_name(obj: object) -> str:
    kind = type(obj)
    return (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )


def _decode_detail(err: Exception) -> str:
    if isinstance(err, UnicodeDecodeError):  # the pure-Python backend's bad UTF-8 error
        return "String field had bad UTF-8"
    # upb says "Error parsing message with type 'X': <reason>"; keep the reason.
    text = " ".join(str(err).split())
    return text.rpartition("': ")[2] or type(err).__name__


def parse(cls: type[_M], data: object, what: str) -> _M:
    """Return ``data`` as a ``cls`` message (see the module docstring).

    For the four input kinds (GraphDef, RunMetadata, OpLogProto, ProfileProto),
    bytes of another of these kinds are refused, naming the kind they look like
    and where it goes (:mod:`tfprof_lite.proto.kinds`).

    Raises:
        InvalidInputError: ``data`` does not parse, is a message of another type or
            (bytes) of another input kind, or is not bytes or a protobuf message.
    """
    if isinstance(data, cls):
        return data
    factory: Any = cls
    expected: str = factory.DESCRIPTOR.name
    from_bytes = isinstance(data, (bytes, bytearray, memoryview))
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = data if isinstance(data, (bytes, bytearray)) else bytes(data)  # no copy
    else:
        raw = _serialized(data, expected, what)
    message: Any = factory()
    try:
        _parse_into(message, raw)
    except (DecodeError, UnicodeDecodeError, RecursionError) as err:
        _check_kind(raw, expected, what, None)
        raise InvalidInputError(
            f"{what}: {len(raw)} bytes are not a valid {expected} message ({_decode_detail(err)})"
        ) from err
    if from_bytes:
        _check_kind(raw, expected, what, message)
    result: _M = message
    return result


def wire_bytes(cls: type[Any], data: object, what: str) -> bytes | None:
    """``data``'s wire bytes when it is bytes or a protobuf message named like
    ``cls`` (ours or TensorFlow's), serialized when it is a message; None for
    anything else (:func:`parse` then says what is wrong).

    Raises:
        InvalidInputError: ``data`` is a protobuf message of another type.
    """
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    if hasattr(type(data), "DESCRIPTOR") and callable(getattr(data, "SerializeToString", None)):
        return _serialized(data, cls.DESCRIPTOR.name, what)
    return None


def _parse_into(message: Any, raw: bytes | bytearray) -> None:
    """``message.ParseFromString(raw)``; protobuf 4.x takes no bytearray, so it gets
    a copy there (newer versions parse the bytearray without one)."""
    try:
        message.ParseFromString(raw)
    except TypeError:
        if not isinstance(raw, bytearray):
            raise
        message.ParseFromString(bytes(raw))


def message_copy(cls: type[Any], data: object, what: str) -> Any | None:
    """A copy of ``data``, taken now, when it is a protobuf message named like
    ``cls`` (ours or TensorFlow's), of ``data``'s own class; None for bytes and
    anything else. Later changes to ``data`` do not reach the copy, which may be
    read (serialized) later, as :func:`wire_bytes` would have read ``data`` now.

    Raises:
        InvalidInputError: ``data`` is a protobuf message of another type.
    """
    if not isinstance(data, Message):
        return None
    _check_type(data, cls.DESCRIPTOR.name, what)
    copy = type(data)()
    copy.CopyFrom(data)
    return copy


def _serialized(data: object, expected: str, what: str) -> bytes:
    """The wire bytes of a protobuf message ``data`` whose type is named ``expected``."""
    _check_type(data, expected, what)
    message: Any = data
    raw: bytes = message.SerializeToString()
    return raw


def _check_type(data: object, expected: str, what: str) -> None:
    """Raises unless ``data`` is a protobuf message whose type is named ``expected``."""
    descriptor: Any = getattr(type(data), "DESCRIPTOR", None)
    serialize: Any = getattr(data, "SerializeToString", None)
    if not callable(serialize) or not hasattr(descriptor, "full_name"):
        raise InvalidInputError(
            f"{what}: expected serialized bytes or a {expected} message, got {_type_name(data)}"
        )
    if descriptor.name != expected:
        hint = ""
        if expected in kinds.KINDS and descriptor.name in kinds.KINDS:
            hint = f"; {kinds.API_PLACES[descriptor.name]}"
        raise InvalidInputError(
            f"{what}: expected a {expected} message, got a {descriptor.full_name} message{hint}"
        )


def _check_kind(raw: bytes | bytearray, expected: str, what: str, message: Any) -> None:
    """Raises when ``raw`` does not parse cleanly as ``expected`` (``message``: ``raw``
    parsed, None when that failed; clean = no field with a wrong wire type) but
    plausibly is another input kind. Bytes that parse cleanly are never refused:
    a GraphDef of nodes without ops is byte for byte an op log, for instance."""
    if expected not in kinds.KINDS:
        return
    if message is not None and not kinds.mismatched(message):
        return
    actual = kinds.identify(raw, exclude=expected)
    if actual is not None:
        raise kinds.wrong_kind_error(what, expected, actual)
