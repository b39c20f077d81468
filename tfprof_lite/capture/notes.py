"""What graph capture prints: TensorFlow's noise kept out, tfprof's notes kept.

Contract:

* :func:`tf_deprecations_silenced` is a context manager around our own calls
  into TensorFlow's FLOP registry (``ops.get_stats_for_node_def``), whose
  statistics functions call the deprecated
  ``graph_util.tensor_shape_from_node_def_name``: TensorFlow's deprecation
  warning for it is not printed (nor marked as printed, so a user's own call of
  TensorFlow's profiler still warns as usual).
* :func:`note_incomplete_shapes` prints tfprof's line ``N ops no flops stats
  due to incomplete shapes.`` on stderr. The drop-in API prints it whenever
  TensorFlow's ``tfprof_logger`` would (each ``Profiler(graph)``, each
  ``profile()`` without RunMetadata); inside :func:`internal_capture` (the
  profilers :mod:`tfprof_lite.session` creates for ``ProfileContext``,
  ``ProfilerHook`` and environment activation) it is printed at most once per
  process.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from contextvars import ContextVar

__all__ = ["internal_capture", "note_incomplete_shapes", "tf_deprecations_silenced"]

_INTERNAL: ContextVar[bool] = ContextVar("tfprof_lite_internal_capture", default=False)
_internal_noted = False


@contextlib.contextmanager
def internal_capture() -> Iterator[None]:
    """Within the block, capture is ours, not the drop-in API's (notes once)."""
    token = _INTERNAL.set(True)
    try:
        yield
    finally:
        _INTERNAL.reset(token)


def note_incomplete_shapes(missing: int) -> None:
    """Prints tfprof's incomplete-shapes line for ``missing`` ops (see the module doc)."""
    global _internal_noted
    if missing <= 0:
        return
    if _INTERNAL.get():
        if _internal_noted:
            return
        _internal_noted = True
    sys.stderr.write(f"{missing} ops no flops stats due to incomplete shapes.\n")


@contextlib.contextmanager
def tf_deprecations_silenced() -> Iterator[None]:
    """TensorFlow's deprecation warnings off within the block (TensorFlow imported);
    restored also when the block raises (``deprecation.silence`` does not)."""
    from tensorflow.python.util import deprecation

    flag = "_PRINT_DEPRECATION_WARNINGS"
    if not hasattr(deprecation, flag):  # pragma: no cover - another TensorFlow layout
        with deprecation.silence():
            yield
        return
    previous = getattr(deprecation, flag)
    setattr(deprecation, flag, False)
    try:
        yield
    finally:
        setattr(deprecation, flag, previous)
