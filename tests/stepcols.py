"""Checks shared by the tests of the two step-column decoders (no TensorFlow).

:func:`check_decoders` is the one differential rule, used by the unit, integration,
fuzz and sanitizer tests alike: for any bytes,

* when protobuf (upb) cannot parse them as a RunMetadata, the native decoder must
  decline (return None), so the caller reports protobuf's error;
* when the native decoder returns columns, they must equal
  :func:`~tfprof_lite.proto.steps.columns_from_message` of upb's parse, field by
  field (arrays with their dtype, lists, ``raw`` parsed back to equal messages),
  and ``add_step``'s pure path must accept the bytes too (its parse refuses bytes
  that look like another input kind).

:func:`native_decode` runs the native decoder even when ``TFPROF_LITE_PURE_PYTHON``
is set (the suite runs once with it, see ``docs/native.md``), so these checks always
exercise the extension. :func:`skip_or_fail` skips a test whose tool is missing,
except under ``CI=true``, where the missing tool is an error.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import numpy as np
import pytest

from tfprof_lite.errors import InvalidInputError
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto import steps
from tfprof_lite.proto.codec import parse
from tfprof_lite.proto.steps import StepColumns

__all__ = [
    "FIELDS",
    "NativeMismatch",
    "assert_same_columns",
    "check_decoders",
    "column_differences",
    "in_ci",
    "native_decode",
    "parse_or_none",
    "require_native",
    "skip_or_fail",
]

#: Every field of :class:`StepColumns`, in declaration order.
FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(StepColumns))


class NativeMismatch(AssertionError):
    """The native decoder disagrees with protobuf (accepts what upb rejects, or
    returns other columns)."""


def in_ci() -> bool:
    """Whether the tests run under ``CI=true`` (missing tools are errors there)."""
    return os.environ.get("CI", "") == "true"


def skip_or_fail(reason: str) -> NoReturn:
    """Skip the test for ``reason``; under ``CI=true`` fail it instead."""
    if in_ci():
        pytest.fail(f"{reason} (required when CI=true)")
    pytest.skip(reason)


def require_native() -> None:
    """Skip (fail under CI) unless the native decoder is built."""
    if not steps.native_available():
        skip_or_fail(
            "the native decoder is not built "
            "(python setup.py build_ext --inplace; see docs/native.md)"
        )


@contextmanager
def _native_allowed() -> Iterator[None]:
    saved = os.environ.pop(steps.PURE_PYTHON_ENV, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[steps.PURE_PYTHON_ENV] = saved


def native_decode(data: bytes) -> StepColumns | None:
    """:func:`~tfprof_lite.proto.steps.native_columns` of ``data``, whatever
    ``TFPROF_LITE_PURE_PYTHON`` says."""
    with _native_allowed():
        return steps.native_columns(data)


def parse_or_none(data: bytes) -> Any | None:
    """``data`` parsed by upb as our RunMetadata, or None when it does not parse."""
    meta = pb.RunMetadata()
    try:
        meta.ParseFromString(data)
    except Exception:  # noqa: BLE001 - any parse failure is "upb rejects it"
        return None
    return meta


def _raw_differences(native: list[bytes], pure: list[bytes]) -> list[str]:
    if len(native) != len(pure):
        return [f"raw: {len(native)} records vs {len(pure)}"]
    for i, (ours, theirs) in enumerate(zip(native, pure)):
        a, b = pb.NodeExecStats(), pb.NodeExecStats()
        try:
            a.ParseFromString(bytes(ours))
        except Exception as err:  # noqa: BLE001
            return [f"raw[{i}]: native record does not parse ({err})"]
        b.ParseFromString(theirs)
        if a != b:
            return [f"raw[{i}]: {a!r} != {b!r}"]
    return []


def column_differences(native: StepColumns, pure: StepColumns) -> list[str]:
    """One line per field where ``native`` and ``pure`` differ (empty when equal)."""
    out: list[str] = []
    for name in FIELDS:
        a, b = getattr(native, name), getattr(pure, name)
        if name == "raw":
            out.extend(_raw_differences(a, b))
        elif isinstance(b, np.ndarray):
            if not isinstance(a, np.ndarray) or a.dtype != b.dtype:
                out.append(f"{name}: dtype {getattr(a, 'dtype', type(a))} vs {b.dtype}")
            elif a.shape != b.shape or not np.array_equal(a, b):
                out.append(f"{name}: {a.tolist()[:20]} vs {b.tolist()[:20]}")
        elif type(a) is not type(b) or a != b:
            out.append(f"{name}: {a!r:.200} vs {b!r:.200}")
    return out


def assert_same_columns(native: StepColumns, pure: StepColumns) -> None:
    """Raise :class:`NativeMismatch` listing every field that differs."""
    diffs = column_differences(native, pure)
    if diffs:
        raise NativeMismatch("native columns differ: " + "; ".join(diffs))


def check_decoders(data: bytes) -> str:
    """Apply the differential rule (module docstring) to ``data``.

    Returns ``"decoded"`` (native columns equal the pure ones), ``"declined"``
    (upb parses the bytes, the native decoder leaves them to it) or ``"invalid"``
    (upb rejects them and the native decoder declined). Raises
    :class:`NativeMismatch` otherwise.
    """
    native = native_decode(data)
    meta = parse_or_none(data)
    if meta is None:
        if native is not None:
            raise NativeMismatch(f"native decoded {len(data)} bytes that upb rejects")
        return "invalid"
    if native is None:
        return "declined"
    assert_same_columns(native, steps.columns_from_message(meta))
    _check_add_step_parse(data, meta)
    return "decoded"


def _check_add_step_parse(data: bytes, meta: Any) -> None:
    """Bytes the native decoder reads must also pass the pure path of ``add_step``:
    its parse (which refuses bytes that look like another input kind) and its
    emptiness test."""
    try:
        parse(pb.RunMetadata, data, "run_meta")
    except InvalidInputError as err:
        raise NativeMismatch(f"native decoded bytes the pure path refuses: {err}") from err
    if (meta.ByteSize() == 0) != (not data):
        raise NativeMismatch("native and pure paths disagree on whether the input is empty")
