"""The oracle side of the differential tests: TensorFlow's real tfprof.

`TfOracle` wraps ONE ``tf.compat.v1.profiler.Profiler`` fed with all steps of
a `tf_models.Capture`; `oracle_for` returns the process-wide current oracle;
`one_shot` wraps ``tf.compat.v1.profiler.profile``.

TF quirks this module works around or relies on (TF 2.21, CPU):

* **Process-wide singleton.** All ``Profiler`` methods talk to one global C++
  ``TFStats*`` (``print_model_analysis.cc``). ``NewProfiler`` simply
  overwrites the pointer (the old object leaks, no check) and
  ``Profiler.__del__`` calls ``DeleteProfiler()``, which deletes *whatever is
  current*. So if a stale ``Profiler`` is garbage-collected after a new one
  was created, the new one is destroyed and the next call hits
  ``CHECK(tf_stat)`` and aborts the process (SIGABRT, exit 134); and a
  ``Profiler`` object used after another was created silently reads the
  other's data. We therefore use a ``Profiler`` subclass whose ``__del__``
  does nothing, delete the C++ object explicitly (`close_current`, then
  ``gc.collect()``) and keep exactly one "current" oracle per process. A
  proxy installed as ``model_analyzer.print_mdl`` counts every
  ``NewProfiler``/``DeleteProfiler``/``ProfilerFromFile`` (also those of
  plain ``tf.compat.v1.profiler.Profiler`` objects made by other tests), and
  an oracle that is no longer current -- superseded by another oracle or by
  a foreign profiler -- transparently rebuilds its C++ profiler from the same
  capture (identical state) when used. Code calling ``_pywrap_tfprof``
  directly bypasses that bookkeeping.
* **One-shot profile() is independent.** ``tf.compat.v1.profiler.profile``
  calls ``PrintModelAnalysis`` which builds a stack-local ``TFStats``; it
  neither reads nor disturbs the global profiler (verified by tests).
* **stdout is C stdio.** Reports are written with ``absl::PrintF`` /
  ``fprintf(stdout)`` (C ``stdout``, fd 1, fully buffered when not a tty),
  bypassing ``sys.stdout``; the ``-output stdout`` path and the advisor end
  with ``fflush(stdout)``. Capturing via ``sys.stdout``/``capsys`` sees
  nothing, so `_capture_fd1` flushes ``sys.stdout``, ``dup2``'s a temp file
  onto fd 1, calls TF, ``fflush(NULL)`` via libc (for paths that do not
  flush, e.g. timeline/pprof messages) and restores fd 1.
* **Framing.** ``-output stdout`` prints the ``Options`` block between
  ``=``-banners, then the report, then the ``End of Report`` banner; the
  Options block and banners come from ``RunProfile`` in C++ (not Python) and
  only for the stdout output type. ``-output file:outfile=F`` writes only the
  report (``\\nDoc:\\n...Profile:\\n...``) to F and nothing to stdout. When the
  report is empty (e.g. ``-step`` not found) no file is created: `TfOracle.text`
  returns ``""`` then.
* **stderr.** Diagnostics come from three places, all on fd 2 and never part
  of the report: C++ ``fprintf(stderr, ...)`` (bad options / output strings,
  "Options -step=N not found", ...), C++ ``LOG(INFO)`` through absl logging
  ("Incomplete shape.", subject to ``TF_CPP_MIN_LOG_LEVEL``) and Python's
  ``sys.stderr.write`` in ``tfprof_logger`` ("N ops no flops stats due to
  incomplete shapes.", only without run_meta, e.g. from ``Profiler()``).
* **Returned protos.** ``Profile()`` returns C++ bytes that Python parses
  into ``GraphNodeProto`` (scope/graph) or ``MultiGraphNodeProto`` (op/code).
  The op view returns its rows as a ``children`` *linked list*, so with more
  than ~100 op types (the RNN capture: every control-flow-v2 pseudo node is
  its own op type) the message nests deeper than upb's parse limit (100):
  TF's Python API writes "Cannot parse returned proto: ... Exceeded
  upb_DecodeOptions_MaxDepth." to stderr and returns a *partially* parsed
  message (Python upb can build and serialize such messages, only parsing
  fails). The oracle therefore records TF's raw bytes (through the
  ``model_analyzer.print_mdl`` proxy, so the public code path is unchanged)
  and canonicalizes them itself
  (`canonical_proto`: deterministic serialization, maps sorted by key,
  recursive fields handled at the wire level).
* **serialize_to_string** returns C++ ``ProfileProto`` bytes whose maps
  (``nodes``, ``execs``, ``output_shapes``, ...) come out in a different
  order on every call (even twice in a row on the same profiler), so
  `TfOracle.serialized_profile` canonicalizes by default.
* **C++ log noise.** ``LOG(INFO) << "Incomplete shape.\\n"`` (parameters of
  a node with an unknown dim, logged each time the value is read) is followed
  by an empty line on stderr because the message itself ends with a newline.
* **Graph mutation.** ``Profiler.add_step`` (and ``profile``/``advise`` with a
  run_meta) merges runtime shapes into the Python graph's static shapes;
  `tf_models` pre-applies that so captures are stable.
* **Advisor.** ``Profiler.advise`` needs a dict of checker names to *empty*
  dicts (non-empty option dicts crash the Python helper). It prints every
  checker (``\\n<Checker>:\\n`` + one line per report, then ``fflush``) in
  C++ map iteration order, which varies between processes; `TfOracle.advise`
  returns the AdviceProto serialized deterministically (checkers sorted by
  name). ``JobChecker`` is a no-op outside Google and yields no entry; a
  checker without findings still gets an (empty) entry and header.
* **Empty RunMetadata** passed to ``add_step`` hits ``CHECK`` and aborts the
  process; captures never contain one.

The wire-level canonicalization lives in `tests.integration.tf_canonical` and the
``_pywrap_tfprof`` proxy in `tests.integration.tf_pywrap`; this module re-exports
their names (``canonical_proto``, ``_iter_fields``, ``_pywrap``, ``_take_last``).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import sys
import tempfile
from typing import TYPE_CHECKING, Any, Callable

import tensorflow as tf
from tensorflow.core.profiler import tfprof_log_pb2, tfprof_output_pb2
from tensorflow.python.profiler import model_analyzer

from tests.integration.tf_canonical import _iter_fields, canonical_proto  # noqa: F401 (re-exported)
from tests.integration.tf_pywrap import _pywrap, _take_last

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from tests.integration.tf_models import Capture


tf1 = tf.compat.v1

#: Views accepted by `TfOracle.text` & co.
VIEWS = ("scope", "graph", "op", "code")

_PROTO_CLASSES: dict[str, type] = {
    "scope": tfprof_output_pb2.GraphNodeProto,
    "graph": tfprof_output_pb2.GraphNodeProto,
    "op": tfprof_output_pb2.MultiGraphNodeProto,
    "code": tfprof_output_pb2.MultiGraphNodeProto,
}

_VIEW_METHODS = {
    "scope": "profile_name_scope",
    "graph": "profile_graph",
    "op": "profile_operations",
    "code": "profile_python",
}

_libc = ctypes.CDLL(None)


class _UnmanagedProfiler(model_analyzer.Profiler):  # type: ignore[misc]
    """A ``Profiler`` whose ``__del__`` does not delete the global C++ profiler.

    The C++ object is deleted explicitly by `close_current` instead, so a late
    garbage collection can never destroy another oracle's profiler.
    """

    def __del__(self) -> None:
        pass


@contextlib.contextmanager
def _capture_fd1() -> Iterator[Callable[[], str]]:
    """Capture everything written to file descriptor 1 (C and Python stdout).

    Yields a getter returning the captured text (valid after the block).
    """
    captured: list[str] = []
    sys.stdout.flush()
    _libc.fflush(None)
    saved = os.dup(1)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 1)
        try:
            yield lambda: captured[0]
        finally:
            sys.stdout.flush()
            _libc.fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
            tmp.seek(0)
            captured.append(tmp.read().decode("utf-8", errors="replace"))


def _check_view(view: str) -> None:
    if view not in _VIEW_METHODS:
        raise ValueError(f"unknown view {view!r}; expected one of {VIEWS}")


def _with_output(options: Mapping[str, Any], output: str) -> dict[str, Any]:
    opts = dict(options)
    opts["output"] = output
    return opts


def _read_text(path: str) -> str:
    """File content decoded as UTF-8 without newline translation; ``""`` if absent."""
    if not os.path.exists(path):
        return ""
    with open(path, "rb") as f:
        return f.read().decode("utf-8")


def _parse_run_meta(data: bytes) -> Any:
    meta = tf1.RunMetadata()
    meta.ParseFromString(data)
    return meta


_current: TfOracle | None = None


def close_current() -> None:
    """Delete TF's global C++ profiler (whoever made it) and run the GC.

    The current oracle, if any, stops being current; using it again rebuilds.
    """
    global _current
    if _current is not None:
        _current._profiler = None
        _current = None
    _pywrap.DeleteProfiler()
    gc.collect()


class TfOracle:
    """TF's real tfprof loaded with every step of one `Capture`.

    Creating an oracle (or using one that is no longer current) deletes the
    previous process-wide C++ profiler first; prefer `oracle_for`, which
    reuses the current oracle when it belongs to the same capture.
    """

    def __init__(self, capture: Capture) -> None:
        """Build ``Profiler(capture.graph)`` and ``add_step`` every captured step."""
        self.capture = capture
        self._profiler: _UnmanagedProfiler | None = None
        self._generation = -1
        self._activate()

    @property
    def is_current(self) -> bool:
        """Whether this oracle owns the live global C++ profiler."""
        return (
            _current is self
            and self._profiler is not None
            and self._generation == _pywrap.generation
        )

    def _activate(self) -> _UnmanagedProfiler:
        global _current
        if self.is_current:
            assert self._profiler is not None
            return self._profiler
        close_current()
        profiler = _UnmanagedProfiler(self.capture.graph)
        for step, data in self.capture.run_metas:
            profiler.add_step(step, _parse_run_meta(data))
        self._profiler = profiler
        self._generation = _pywrap.generation
        _current = self
        return profiler

    @property
    def profiler(self) -> Any:
        """The underlying ``tf.compat.v1.profiler.Profiler`` (made current)."""
        return self._activate()

    def _profile(self, view: str, options: Mapping[str, Any]) -> bytes:
        """Run the public ``Profiler.profile_*`` method; return TF's raw bytes."""
        _check_view(view)
        profiler = self._activate()
        _pywrap.last = None
        getattr(profiler, _VIEW_METHODS[view])(dict(options))
        return _take_last()

    def text(self, view: str, options: Mapping[str, Any]) -> str:
        """Report text as written by ``-output file:outfile=<tmp>``.

        ``options`` is copied and its ``output`` replaced. The text is the
        report without the Options block and banners (it starts with
        ``\\nDoc:\\n`` unless a warning precedes it); ``""`` when TF writes
        no file (empty report, e.g. unknown ``step``).
        """
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "report.txt")
            self._profile(view, _with_output(options, f"file:outfile={path}"))
            return _read_text(path)

    def stdout(self, view: str, options: Mapping[str, Any]) -> str:
        """Everything written to fd 1 by the query, ``options`` used as given.

        With ``output`` 'stdout' (the builder default) this is the Options
        block, banners and report.
        """
        self._activate()
        with _capture_fd1() as out:
            self._profile(view, options)
        return out()

    def proto(self, view: str, options: Mapping[str, Any]) -> bytes:
        """The returned GraphNodeProto (scope/graph) or MultiGraphNodeProto (op/code).

        Queried with ``output`` 'none'; TF's raw bytes made canonical with
        `canonical_proto` (deterministic, and correct even where TF's Python
        API fails to parse deep op-view results).
        """
        raw = self._profile(view, _with_output(options, "none"))
        return canonical_proto(_PROTO_CLASSES[view], raw)

    def serialized_profile(self, canonical: bool = True) -> bytes:
        """``Profiler.serialize_to_string()`` (a ``ProfileProto``).

        C++ writes its maps in an order that changes from call to call, so by
        default the bytes are parsed and re-serialized deterministically;
        ``canonical=False`` returns TF's bytes untouched.
        """
        data = bytes(self._activate().serialize_to_string())
        if not canonical:
            return data
        return canonical_proto(tfprof_log_pb2.ProfileProto, data)

    def _advise(self, options: Mapping[str, Mapping[str, str]]) -> tuple[bytes, str]:
        profiler = self._activate()
        with _capture_fd1() as out:
            message = profiler.advise({k: dict(v) for k, v in options.items()})
        return bytes(message.SerializeToString(deterministic=True)), out()

    def advise(self, options: Mapping[str, Mapping[str, str]]) -> bytes:
        """``Profiler.advise(options)`` as a deterministic serialized AdviceProto.

        ``options`` maps checker names to (empty) option dicts, e.g.
        ``model_analyzer.ALL_ADVICE``. The printed reports are discarded.
        """
        return self._advise(options)[0]

    def advise_stdout(self, options: Mapping[str, Mapping[str, str]]) -> str:
        """Everything ``Profiler.advise(options)`` writes to fd 1.

        Checker order follows protobuf map iteration and varies per process.
        """
        return self._advise(options)[1]


class LiveTf(TfOracle):
    """TF's tfprof on a live ``tf.Graph``, fed step by step by the test.

    Unlike `TfOracle` it cannot rebuild itself (its state is the graph's history,
    not a capture), so it refuses to be used once another profiler replaced it.
    """

    def __init__(self, graph: tf.Graph) -> None:
        """``tf.compat.v1.profiler.Profiler(graph)`` made the current global profiler."""
        global _current
        close_current()
        self.capture = None  # type: ignore[assignment]
        self._profiler = _UnmanagedProfiler(graph)
        self._generation = _pywrap.generation
        _current = self

    def _activate(self) -> _UnmanagedProfiler:
        if not self.is_current or self._profiler is None:
            raise AssertionError("TF's global profiler was replaced during a live test")
        return self._profiler

    def add_step(self, step: int, run_meta: Any) -> None:
        """``Profiler.add_step`` (merges the step's shapes into the graph)."""
        self._activate().add_step(step, run_meta)


def oracle_for(capture: Capture) -> TfOracle:
    """The current oracle if it is for ``capture``, else a new (current) one."""
    if _current is not None and _current.capture is capture and _current.is_current:
        return _current
    return TfOracle(capture)


def one_shot(
    graph: tf.Graph,
    run_meta: bytes | None,
    cmd: str,
    options: Mapping[str, Any] | None = None,
) -> tuple[str, bytes]:
    """``tf.compat.v1.profiler.profile(graph, run_meta, cmd=cmd, options=...)``.

    Returns ``(text, proto)``: the report as written by ``-output
    file:outfile=<tmp>`` (``""`` if no file was written) and the returned
    proto made canonical (`canonical_proto`). ``options=None`` means TF's
    default (``trainable_variables_parameter()``). The run_meta (if any)
    becomes step 0 of a throw-away C++ TFStats; the global profiler (and so
    the current oracle) is not touched.
    """
    if cmd not in _PROTO_CLASSES:
        raise ValueError(f"unknown cmd {cmd!r}; expected one of {VIEWS}")
    if options is None:
        options = tf1.profiler.ProfileOptionBuilder.trainable_variables_parameter()
    meta = _parse_run_meta(run_meta) if run_meta is not None else None
    _pywrap.last = None
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "report.txt")
        tf1.profiler.profile(
            graph,
            run_meta=meta,
            cmd=cmd,
            options=_with_output(options, f"file:outfile={path}"),
        )
        text = _read_text(path)
    return text, canonical_proto(_PROTO_CLASSES[cmd], _take_last())
