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
"""

from __future__ import annotations

from typing import Any, TypeVar

from google.protobuf.message import DecodeError

from tfprof_lite.errors import InvalidInputError

__all__ = ["parse"]

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

    Raises:
        InvalidInputError: ``data`` does not parse, is a message of another type, or
            is not bytes or a protobuf message.
    """
    if isinstance(data, cls):
        return data
    factory: Any = cls
    expected: str = factory.DESCRIPTOR.name
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = data if isinstance(data, (bytes, bytearray)) else bytes(data)  # no copy
    else:
        descriptor: Any = getattr(type(data), "DESCRIPTOR", None)
        serialize: Any = getattr(data, "SerializeToString", None)
        if not callable(serialize) or not hasattr(descriptor, "full_name"):
            raise InvalidInputError(
                f"{what}: expected serialized bytes or a {expected} message, got {_type_name(data)}"
            )
        if descriptor.name != expected:
            raise InvalidInputError(
                f"{what}: expected a {expected} message, got a {descriptor.full_name} message"
            )
        raw = serialize()
    message: Any = factory()
    try:
        message.ParseFromString(raw)
    except (DecodeError, UnicodeDecodeError, RecursionError) as err:
        raise InvalidInputError(
            f"{what}: {len(raw)} bytes are not a valid {expected} message ({_decode_detail(err)})"
        ) from err
    result: _M = message
    return result
