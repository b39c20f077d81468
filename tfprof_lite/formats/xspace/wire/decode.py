"""XSpace (``*.xplane.pb``) bytes as flat columns: the decoders.

The columns are :class:`~tfprof_lite.formats.xspace.wire.columns.XSpaceColumns` (their
tables are described there, and in ``docs/xspace.md``); the native decoder
(:mod:`tfprof_lite.formats.xspace.wire.native`) fills them when built, else the pure
walk (:mod:`tfprof_lite.formats.xspace.wire.walk`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from tfprof_lite.base.reading import read_input, read_input_with
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.formats.xspace.wire.columns import (
    XSpaceColumns,
)
from tfprof_lite.formats.xspace.wire.parse import parse_xspace

__all__ = ["columns_from_message", "decode_xspace", "decode_xspace_file"]


def columns_from_message(
    space: Any, what: str = "XSpace", event_stats: Collection[str] | None = None
) -> XSpaceColumns:
    """The columns of a parsed XSpace message (ours, upb backend); with
    ``event_stats``, the event stat table holds only the stats of those names
    (the pure walk, :mod:`tfprof_lite.formats.xspace.wire.walk`).

    Raises:
        InvalidInputError: a ``compressed_str_value`` that does not gunzip;
            an event start beyond int64 picoseconds from the origin.
    """
    from tfprof_lite.formats.xspace.wire.walk import walk

    return walk(space, what, event_stats)


def decode_xspace(
    raw: bytes | bytearray | memoryview,
    what: str = "XSpace",
    event_stats: Collection[str] | None = None,
) -> XSpaceColumns:
    """The columns of XSpace ``raw`` (``what`` names it in errors), natively when built.

    ``event_stats``: when given, the event stat table holds only the stats of
    these names (their stat metadata's; ``""`` for a stat without one), and only
    their string values are interned: a large file's other event stats (most of
    them) take no memory. The other tables are whole.

    Raises:
        InvalidInputError: see :func:`parse_xspace`, :func:`columns_from_message`;
            an event start beyond int64 picoseconds from the origin."""
    from tfprof_lite.formats.xspace.wire.native import native_columns

    data = raw if isinstance(raw, bytes) else bytes(raw)
    keep = None if event_stats is None else tuple(sorted(set(event_stats)))
    return native_columns(data, keep) or columns_from_message(parse_xspace(data, what), what, keep)


def decode_xspace_file(
    path: str,
    what: str = "an XSpace (*.xplane.pb)",
    event_stats: Collection[str] | None = None,
    limit: int | str | None = None,
) -> XSpaceColumns:
    """:func:`decode_xspace` of the user file ``path`` (``what`` it should be),
    read through the bounded reader (:func:`~tfprof_lite.base.reading.read_input_with`:
    its checks, ``limit`` and messages). The native decoder reads the file into
    memory that it gives back as the columns grow, so its peak is about the larger
    of the file and the columns, not their sum; when it declines, the file is read
    again for the pure path.

    Raises:
        InvalidInputError: see :func:`decode_xspace` and
            :func:`~tfprof_lite.base.reading.read_input`; an empty file.
    """
    from tfprof_lite.formats.xspace.wire.native import available, native_file_columns

    keep = None if event_stats is None else tuple(sorted(set(event_stats)))

    def native(fd: int, size: int) -> XSpaceColumns | None:
        if not size:
            raise InvalidInputError(f"{path}: the file is empty, expected {what}")
        return native_file_columns(fd, size, keep)

    if available():
        cols = read_input_with(path, native, what, limit)
        if cols is not None:
            return cols
    raw = read_input(path, what, limit)
    if not raw:
        raise InvalidInputError(f"{path}: the file is empty, expected {what}")
    from tfprof_lite.formats.xspace.wire.walk import walk_bytes

    return walk_bytes(raw, path, keep)
