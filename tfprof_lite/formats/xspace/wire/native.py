"""XSpace columns from the native decoder (``_native/_xplanedecode.c``).

:func:`native_columns` gives the :class:`~tfprof_lite.formats.xspace.wire.columns.XSpaceColumns`
that :func:`~tfprof_lite.formats.xspace.wire.decode.columns_from_message` would give for the
same bytes, or None when the extension is not built, is turned off
(``TFPROF_LITE_PURE_PYTHON``), or declines the bytes: anything outside the plain
subset of the wire format it reads, a compressed string that does not
decompress, and a file with no named plane. The caller then parses the bytes
with protobuf and walks the message, which accepts them the same way or raises
its usual error (``docs/native.md``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfprof_lite._native import active
from tfprof_lite.formats.xspace.wire.columns import StatColumns, XSpaceColumns

__all__ = ["available", "gunzip_text", "native_columns", "native_file_columns"]

_MODULE = "_xplanedecode"
#: (attribute, dtype) of the numeric columns, in the order the decoder gives them.
_COLUMNS = (
    ("plane_id", np.int64),
    ("plane_stat_at", np.int64),
    ("line_plane", np.int32),
    ("line_id", np.int64),
    ("line_display_id", np.int64),
    ("line_timestamp_ns", np.int64),
    ("line_duration_ps", np.int64),
    ("line_event_at", np.int64),
    ("event_line", np.int32),
    ("event_meta", np.int32),
    ("event_occurrence_rows", np.int32),
    ("event_occurrence_counts", np.int64),
    ("event_duration_ps", np.int64),
    ("event_start_ps", np.int64),
    ("event_stat_at", np.int64),
    ("meta_plane", np.int32),
    ("meta_id", np.int64),
    ("meta_stat_at", np.int64),
    ("stat_meta_plane", np.int32),
    ("stat_meta_id", np.int64),
)
_STAT_TABLES = ("plane_stats", "meta_stats", "event_stats")
_LISTS = (
    "strings",
    "blobs",
    "hostnames",
    "errors",
    "warnings",
    "plane_name",
    "line_name",
    "line_display_name",
    "meta_name",
    "meta_display_name",
    "stat_meta_name",
)


def available() -> bool:
    """Whether the native decoder is built and not turned off."""
    return active(_MODULE) is not None


def gunzip_text(raw: bytes) -> str:
    """A ``compressed_str_value`` as text (the pure path's reading of it)."""
    import gzip  # only for files with compressed strings

    return gzip.decompress(raw).decode("utf-8")


def native_columns(data: bytes, keep: tuple[str, ...] | None = None) -> XSpaceColumns | None:
    """The columns of serialized XSpace ``data``, or None (see the module docstring);
    ``keep``: the names of the event stats to keep (None: all)."""
    module = active(_MODULE)
    if module is None:
        return None
    parts = module.decode(data, gunzip_text, keep)
    if parts is None:
        return None
    cols = _assemble(parts)
    return cols if any(cols.plane_name) else None


def native_file_columns(
    fd: int, size: int, keep: tuple[str, ...] | None = None
) -> XSpaceColumns | None:
    """:func:`native_columns` of the first ``size`` bytes of open file ``fd``, read by
    the decoder into memory it gives back line by line as the columns grow (the
    file is never held whole next to them), or None: not built, turned off, or
    declined (then read the file again for the pure path).

    Raises:
        OSError: a read failed.
    """
    module = active(_MODULE)
    if module is None or not hasattr(module, "decode_fd"):  # not built on this system
        return None
    parts = module.decode_fd(fd, size, gunzip_text, keep)
    if parts is None:
        return None
    cols = _assemble(parts)
    return cols if any(cols.plane_name) else None


def _assemble(parts: tuple[Any, ...]) -> XSpaceColumns:
    """The decoder's tuple as columns (the numeric ones share its buffers)."""
    cols = XSpaceColumns(origin_ns=int(parts[len(_LISTS)]), relative=bool(parts[len(_LISTS) + 1]))
    for name, value in zip(_LISTS, parts, strict=False):
        setattr(cols, name, value)
    buffers = parts[len(_LISTS) + 2 :]
    for (name, dtype), raw in zip(_COLUMNS, buffers, strict=False):
        setattr(cols, name, np.frombuffer(raw, dtype=dtype))
    stats = buffers[len(_COLUMNS) :]
    for i, table in enumerate(_STAT_TABLES):
        key, kind, value = stats[3 * i : 3 * i + 3]
        setattr(
            cols,
            table,
            StatColumns(
                key=np.frombuffer(key, dtype=np.int32),
                kind=np.frombuffer(kind, dtype=np.int8),
                value=np.frombuffer(value, dtype=np.int64),
            ),
        )
    return cols
