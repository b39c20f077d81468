"""The Profiler facade: the drop-in for ``tf.compat.v1.profiler.Profiler``.

It only wires pieces together: inputs are parsed by :mod:`tfprof_lite.proto`,
stored in a :class:`~tfprof_lite.model.profile.ProfileModel`, queried through the
views and written by :mod:`tfprof_lite.outputs`. A ``tf.Graph`` is handled by
:mod:`tfprof_lite.capture` (the only part that imports TensorFlow).
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import replace
from typing import Any

from tfprof_lite.capture.flops import FlopConventions, FlopsHook, resolve_flops_mode
from tfprof_lite.capture.oplog import is_tf_graph
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.model import decode, profile_io
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.records import OpLogEntrySpec
from tfprof_lite.options.options import Options
from tfprof_lite.outputs.emit import emit, output_problem
from tfprof_lite.outputs.message import empty_message, view_message
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto.codec import parse
from tfprof_lite.views import View, ViewResult, make_view
from tfprof_lite.views.query import run_view

__all__ = ["Profiler", "emit_graph_timelines", "run_query"]

log = logging.getLogger("tfprof_lite")


def _options(options: Any) -> Options:
    if isinstance(options, Options):
        return options
    return Options.from_dict(options)


def _default_tf_graph() -> Any:
    tf = sys.modules.get("tensorflow")
    if tf is None or tf.executing_eagerly():
        return None
    return tf.compat.v1.get_default_graph()


def run_query(model: ProfileModel, view: View, opts: Options) -> ViewResult:
    """Query ``view`` for ``opts``'s output: tfprof's pre-checks, and the output's own
    refusals (e.g. pprof from a view other than code), as TensorFlow gives them."""
    return run_view(model, view, opts, output_problem(view.name, opts))


def emit_graph_timelines(model: ProfileModel, view: View, opts: Options) -> None:
    """Graph view, timeline output, negative step: as tfprof, one query and file per step."""
    for step in model.sorted_steps():
        emit(run_query(model, view, replace(opts, step=step)))


class Profiler:
    """Collects profiles of several steps and answers tfprof queries on them.

    Args:
        graph: a ``tf.Graph``, a GraphDef (ours or TensorFlow's, or its serialized
            bytes), or None for TensorFlow's default graph when TensorFlow is
            imported and not executing eagerly (otherwise the nodes come from the
            RunMetadata alone).
        op_log: an OpLogProto (message or bytes) with extra types, FLOPs, traces.
        flops: ``"tf"`` (default: TensorFlow's FLOPs), ``"corrected"`` or a
            ``FlopConventions``: FLOPs from ``tfprof_lite.capture.flops``, re-applied
            on every ``add_step`` (needs TensorFlow; see ``docs/flops.md``).
    """

    _model: ProfileModel
    _views: dict[str, View]
    _source: Any
    _coverage: float
    _user_flops: set[str]
    _flops: FlopsHook | None

    def __init__(
        self, graph: Any = None, op_log: Any = None, *, flops: str | FlopConventions = "tf"
    ) -> None:
        self._reset()
        conventions = resolve_flops_mode(flops)
        if graph is None:
            graph = _default_tf_graph()
        user_log = parse(pb.OpLogProto, op_log, "op_log") if op_log is not None else None
        if conventions is not None:  # opt-in corrected FLOPs (tfprof_lite.capture.flops)
            skip = {e.name for e in user_log.log_entries if e.float_ops} if user_log else set()
            self._flops = FlopsHook(graph, conventions, skip)
        if graph is not None and is_tf_graph(graph):
            from tfprof_lite.capture.source import GraphSource

            source = GraphSource(graph)
            self._source = source
            if user_log is not None:
                self._user_flops = {e.name for e in user_log.log_entries if e.float_ops}
            graph_def, user_log = source.initial(user_log)
        elif graph is not None:
            graph_def = parse(pb.GraphDef, graph, "graph")
        else:
            graph_def = None
        if graph_def is not None:
            self._model.add_graph(decode.graph_nodes(graph_def))
        if user_log is not None:
            self._model.add_op_log(*decode.op_log_entries(user_log))
        if self._flops is not None:
            self._flops.apply(self._model)

    def _reset(self) -> None:
        self._model = ProfileModel()
        self._views = {}
        self._source = None
        self._coverage = 0.0
        self._user_flops = set()
        self._flops = None

    @property
    def model(self) -> ProfileModel:
        """The profile store behind this profiler."""
        return self._model

    def add_step(self, step: int, run_meta: Any) -> None:
        """Add one step's RunMetadata (our message, TensorFlow's, or bytes).

        Raises:
            InvalidInputError: ``run_meta`` is empty, unparsable or not a RunMetadata.
        """
        meta = parse(pb.RunMetadata, run_meta, "run_meta")
        if meta.ByteSize() == 0:
            raise InvalidInputError(
                f"run_meta for step {step} is empty; run the step with "
                "options=RunOptions(trace_level=FULL_TRACE) and pass its run_metadata"
            )
        graph_def = op_log = None
        if self._source is not None:
            graph_def, op_log = self._source.for_step(meta)
        if graph_def is not None:
            self._model.add_graph(decode.graph_nodes(graph_def))
        if not meta.HasField("step_stats"):
            log.warning("Invalid RunMetadata for step %d", step)
        else:
            self._model.add_step(int(step), decode.step_records(meta))
        if self._user_flops:
            self._restore_default_flops(meta)
        if op_log is not None:
            self._model.add_op_log(*decode.op_log_entries(op_log))
        if self._flops is not None:
            self._flops.apply(self._model, meta)
        self._coverage = self._model.coverage()

    def _restore_default_flops(self, meta: Any) -> None:
        """TF's ``add_step`` re-sends the *default* op log, so the FLOPs a user op log set
        at construction give way to the registered (non-zero) ones from then on."""
        from tfprof_lite.capture.oplog import OpLogBuilder

        default = OpLogBuilder(self._source.graph, add_trace=False).build(run_meta=meta)
        entries, _ = decode.op_log_entries(default)
        restored = [
            OpLogEntrySpec(e.name, float_ops=e.float_ops)
            for e in entries
            if e.float_ops and e.name in self._user_flops
        ]
        self._model.add_op_log(restored, {})
        self._user_flops = set()

    def _view(self, cmd: str) -> View:
        view = self._views.get(cmd)
        if view is None:
            view = make_view(cmd, self._model)
            self._views[cmd] = view
        return view

    def _profile(self, cmd: str, options: Any) -> Any:
        opts = _options(options)
        if cmd == "graph" and opts.step < 0 and opts.output.type == "timeline":
            emit_graph_timelines(self._model, self._view(cmd), opts)
            return empty_message(cmd)
        result = run_query(self._model, self._view(cmd), opts)
        emit(result)
        return view_message(result)

    def profile_name_scope(self, options: Any) -> Any:
        """Scope view; returns a GraphNodeProto."""
        return self._profile("scope", options)

    def profile_graph(self, options: Any) -> Any:
        """Graph view; returns a GraphNodeProto."""
        return self._profile("graph", options)

    def profile_operations(self, options: Any) -> Any:
        """Op view; returns a MultiGraphNodeProto."""
        return self._profile("op", options)

    def profile_python(self, options: Any) -> Any:
        """Code view; returns a MultiGraphNodeProto."""
        return self._profile("code", options)

    def advise(self, options: Any) -> Any:
        """Run the advisor's checkers (``options``: checker name -> options dict).

        Prints each checker's reports and returns an AdviceProto.
        """
        from tfprof_lite.advisor import run_advisor
        from tfprof_lite.views import VIEWS

        for cmd in VIEWS:  # tfprof builds every view before advising
            self._model.view_extent(cmd)
        return run_advisor(self._model, options)

    def write_steps_trace(
        self, path: str | os.PathLike[str], steps: list[int] | None = None
    ) -> int:
        """Write every (or the given) step into one Chrome trace; ``.gz`` compresses.

        Returns the number of events written (see ``docs/outputs/steps_trace.md``).
        """
        from tfprof_lite.outputs.steps_trace import write_steps_trace

        return write_steps_trace(self._model, path, steps)

    def serialize_to_string(self) -> bytes:
        """The profile as ProfileProto bytes (TensorFlow's tfprof can load them)."""
        data: bytes = profile_io.encode(self._model).SerializeToString()
        return data

    def _write_profile(self, filename: str | os.PathLike[str]) -> None:
        from tfprof_lite.base.writing import write_atomic

        write_atomic(filename, self.serialize_to_string())

    @classmethod
    def load(
        cls,
        source: str | os.PathLike[str] | bytes | bytearray,
        *,
        max_input_size: int | str | None = None,
    ) -> Profiler:
        """A profiler on a saved profile: a ``profile_<step>`` file path or its bytes.

        Args:
            source: the file (a regular file, read once) or its bytes.
            max_input_size: the largest file accepted, in bytes or as ``"8GiB"``;
                default ``$TFPROF_LITE_MAX_INPUT_SIZE``, else 2 GiB.

        Raises:
            InvalidInputError: the file is missing, not a regular file, over the
                size limit, empty or not a ProfileProto.
            InvalidOptionError: ``max_input_size`` is not a size.
        """
        from tfprof_lite.base.reading import read_input

        what = "profile"
        if isinstance(source, (str, os.PathLike)):
            what = os.fspath(source)
            source = read_input(what, "a saved profile", max_input_size)
            if not source:
                raise InvalidInputError(f"{what}: the file is empty, expected a ProfileProto")
        message = parse(pb.ProfileProto, source, what)
        del source  # the parsed message replaces the bytes
        if not len(message.nodes):
            raise InvalidInputError(f"{what}: the profile has no nodes; is it a ProfileProto?")
        prof = cls.__new__(cls)
        prof._reset()
        profile_io.decode(message, prof._model)
        return prof
