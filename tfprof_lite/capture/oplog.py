"""The default op log tfprof builds from a live ``tf.Graph`` (needs TensorFlow).

For every op: its registered ``flops`` statistic (``ops.get_stats_for_node_def``)
and, optionally, its Python traceback; trainable variables get the type
``_trainable_variables``. With a RunMetadata, unknown output shapes of the graph
are first refined from the recorded tensor shapes (this mutates the graph, as
TensorFlow's profiler does). TensorFlow re-derives every op's FLOPs on each
``add_step``; :class:`OpLogBuilder` gives the same entries incrementally: after
the first call it revisits only new ops and the ops whose FLOPs can still change,
those with a registered FLOP function that read a shape that was not fully known
when they were last counted (refined shapes reach them whoever refined the graph:
this builder, TensorFlow's own profiler, or the user; see
:mod:`~tfprof_lite.capture.registered_flops` for which shapes count as read).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from tfprof_lite.base.foreign import is_tf_graph
from tfprof_lite.capture.notes import note_incomplete_shapes, tf_deprecations_silenced
from tfprof_lite.capture.registered_flops import RegisteredFlops
from tfprof_lite.capture.requirement import require_tensorflow
from tfprof_lite.capture.traces import PendingTraces, TraceEncoder
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto.graphs import OpLogColumns
from tfprof_lite.proto.wire import int_field, len_field, str_field, varint

__all__ = [
    "TRAINABLE_VARIABLES",
    "OpLogBuilder",
    "fill_missing_shapes",
    "graph_def_bytes",
    "graph_def_message",
    "is_tf_graph",
    "recorded_outputs",
]

log = logging.getLogger("tfprof_lite")

TRAINABLE_VARIABLES = "_trainable_variables"


def recorded_outputs(
    graph: Any, run_meta: Any, ops: Mapping[str, Any] | None = None
) -> Iterator[tuple[str, Any, Any, list[int]]]:
    """The recorded output shapes TensorFlow's tfprof merges into a graph.

    TensorFlow's rule: for each record (in proto order) naming a graph op whose
    recorded output count equals the op's, output ``i`` is the ``i``-th recorded
    output. Yields ``(node_name, op, tensor, recorded dims)``; with ``ops``
    (name -> op), only the records of those ops.
    """
    for dev in run_meta.step_stats.dev_stats:
        for ns in dev.node_stats:
            if not ns.output:
                continue
            if ops is not None:
                op = ops.get(ns.node_name)
                if op is None:
                    continue
            else:
                try:
                    op = graph.get_operation_by_name(ns.node_name)
                except (KeyError, ValueError):
                    continue
            if len(ns.output) != len(op.outputs):
                continue
            for i, out in enumerate(ns.output):
                dims = [d.size for d in out.tensor_description.shape.dim]
                yield ns.node_name, op, op.outputs[i], dims


def fill_missing_shapes(
    graph: Any, run_meta: Any, ops: Mapping[str, Any] | None = None
) -> set[str]:
    """Merge RunMetadata output shapes into not-fully-defined graph shapes (with
    ``ops``, name -> op, into those ops' only: the others' shapes are known).

    Returns the names of the ops whose output shapes changed.
    """
    from tensorflow.python.framework import tensor_shape

    changed: set[str] = set()
    for node_name, op, tensor, dims in recorded_outputs(graph, run_meta, ops):
        if tensor.get_shape().is_fully_defined():
            continue
        try:
            merged = tensor.get_shape().merge_with(tensor_shape.TensorShape(dims))
        except ValueError as err:
            sys.stderr.write(f"Node {node_name} incompatible shapes: {err}.\n")
            continue
        tensor.set_shape(merged)
        changed.add(op.name)
    return changed


class OpLogBuilder:
    """Builds tfprof's default op log for one graph, incrementally.

    Entries are encoded straight to wire format and parsed once: building the
    message field by field costs more than the flops registry calls. Call stacks
    go through one :class:`~tfprof_lite.capture.traces.TraceEncoder`; with
    :meth:`build_deferred` they are left pending (see
    :class:`~tfprof_lite.capture.traces.PendingTraces`) and the next build, or
    :meth:`take_deferred`, resolves them.
    """

    def __init__(self, graph: Any, add_trace: bool = True) -> None:
        require_tensorflow("building an op log from a tf.Graph")
        self.graph = graph
        self.add_trace = add_trace
        self._seen_ops = 0
        self._traces = TraceEncoder()
        self._pending: PendingTraces | None = None
        self._registered = RegisteredFlops(graph)
        self._flops_types = self._registered.function
        # Ops counted while a shape they read was unknown, in graph order.
        self._unsettled: dict[str, Any] = {}
        # Ops with an output shape not fully defined (a RunMetadata may refine
        # them), among the first ``_scanned`` ops of the graph.
        self._unshaped: dict[str, Any] = {}
        self._scanned = 0

    def _flops(self, op: Any, function: Any) -> tuple[int, bool]:
        """TensorFlow's registered ``flops`` statistic of ``op`` by ``function``, as
        ``ops.get_stats_for_node_def`` gives it, and whether a shape it read was
        unknown (see :mod:`~tfprof_lite.capture.registered_flops`)."""
        flops, missing, _ = self._registered.value(op, function)
        return flops, missing

    def _entry(self, op: Any, with_trace: bool, op_type: str) -> tuple[_Entry | None, bool]:
        function = self._flops_types(op_type)
        flops, missing, settled = self._registered.value(op, function)
        if function is not None:
            if settled:
                self._unsettled.pop(op.name, None)
            else:
                self._unsettled[op.name] = op
        if not with_trace:
            return (_Entry(flops) if flops else None), missing
        return _Entry(flops, code=self._traces.code_def(op, op_type)), missing

    def build(self, run_meta: Any = None, user_op_log: Any = None) -> Any:
        """The op log for the current graph state (our OpLogProto message).

        The first call covers every op; later calls cover new ops and the ops
        whose FLOPs were counted while a shape they read was unknown (the only
        entries whose values can change; ``run_meta``, or anyone else, may have
        refined those shapes since).
        """
        built = self._merge(self._logged(run_meta), user_op_log)
        return pb.OpLogProto.FromString(built) if isinstance(built, bytes) else built

    def build_columns(self, run_meta: Any = None, user_op_log: Any = None) -> Any:
        """As :meth:`build`, but the entries as the columns the model appends
        (:class:`~tfprof_lite.proto.graphs.OpLogColumns`, equal to what the
        decoders read from the serialized op log) when no user op log is merged;
        with one, the merged message."""
        logged = self._logged(run_meta)
        if user_op_log is None or not len(user_op_log.log_entries):
            return self._columns(logged)
        return self._merge(logged, user_op_log)

    def build_deferred(self) -> tuple[OpLogColumns, bool]:
        """As :meth:`build_columns` without a RunMetadata or user op log, but the
        call stacks of the new ops left pending; and whether any of them has one
        (resolved only as far as the first that has)."""
        logged = self._logged(None, defer=True)
        # The first stack resolved before the string table is copied: a later op
        # log that adds no string then carries the same table.
        traced = self._pending is not None and self._pending.any()
        return self._columns(logged), traced

    def take_deferred(self) -> OpLogColumns:
        """The entries (call stacks only) of the ops left pending by
        :meth:`build_deferred`, now resolved; none when a build since took them."""
        codes = self._pending.take() if self._pending is not None else {}
        self._pending = None
        return self._columns({name: _Entry(0, code=code) for name, code in codes.items()})

    def _columns(self, logged: dict[str, _Entry]) -> OpLogColumns:
        """The entries in order; equal call stacks share one trace, in order of
        first use (the decoders key them by their CodeDef bytes)."""
        strings = self._traces.strings
        cols = OpLogColumns(id_to_string={sid: text for text, sid in strings.items()})
        packed = self._traces.packed
        trace_ids: dict[bytes, int] = {}
        for name, entry in logged.items():
            trace = -1
            if entry.code:
                trace = trace_ids.setdefault(entry.code, len(trace_ids))
                if trace == len(cols.traces):
                    cols.traces.append(packed[entry.code])
            cols.names.append(name)
            cols.float_ops.append(entry.float_ops)
            cols.types.append(tuple(entry.types))
            cols.trace_ids.append(trace)
        return cols

    def _logged(self, run_meta: Any, defer: bool = False) -> dict[str, _Entry]:
        """The entries of the ops new since the last call and of those to revisit,
        with the call stacks left pending by the previous call when there are new
        ops (their strings get ids after the pending ones'); without new ops the
        entries carry no call stack and no new string, and pending ones stay so."""
        all_ops = self.graph.get_operations()
        if run_meta is not None:
            self._refine_shapes(all_ops, run_meta)
        fresh = all_ops[self._seen_ops :]
        pending: dict[str, bytes] = {}
        if fresh and self._pending is not None:
            pending = self._pending.take()
            self._pending = None
        revisit = list(self._unsettled.values())
        first = self._seen_ops == 0
        self._seen_ops = len(all_ops)
        trace = self.add_trace and not defer
        logged: dict[str, _Entry] = {}
        missing = 0
        with tf_deprecations_silenced():
            for op, is_new in [(op, False) for op in revisit] + [(op, True) for op in fresh]:
                entry, miss = self._entry(op, trace and is_new, op.type)
                missing += miss
                if entry is not None:
                    logged[op.name] = entry
        for name, code in pending.items():
            logged.setdefault(name, _Entry(0)).code = code
        if defer and self.add_trace and fresh:
            self._pending = PendingTraces(self._traces, fresh)
        self._add_trainable(logged, every=first)
        if run_meta is None:
            note_incomplete_shapes(missing)
        return logged

    def _refine_shapes(self, all_ops: list[Any], run_meta: Any) -> None:
        """:func:`fill_missing_shapes`, looking only at the records of ops with an
        output shape not fully defined (shapes only ever get more defined, so
        an op once fully known stays so)."""
        unshaped = self._unshaped
        for op in all_ops[self._scanned :]:
            if not _shaped(op):
                unshaped[op.name] = op
        self._scanned = len(all_ops)
        if unshaped:
            fill_missing_shapes(self.graph, run_meta, unshaped)
            self._unshaped = {name: op for name, op in unshaped.items() if not _shaped(op)}

    def _add_trainable(self, logged: dict[str, _Entry], every: bool) -> None:
        from tensorflow.python.framework import ops

        for var in self.graph.get_collection(ops.GraphKeys.TRAINABLE_VARIABLES):
            name = var.op.name
            if name not in logged:
                if not every:
                    continue
                logged[name] = _Entry(0)
            logged[name].types.append(TRAINABLE_VARIABLES)

    def _merge(self, logged: dict[str, _Entry], user_op_log: Any) -> Any:
        """The entries and strings as OpLogProto bytes, or merged with a user op
        log as our message."""
        entries = b"".join([entry.encode(name) for name, entry in logged.items()])
        strings = b"".join(
            [
                len_field(2, int_field(1, sid) + str_field(2, text))
                for text, sid in self._traces.strings.items()
            ]
        )
        if user_op_log is None or not len(user_op_log.log_entries):
            return entries + strings
        out = pb.OpLogProto.FromString(strings)
        merged = {entry.name: entry for entry in user_op_log.log_entries}
        for entry in pb.OpLogProto.FromString(entries).log_entries:
            mine = merged.get(entry.name)
            if mine is None:
                merged[entry.name] = entry
                continue
            mine.types.extend(entry.types)
            if entry.float_ops > 0 and mine.float_ops == 0:
                mine.float_ops = entry.float_ops
            if entry.code_def.traces and not mine.code_def.traces:
                mine.code_def.MergeFrom(entry.code_def)
        out.log_entries.extend(merged.values())
        return out


def _shaped(op: Any) -> bool:
    """Whether every output shape of ``op`` is fully defined."""
    return all(tensor.shape.is_fully_defined() for tensor in op.outputs)


@dataclass
class _Entry:
    """An op log entry before encoding (the name is its key in the builder)."""

    float_ops: int
    types: list[str] = field(default_factory=list)
    code: bytes = b""  # the framed code_def field, if any

    def encode(self, name: str) -> bytes:
        """The framed ``OpLogProto.log_entries`` element."""
        body = str_field(1, name)
        if self.float_ops:
            body += b"\x10" + varint(self.float_ops)
        for text in self.types:
            body += str_field(3, text)
        body += self.code  # already framed (field 4)
        return b"\x0a" + varint(len(body)) + body


def graph_def_bytes(graph: Any) -> bytes:
    """``graph.as_graph_def(add_shapes=True)``, serialized."""
    data: bytes = graph.as_graph_def(add_shapes=True).SerializeToString()
    return data


def graph_def_message(graph: Any) -> Any:
    """``graph.as_graph_def(add_shapes=True)`` as our GraphDef message."""
    return pb.GraphDef.FromString(graph_def_bytes(graph))
