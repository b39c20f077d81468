"""Checks shared by the native XSpace decoder's tests and fuzz target.

:func:`check_xspace` runs one input through the three readers: upb's parse
(:func:`tfprof_lite.formats.xspace.wire.decode.parse_xspace`), the pure walk of that parse
(:func:`~tfprof_lite.formats.xspace.wire.decode.columns_from_message`) and the native decoder
(:func:`tfprof_lite.formats.xspace.wire.native.native_columns`), and requires that they
agree: bytes upb or the pure walk rejects are declined by the native decoder, the
columns it returns equal the pure walk's, and
:func:`~tfprof_lite.formats.xspace.wire.decode.decode_xspace`
gives the pure path's columns or its error, and so does the pure path that
parses a file's planes and lines one by one
(:func:`tfprof_lite.formats.xspace.wire.walk.walk_bytes`). Each check runs twice: with every
event stat, and with the event stats cut down to :data:`KEEP` (the loader's filter,
:data:`tfprof_lite.formats.xspace.read.load.EVENT_STATS`, and ``""`` for stats without
metadata).
:func:`column_differences` names the columns that differ (values and dtypes).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import fields
from typing import Any

import numpy as np

from tests.stepcols import skip_or_fail
from tfprof_lite._native import PURE_PYTHON_ENV
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.formats.xspace.wire import columns as xcols
from tfprof_lite.formats.xspace.wire import decode as xplane
from tfprof_lite.formats.xspace.wire import native as xplane_native
from tfprof_lite.formats.xspace.wire import walk as xplane_walk

__all__ = [
    "KEEP",
    "XSpaceMismatch",
    "check_xspace",
    "column_differences",
    "require_xspace_native",
]

#: The event stat filter of the second check.
KEEP = ("", "correlation_id", "kernel_details", "step_num", "tf_op")


class XSpaceMismatch(AssertionError):
    """The native XSpace decoder disagrees with protobuf and the pure walk."""


def require_xspace_native() -> None:
    """Skip (fail under CI) unless the native XSpace decoder is built."""
    if not xplane_native.available():
        skip_or_fail("the native XSpace decoder is not built (python setup.py build_ext --inplace)")


def column_differences(a: xcols.XSpaceColumns, b: xcols.XSpaceColumns) -> list[str]:
    """The names of the columns (and stat table parts) that differ."""
    out = []
    for f in fields(a):
        left, right = getattr(a, f.name), getattr(b, f.name)
        if isinstance(left, xcols.StatColumns):
            out.extend(
                f"{f.name}.{part}"
                for part in ("key", "kind", "value")
                if not _same_array(getattr(left, part), getattr(right, part))
            )
        elif isinstance(left, np.ndarray):
            if not _same_array(left, right):
                out.append(f.name)
        elif type(left) is not type(right) or left != right:
            out.append(f.name)
    return out


def _same_array(a: Any, b: Any) -> bool:
    return bool(a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b))


def _pure(data: bytes, keep: tuple[str, ...] | None) -> xcols.XSpaceColumns | str:
    """The pure path's columns (upb's parse walked in Python), or its error."""
    saved = os.environ.get(PURE_PYTHON_ENV)
    os.environ[PURE_PYTHON_ENV] = "1"
    try:
        return xplane.decode_xspace(data, event_stats=keep)
    except InvalidInputError as err:
        return str(err)
    finally:
        if saved is None:
            del os.environ[PURE_PYTHON_ENV]
        else:
            os.environ[PURE_PYTHON_ENV] = saved


def _public(data: bytes, keep: tuple[str, ...] | None) -> xcols.XSpaceColumns | str:
    """What :func:`~tfprof_lite.formats.xspace.wire.decode.decode_xspace` gives:
    columns or its error."""
    try:
        return xplane.decode_xspace(data, event_stats=keep)
    except InvalidInputError as err:
        return str(err)


def check_xspace(data: bytes) -> str:
    """``"decoded"`` when the native decoder gave the pure walk's columns,
    ``"declined"`` when it declined; raises :class:`XSpaceMismatch` otherwise."""
    status = _check(data, None)
    filtered = _check(data, KEEP)
    if filtered != status and not (status == "declined" and _gunzip_declined(data)):
        raise XSpaceMismatch(f"with the event stat filter the decoder {filtered}, else {status}")
    return status


def _gunzip_declined(data: bytes) -> bool:
    """Whether the pure path rejects ``data`` for a compressed string alone (the
    filter may leave that stat out, and then both paths accept the file)."""
    pure = _pure(data, None)
    return isinstance(pure, str) and "does not decompress" in pure


def _from_fd(data: bytes, keep: tuple[str, ...] | None) -> xcols.XSpaceColumns | None:
    """The native decoder's columns of ``data`` read from a file descriptor (the
    reader that gives the input back line by line)."""
    fd = os.memfd_create("xspace") if hasattr(os, "memfd_create") else None
    if fd is None:
        with tempfile.TemporaryFile() as handle:
            handle.write(data)
            handle.seek(0)
            return xplane_native.native_file_columns(handle.fileno(), len(data), keep)
    try:
        os.write(fd, data)
        os.lseek(fd, 0, os.SEEK_SET)
        return xplane_native.native_file_columns(fd, len(data), keep)
    finally:
        os.close(fd)


def _split(data: bytes, keep: tuple[str, ...] | None) -> xcols.XSpaceColumns | str:
    """The pure path's columns from the bytes split into planes and lines
    (:func:`tfprof_lite.formats.xspace.wire.walk.walk_bytes`), or its error."""
    try:
        return xplane_walk.walk_bytes(data, "XSpace", keep)
    except InvalidInputError as err:
        return str(err)


def _check(data: bytes, keep: tuple[str, ...] | None) -> str:
    pure = _pure(data, keep)
    split = _split(data, keep)
    if isinstance(split, str) or isinstance(pure, str):
        if split != pure:
            raise XSpaceMismatch(f"the split parse differs: {split!r} / {pure!r}")
    elif column_differences(split, pure):
        raise XSpaceMismatch(f"the split parse differs: {column_differences(split, pure)}")
    native = xplane_native.native_columns(data, keep)
    from_fd = _from_fd(data, keep)
    if (native is None) != (from_fd is None) or (
        native is not None and from_fd is not None and column_differences(native, from_fd)
    ):
        raise XSpaceMismatch("the decoder read from a descriptor gives other columns")
    if native is not None:
        if isinstance(pure, str):
            raise XSpaceMismatch(f"native decoded what the pure path rejects: {pure}")
        diff = column_differences(pure, native)
        if diff:
            raise XSpaceMismatch(f"native and pure columns differ: {diff}")
    public = _public(data, keep)
    if isinstance(public, str) or isinstance(pure, str):
        if public != pure:
            raise XSpaceMismatch(f"errors differ: {public!r} / {pure!r}")
    elif column_differences(public, pure):
        raise XSpaceMismatch(f"decode_xspace differs: {column_differences(public, pure)}")
    return "declined" if native is None else "decoded"
