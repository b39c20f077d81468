"""XSpace bytes parsed with protobuf, refusing what is no XSpace (one-line errors)."""

from __future__ import annotations

from typing import Any

from tfprof_lite.errors import InvalidInputError

__all__ = ["parse_xspace"]


def parse_xspace(raw: bytes | bytearray | memoryview, what: str = "XSpace") -> Any:
    """``raw`` parsed as an XSpace message, refusing what is not one.

    Raises:
        InvalidInputError: the bytes do not parse (truncated or corrupt), hold
            another kind of message (a ProfileProto, a RunMetadata...), or hold
            no plane.
    """
    from tfprof_lite.proto import kinds
    from tfprof_lite.proto.messages import XSpace

    data = raw if isinstance(raw, bytes) else bytes(raw)
    space = XSpace()
    try:
        space.ParseFromString(data)
    except Exception:  # noqa: BLE001 - protobuf's DecodeError and friends
        other = kinds.identify(data, exclude="XSpace")
        if other is not None:
            raise _other_kind(what, other) from None
        raise InvalidInputError(
            f"{what}: not a readable XSpace (truncated or corrupt); "
            "pass the complete *.xplane.pb file the profiler wrote"
        ) from None
    if kinds.mismatched(space) or not any(p.name for p in space.planes):
        other = kinds.identify(data, exclude="XSpace")
        if other is not None:
            raise _other_kind(what, other)
        raise InvalidInputError(
            f"{what}: not an XSpace (no named plane); pass a *.xplane.pb file "
            "written by the TensorFlow or JAX profiler"
        )
    return space


def _other_kind(what: str, other: str) -> InvalidInputError:
    from tfprof_lite.proto import kinds

    return InvalidInputError(
        f"{what}: expected an XSpace (*.xplane.pb), but it looks like "
        f"{kinds.article(other)}; {kinds.API_PLACES[other]}"
    )
