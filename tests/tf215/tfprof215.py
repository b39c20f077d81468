"""TensorFlow 2.15's own tfprof, driven directly, for the differential checks.

TF 2.15 keeps tfprof's C++ bindings in ``tensorflow.python.util._pywrap_tfprof``
(``model_analyzer`` imports it as ``print_mdl``; TF 2.21 has the same module).
All of ``tf.compat.v1.profiler.Profiler``'s methods talk to ONE process-wide
C++ ``TFStats``: ``NewProfiler``/``ProfilerFromFile`` overwrite the global
pointer and ``Profiler.__del__`` deletes whatever is current. So this module
never leaves a ``Profiler`` to the garbage collector: `tf_profiler` yields one
whose ``__del__`` does nothing and deletes the C++ object itself on exit, and
`view_from_file` loads, queries and deletes in one call. Only one TF profiler
is alive at a time; tests must not nest these.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from tensorflow.python.profiler import model_analyzer
from tensorflow.python.util import _pywrap_tfprof

__all__ = ["delete_global_profiler", "read_text", "tf_profiler", "view_from_file"]

#: tfprof view name -> ``Profiler`` method, as in ``tf.compat.v1.profiler``.
METHODS = {
    "scope": "profile_name_scope",
    "graph": "profile_graph",
    "op": "profile_operations",
    "code": "profile_python",
}


class _UnmanagedProfiler(model_analyzer.Profiler):  # type: ignore[misc]
    """A TF ``Profiler`` whose ``__del__`` leaves the global C++ profiler alone."""

    def __del__(self) -> None:
        pass


def delete_global_profiler() -> None:
    """Delete TF's global C++ profiler (a no-op when there is none)."""
    _pywrap_tfprof.DeleteProfiler()
    gc.collect()


@contextlib.contextmanager
def tf_profiler(graph: Any, run_metas: Iterable[Any]) -> Iterator[Any]:
    """TF's ``Profiler(graph)`` with ``add_step(i, meta)`` for each RunMetadata."""
    delete_global_profiler()
    profiler = _UnmanagedProfiler(graph)
    try:
        for step, meta in enumerate(run_metas):
            profiler.add_step(step, meta)
        yield profiler
    finally:
        delete_global_profiler()


def read_text(path: str | os.PathLike[str]) -> str:
    """A report file as written (UTF-8, no newline translation); ``""`` if absent."""
    if not os.path.exists(path):
        return ""
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8")


def view_from_file(
    profile: str | os.PathLike[str],
    cmd: str,
    options: Mapping[str, Any],
    outfile: str | os.PathLike[str],
) -> tuple[str, bytes]:
    """TF's tfprof on a ``profile_<step>`` file (``ProfilerFromFile``): one view.

    Returns the report written with ``-output file:outfile=<outfile>`` and the
    returned message's raw bytes (GraphNodeProto or MultiGraphNodeProto).
    """
    delete_global_profiler()
    try:
        _pywrap_tfprof.ProfilerFromFile(os.fspath(profile))
        opts = model_analyzer._build_options(dict(options, output=f"file:outfile={outfile}"))
        raw = bytes(_pywrap_tfprof.Profile(cmd.encode(), opts.SerializeToString()))
    finally:
        delete_global_profiler()
    return read_text(outfile), raw
