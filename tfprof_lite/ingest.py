"""Profile ingestion for the facade: a graph, op logs and RunMetadata into one
:class:`~tfprof_lite.model.profile.ProfileModel`, the way tfprof takes them.

Both ways in of ``tf.compat.v1.profiler`` go through :class:`Ingest`:

* the :class:`~tfprof_lite.profiler.Profiler` (:meth:`Ingest.for_profiler`, then
  :meth:`Ingest.add_step`): at construction the graph's nodes and the default op
  log merged with the user's (a GraphDef and op log, bytes or messages, are
  checked then and added on the model's first read:
  :class:`~tfprof_lite.model.graph_inputs.PendingInputs`); on every step the
  nodes added since, the step's records and the op log refined by its
  RunMetadata. As TensorFlow re-sends the *default* op log on ``add_step``, the
  FLOPs a user op log set give way to the registered ones from the first step on;
* the one-shot ``profile``/``advise`` (:func:`one_shot_model`): one default op log,
  refined by the RunMetadata and merged with the user's; the RunMetadata (when it
  holds step stats) becomes step 0.

With ``flops="corrected"`` (or a ``FlopConventions``) the corrected FLOPs of
:mod:`tfprof_lite.capture.flops` are applied after every op log; names a user op
log gives FLOPs are never overridden. A ``tf.Graph`` is read by
:mod:`tfprof_lite.capture`; GraphDefs and messages by :mod:`tfprof_lite.model`.
This module sits between the capture layer and the facade (``profiler``, ``api``).
"""

from __future__ import annotations

import gc
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from tfprof_lite.errors import InvalidInputError
from tfprof_lite.model import graph_inputs
from tfprof_lite.model.graph_inputs import PendingInputs
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.records import OpLogEntrySpec
from tfprof_lite.proto import graphs, steps

__all__ = [
    "Ingest",
    "LiveGraphModel",
    "default_tf_graph",
    "one_shot_model",
    "parse_op_log",
    "parse_run_meta",
]

if TYPE_CHECKING:
    from tfprof_lite.capture.flops import FlopsHook
    from tfprof_lite.capture.source import GraphSource
    from tfprof_lite.model.flops import FlopConventions

# The capture layer (graphs, op logs and FLOPs of a live ``tf.Graph``) is imported
# by the methods that read one: a loaded profile (``Ingest()``) needs none of it.
# So are the protobuf messages (``pb``, ``parse``, ``decode``): a profiler made
# for an XSpace read natively (``Profiler.load``) or for a large GraphDef the
# native decoder takes imports no protobuf of ours.

log = logging.getLogger("tfprof_lite")


def default_tf_graph() -> Any:
    """TensorFlow's default graph when TensorFlow is imported and in graph mode, else None."""
    tf = sys.modules.get("tensorflow")
    if tf is None or tf.executing_eagerly():
        return None
    return tf.compat.v1.get_default_graph()


def parse_op_log(op_log: Any) -> Any | None:
    """A user OpLogProto (ours, TensorFlow's or bytes) as our message, or None."""
    from tfprof_lite.proto import messages as pb
    from tfprof_lite.proto.codec import parse

    return parse(pb.OpLogProto, op_log, "op_log") if op_log is not None else None


def parse_run_meta(run_meta: Any) -> Any | None:
    """A one-shot RunMetadata as our message; None when absent or empty."""
    from tfprof_lite.proto import messages as pb
    from tfprof_lite.proto.codec import parse

    if run_meta is None:
        return None
    meta = parse(pb.RunMetadata, run_meta, "run_meta")
    return meta if meta.ByteSize() else None


@contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: decoding a graph makes many small
    containers, none of them garbage, and each collection would walk them all."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _is_tf_graph(graph: Any) -> bool:
    """Whether ``graph`` is a ``tf.Graph`` (bytes and protobuf messages are not:
    the module that tells is not even imported for them)."""
    if graph is None or isinstance(graph, (bytes, bytearray, memoryview)):
        return False
    message = sys.modules.get("google.protobuf.message")
    if message is not None and isinstance(graph, message.Message):
        return False
    from tfprof_lite.base.foreign import is_tf_graph

    return is_tf_graph(graph)


def _flop_names(user_log: Any | None) -> set[str]:
    """Names a user op log gives FLOPs."""
    return {e.name for e in user_log.log_entries if e.float_ops} if user_log else set()


class LiveGraphModel(ProfileModel):
    """The profile of a live ``tf.Graph``: its ops' call stacks (``traces``, and
    the strings of ``id_to_string``) may be resolved on first use.

    TensorFlow resolves an op's call stack the first time it is read, which is
    most of what building a profile from a graph would cost; only the code view
    and written profiles read them, so ``Profiler(graph)`` leaves them pending
    (:meth:`defer_graph_traces`, through the model's deferred traces) and the
    first read of ``traces`` or ``id_to_string`` takes them, as the op log of
    the first step that adds ops would. Equal to resolving them at once: the stacks of
    existing ops never change and their strings keep graph order.
    ``has_trace`` is known at construction (one op's stack is resolved then),
    so reading it leaves the rest pending. A step's op log that gives no node
    a call stack and no new string (the graph got no op since: its entries are
    FLOPs refined by the step) is merged with them still pending.
    """

    def add_op_log_columns(self, cols: graphs.OpLogColumns, stacks: list[Any]) -> None:
        """As :meth:`ProfileModel.add_op_log_columns`; the pending call stacks
        stay pending when ``cols`` adds neither a call stack nor a string (then
        merging them first would change nothing the op log sets)."""
        if cols.traces or not self._knows_strings(cols.id_to_string):
            super().add_op_log_columns(cols, stacks)
            return
        with self._pending_held():
            super().add_op_log_columns(cols, stacks)

    def new_pseudo_node(self, name: str) -> int:
        """As :meth:`ProfileModel.new_pseudo_node` (a step's runtime node, which
        has no call stack), the pending call stacks left pending."""
        with self._pending_held():
            return super().new_pseudo_node(name)

    @contextmanager
    def _pending_held(self) -> Iterator[None]:
        """Inside, the pending call stacks are set aside: what runs there sees the
        traces resolved so far, and must not give a graph op a call stack."""
        pending, self._pending_traces = self._pending_traces, None
        try:
            yield
        finally:
            if pending:
                self._pending_traces = pending + (self._pending_traces or [])

    def _knows_strings(self, id_to_string: dict[int, str]) -> bool:
        """Whether every string of ``id_to_string`` is already in the table."""
        known = self._id_to_string
        return all(known.get(key) == text for key, text in id_to_string.items())

    def defer_graph_traces(self, resolve: Callable[[], graphs.OpLogColumns]) -> None:
        """Take the entries ``resolve`` gives (names, call stacks, strings) on the
        first read of ``traces`` or ``id_to_string``."""
        self.defer_traces(lambda: self._take_traces(resolve))

    @property
    def has_trace(self) -> bool:
        """Whether any node has a call stack (known without the pending stacks)."""
        return self._has_trace

    @has_trace.setter
    def has_trace(self, value: bool) -> None:
        self._has_trace = value

    @property
    def id_to_string(self) -> dict[int, str]:
        """The op logs' string table (see :class:`ProfileModel`)."""
        if self.traces_pending:
            self._settle_traces()
        return self._id_to_string

    @id_to_string.setter
    def id_to_string(self, value: dict[int, str]) -> None:
        if self.traces_pending:
            self._settle_traces()
        self._id_to_string = value

    def _take_traces(self, resolve: Callable[[], graphs.OpLogColumns]) -> None:
        """Merge the pending entries: a node's first call stack wins, as in
        :meth:`ProfileModel.add_op_log_columns`."""
        from tfprof_lite.model import decode

        cols = resolve()
        for key, text in cols.id_to_string.items():
            self._id_to_string.setdefault(key, text)
        stacks = decode.code_stacks(cols.traces)
        traces, index = self._traces, self.index
        for name, trace in zip(cols.names, cols.trace_ids):
            nid = index.get(name)
            if nid is not None and trace >= 0 and traces[nid] is None:
                traces[nid] = stacks[trace]


class Ingest:
    """One profile being fed: its model, the live graph it follows, the FLOP hook.

    ``Ingest()`` is an empty profile that follows no graph (a loaded profile);
    :meth:`for_profiler` and :func:`one_shot_model` start one from a graph.
    """

    def __init__(self) -> None:
        self._model = ProfileModel()
        #: The GraphDef and op log of a GraphDef profiler, checked at construction
        #: and added on the model's first read.
        self._pending: PendingInputs | None = None
        #: The live ``tf.Graph`` followed across steps, or None.
        self.source: GraphSource | None = None
        #: Share of the graph's nodes seen in steps (updated by :meth:`add_step`).
        self.coverage = 0.0
        self._conventions: FlopConventions | None = None
        self._hook: FlopsHook | None = None
        self._user_flops: set[str] = set()

    @property
    def model(self) -> ProfileModel:
        """The profile being fed; the inputs left pending at construction are added
        first (by whichever thread reads it first, the others waiting)."""
        pending = self._pending
        if pending is not None:
            with _gc_paused():
                pending.feed(self._model)
            self._pending = None
        return self._model

    @model.setter
    def model(self, model: ProfileModel) -> None:
        self._model = model

    @classmethod
    def _begin(cls, graph: Any, flops: str | FlopConventions) -> tuple[Ingest, Any]:
        """A new ingestion and the graph to read (TensorFlow's default one if None)."""
        conventions = None
        if flops is not None and flops != "tf":  # TF's FLOPs need none of the FLOP code
            from tfprof_lite.capture.flops import resolve_flops_mode

            conventions = resolve_flops_mode(flops)
        ingest = cls()
        ingest._conventions = conventions
        # Frozen views are tfprof's behaviour; corrected FLOPs are ours, and they
        # land on runtime nodes (loop bodies) that a frozen view would leave out.
        ingest.model.freeze_views = conventions is None
        return ingest, default_tf_graph() if graph is None else graph

    def _start_flops(self, graph: Any, user_log: Any | None) -> None:
        """The corrected-FLOPs hook (opt-in), made before the default op log so a bad
        input fails early, and applied after it."""
        if self._conventions is not None:
            from tfprof_lite.capture.flops import FlopsHook

            self._hook = FlopsHook(graph, self._conventions, _flop_names(user_log))

    @classmethod
    def for_profiler(
        cls, graph: Any, op_log: Any = None, flops: str | FlopConventions = "tf"
    ) -> Ingest:
        """``Profiler(graph, op_log)``: the graph's nodes and the merged default op log."""
        ingest, graph = cls._begin(graph, flops)
        live = _is_tf_graph(graph)
        if not live and ingest._conventions is None:
            # Bytes or messages only: checked now, the op log first as before,
            # and decoded into columns (natively when the decoder is built) on
            # the model's first read (see PendingInputs).
            with _gc_paused():
                ingest._pending = PendingInputs(graph, op_log)
            return ingest
        user_log = parse_op_log(op_log)
        ingest._start_flops(graph, user_log)
        if not live:
            ingest._feed(_graph_def(graph), user_log)
            return ingest
        from tfprof_lite.capture.source import GraphSource  # a live graph only

        source = ingest.source = GraphSource(graph)
        ingest._user_flops = _flop_names(user_log)
        model = ingest.model = LiveGraphModel()
        model.freeze_views = ingest._conventions is None
        with _gc_paused():
            # The graph and the default op log come as decoded columns (the op log
            # as a message when merged with the user's).
            graph_def, user_log, traced = source.initial(user_log)
            ingest._feed(graph_def, user_log)
        if traced:
            model.has_trace = True
            model.defer_graph_traces(source.deferred_traces)
        return ingest

    @classmethod
    def one_shot(
        cls,
        graph: Any,
        run_meta: Any,
        op_log: Any,
        add_trace: bool,
        flops: str | FlopConventions = "tf",
    ) -> Ingest:
        """The one-shot profile (see :func:`one_shot_model`)."""
        from tfprof_lite.capture.graphdef import graph_columns
        from tfprof_lite.capture.oplog import OpLogBuilder, is_tf_graph

        ingest, graph = cls._begin(graph, flops)
        meta = parse_run_meta(run_meta)
        user_log = parse_op_log(op_log)
        ingest._start_flops(graph, user_log)
        if graph is not None and is_tf_graph(graph):
            user_log = OpLogBuilder(graph, add_trace=add_trace).build_columns(meta, user_log)
            graph = graph_columns(graph)
        ingest._feed(graph, user_log, meta, step=0)  # decoded once, from bytes when it can
        return ingest

    def follow(self, graph: Any) -> None:
        """Follow ``graph`` (a ``tf.Graph``) from the next step on, if it is another one."""
        if graph is not None and (self.source is None or self.source.graph is not graph):
            from tfprof_lite.capture.source import GraphSource

            self.source = GraphSource(graph)

    def add_step(self, step: int, run_meta: Any) -> None:
        """Add one step's RunMetadata (our message, TensorFlow's, or bytes).

        The step's records are decoded straight from the wire bytes (by the
        native decoder when it is built, for every kind of profiler); the message
        itself is parsed only when something needs it (a live graph to refine,
        corrected FLOPs) or when the native decoder is not used.

        Raises:
            InvalidInputError: ``run_meta`` is empty, unparsable or not a RunMetadata.
        """
        from tfprof_lite.proto import messages as pb
        from tfprof_lite.proto.codec import parse, wire_bytes

        meta: Any = None
        cols = None
        raw = wire_bytes(pb.RunMetadata, run_meta, "run_meta")
        if raw is not None:
            cols = steps.native_columns(raw)
        if cols is None or self._needs_message():
            meta = parse(pb.RunMetadata, run_meta if raw is None else raw, "run_meta")
            empty = meta.ByteSize() == 0
        else:
            empty = not raw
        if empty:
            raise InvalidInputError(
                f"run_meta for step {step} is empty; run the step with "
                "options=RunOptions(trace_level=FULL_TRACE) and pass its run_metadata"
            )
        graph_def = op_log = None
        if self.source is not None:
            graph_def, op_log = self.source.for_step(meta)
        self._feed(graph_def, op_log, meta, int(step), warn=True, cols=cols)
        self.coverage = self.model.coverage()

    def _needs_message(self) -> bool:
        """Whether ``add_step`` needs the parsed RunMetadata beyond its step records."""
        return self.source is not None or self._hook is not None or bool(self._user_flops)

    def _feed(
        self,
        graph_def: Any | None,
        op_log: Any | None,
        meta: Any | None = None,
        step: int = 0,
        warn: bool = False,
        cols: steps.StepColumns | None = None,
    ) -> None:
        """Nodes, then the step's records, then the op log, then corrected FLOPs.

        ``graph_def`` and ``op_log`` are messages or already decoded columns.
        """
        model = self.model
        nodes = graph_def if isinstance(graph_def, graphs.GraphColumns) else None
        if nodes is None and graph_def is not None:
            nodes = graph_inputs.graph_columns(graph_def)
        if nodes is not None:
            model.add_graph_columns(nodes)
        if cols is None and meta is not None:
            cols = steps.columns_from_message(meta)
        if cols is not None:
            if cols.has_step_stats:
                model.add_step(step, cols)
            elif warn:
                log.warning("Invalid RunMetadata for step %d", step)
        if meta is not None and self._user_flops:
            self._restore_default_flops(meta)
        entries = op_log if isinstance(op_log, graphs.OpLogColumns) else None
        if entries is None and op_log is not None:
            entries = graph_inputs.op_log_columns(op_log)
        if entries is not None:
            from tfprof_lite.model import decode

            model.add_op_log_columns(entries, decode.code_stacks(entries.traces))
        if self._hook is not None:
            self._hook.apply(model, meta)

    def _restore_default_flops(self, meta: Any) -> None:
        """TF's ``add_step`` re-sends the *default* op log, so the FLOPs a user op log set
        at construction give way to the registered (non-zero) ones from then on."""
        from tfprof_lite.capture.oplog import OpLogBuilder
        from tfprof_lite.model import decode

        assert self.source is not None
        default = OpLogBuilder(self.source.graph, add_trace=False).build(run_meta=meta)
        entries, _ = decode.op_log_entries(default)
        restored = [
            OpLogEntrySpec(e.name, float_ops=e.float_ops)
            for e in entries
            if e.float_ops and e.name in self._user_flops
        ]
        self.model.add_op_log(restored, {})
        self._user_flops = set()


def _graph_def(graph: Any) -> Any | None:
    """A GraphDef given as a message (ours or TensorFlow's) or bytes, or None."""
    if graph is None:
        return None
    from tfprof_lite.proto import messages as pb
    from tfprof_lite.proto.codec import parse

    return parse(pb.GraphDef, graph, "graph")


def one_shot_model(
    graph: Any,
    run_meta: Any,
    op_log: Any,
    add_trace: bool,
    flops: str | FlopConventions = "tf",
) -> ProfileModel:
    """A one-shot profile: graph nodes, RunMetadata as step 0, default + user op log.

    Args:
        graph: ``tf.Graph``, GraphDef (message or bytes) or None (TensorFlow's
            default graph when TensorFlow is imported and in graph mode).
        run_meta: RunMetadata (message or bytes) or None.
        op_log: user OpLogProto (message or bytes) or None.
        add_trace: whether the default op log records Python call stacks.
        flops: ``"tf"`` (TensorFlow's FLOPs), ``"corrected"`` or a
            ``FlopConventions`` (see ``docs/flops.md``).
    """
    return Ingest.one_shot(graph, run_meta, op_log, add_trace, flops).model
