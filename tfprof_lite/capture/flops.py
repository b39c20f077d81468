"""Corrected FLOP counts for TensorFlow graphs: opt-in, beyond TensorFlow's registry.

TensorFlow's tfprof counts FLOPs with the formulas registered for
``ops.get_stats_for_node_def(graph, node_def, "flops")`` (see
``docs/flops.md``); :mod:`tfprof_lite.capture.oplog` reproduces that exactly and
stays the default. This module computes a *corrected* table next to it.

Contract
--------
* :func:`corrected_flops` ``(graph, run_meta=None, conventions=None)`` returns a
  :class:`FlopTable`: one :class:`FlopRow` per op of the graph **and** per op of
  every function body reached through control flow v2 (``While``/``If``/``Case``,
  stateless or not) and function calls (``PartitionedCall``,
  ``StatefulPartitionedCall``), recursively. Each row carries our per-execution
  FLOPs, TensorFlow's registered value on the graph's current static shapes, how
  many executions the totals multiply by, a status and, when a value is
  missing, a reason (``REASON_*``).
* Shapes: static shapes; with a RunMetadata, the recorded output shapes of every
  executed node (per output slot, also when TensorFlow's rule -- recorded output
  count == op output count -- rejects the record) and of the feeds recorded as
  ``_arg_<name>_<slot>_<n>`` are declared on a *copy* of the graph whose shape
  inference TensorFlow then re-runs, so refined dims reach every consumer (also
  ops grappler fused away at run time); a few local rules (identity-like,
  elementwise, MatMul, same-shape consumers) fill what is still unknown. The
  caller's graph is never mutated.
* Function bodies: executions are counted from the RunMetadata records of the
  lowered body (``<caller>/body/_<k>/<node>``, ``<caller>/then/_<k>/<node>``,
  ``<caller>/branch<i>/_<k>/<node>``, inlined ``<caller>/<node>``). Without a
  RunMetadata a loop's trip count and a conditional's branch are unknown (count
  ``None``, excluded from totals); a function call runs once per call.
* Conventions (:class:`FlopConventions`): a multiply-accumulate (MAC) is 2 FLOPs
  by default (``flops_per_mac=1`` counts MACs); ``exact_dot_products=True`` counts
  a length-k dot product as 2k-1 (``mn(2k-1)`` for MatMul) instead of 2k;
  elementwise ops cost :data:`ELEMENT_COSTS` FLOPs per element (overridable).
* ``tf_flops`` is TensorFlow's registered value as ``tfprof_logger`` would log it
  for this graph and RunMetadata (its shape fill emulated on a read-only view).
* Default numbers never change: :class:`FlopsHook` only runs when a caller opts
  in (``flops="corrected"`` or a FlopConventions on ``profile``/``Profiler``).

TensorFlow is imported lazily; the formulas themselves (:func:`op_flops`) are
pure Python.
"""

from __future__ import annotations

import bisect
import logging
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from tfprof_lite.capture.oplog import is_tf_graph, recorded_outputs
from tfprof_lite.errors import InvalidOptionError, MissingDependencyError
from tfprof_lite.model.devices import DEVICE_CANONICAL, classify_device
from tfprof_lite.model.flops import (
    ELEMENT_COSTS,
    FLOPS_MODES,
    REASON_DATA_FORMAT,
    REASON_ERROR,
    REASON_FUNCTION_BODY,
    REASON_INCOMPLETE_SHAPE,
    REASON_NO_FORMULA,
    REASON_UNKNOWN_COUNT,
    STATUS_ADDED,
    STATUS_CORRECTED,
    STATUS_FALLBACK,
    STATUS_MISSING,
    STATUS_TF,
    STATUS_ZERO,
    ZERO_COST_OPS,
    Dim,
    FlopConventions,
    FlopError,
    FlopRow,
    FlopTable,
    OpInfo,
    Shape,
    has_formula,
    op_flops,
    words,
)
from tfprof_lite.model.records import OpLogEntrySpec

__all__ = [
    "ELEMENT_COSTS",
    "FLOPS_MODES",
    "REASON_DATA_FORMAT",
    "REASON_ERROR",
    "REASON_FUNCTION_BODY",
    "REASON_INCOMPLETE_SHAPE",
    "REASON_NO_FORMULA",
    "REASON_UNKNOWN_COUNT",
    "ZERO_COST_OPS",
    "FlopConventions",
    "FlopCounter",
    "FlopError",
    "FlopRow",
    "FlopTable",
    "OpInfo",
    "FlopsHook",
    "corrected_flops",
    "has_formula",
    "missing_flops_report",
    "op_flops",
    "profile_entries",
    "resolve_flops_mode",
    "tf_registered_flops",
]

log = logging.getLogger("tfprof_lite")

# --------------------------------------------------------------------- RunMetadata
_ARG_RE = re.compile(r"^_arg_(.+)_(\d+)_(\d+)$")


@dataclass
class _Runtime:
    """What one RunMetadata says about one node name."""

    runs: int = 0
    device: str = ""
    outputs: dict[int, Shape] = field(default_factory=dict)


def _merge_runtime(old: Shape, new: Shape) -> Shape:
    """Shapes recorded for the same output in several executions; differing dims -> ?."""
    if old is None or new is None or len(old) != len(new):
        return None
    return tuple(a if a == b else None for a, b in zip(old, new))


class _RuntimeIndex:
    """RunMetadata records by node name: tfprof's run counts and output shapes."""

    def __init__(self, run_meta: Any) -> None:
        self.meta = run_meta
        self.by_name: dict[str, _Runtime] = {}
        for dev in run_meta.step_stats.dev_stats:
            device = dev.device.lower()
            canonical = classify_device(device) == DEVICE_CANONICAL
            for ns in dev.node_stats:
                self._add(ns, device, canonical)
        self.names = sorted(self.by_name)
        self.feeds: dict[str, dict[int, Shape]] = {}
        for name, stats in self.by_name.items():
            match = _ARG_RE.match(name)
            if match and 0 in stats.outputs:
                self.feeds.setdefault(match.group(1), {})[int(match.group(2))] = stats.outputs[0]

    def _add(self, ns: Any, device: str, canonical: bool) -> None:
        name = ns.node_name.split(":", 1)[0]
        stats = self.by_name.setdefault(name, _Runtime())
        if canonical:
            if not stats.device:
                stats.device = device
            if device == stats.device and ns.all_start_micros > 0:
                stats.runs += 1
        for out in ns.output:
            dims = out.tensor_description.shape
            shape: Shape = None
            if not dims.unknown_rank:
                shape = tuple(d.size if d.size >= 0 else None for d in dims.dim)
            slot = int(out.slot)
            stats.outputs[slot] = (
                _merge_runtime(stats.outputs[slot], shape) if slot in stats.outputs else shape
            )

    def get(self, name: str) -> _Runtime | None:
        return self.by_name.get(name)

    def instance_prefixes(self, base: str, kind: str) -> list[str]:
        """``<base>/<kind>/_<k>`` prefixes present among the record names."""
        start = f"{base}/{kind}/_"
        found: set[str] = set()
        pos = bisect.bisect_left(self.names, start)
        while pos < len(self.names) and self.names[pos].startswith(start):
            digits = self.names[pos][len(start) :].split("/", 1)[0]
            if digits.isdigit():
                found.add(start + digits)
            pos += 1
        return sorted(found)


# --------------------------------------------------------------------- shapes
def _dims(tensor_shape: Any) -> Shape:
    """A ``tf.TensorShape`` (or TensorShapeProto via tf.TensorShape) as a Shape."""
    if tensor_shape.rank is None:
        return None
    return tuple(tensor_shape.as_list())


def _merge(static: Shape, runtime: Shape | None) -> Shape:
    """Static dims completed by a runtime shape (static wins on conflicts)."""
    if runtime is None:
        return static
    if static is None:
        return runtime
    if len(static) != len(runtime):
        return static
    return tuple(s if s is not None else r for s, r in zip(static, runtime))


def _known(shape: Shape) -> bool:
    return shape is not None and all(d is not None for d in shape)


def _compatible(a: Shape, b: Shape) -> bool:
    if a is None or b is None:
        return True
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def _attr_getter(op: Any) -> Callable[[str], Any]:
    def attr(name: str) -> Any:
        try:
            value = op.get_attr(name)
        except (ValueError, TypeError):
            return None
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        if isinstance(value, list) and value and isinstance(value[0], bytes):
            return [v.decode("utf-8", "replace") for v in value]
        return value

    return attr


_SAME_SHAPE_OPS = frozenset(
    words(
        "Identity Snapshot StopGradient PreventGradient CheckNumerics CheckNumericsV2 BiasAdd "
        "BiasAddV1 Cast ZerosLike OnesLike Softmax LogSoftmax"
    )
)


def _broadcast(a: Shape, b: Shape) -> Shape:
    """Numpy broadcasting of two shapes (unknown dims stay unknown unless the other is > 1)."""
    if a is None or b is None:
        return None
    rank = max(len(a), len(b))
    a2 = (1,) * (rank - len(a)) + tuple(a)
    b2 = (1,) * (rank - len(b)) + tuple(b)
    out: list[Dim] = []
    for x, y in zip(a2, b2):
        if x == 1 or (x is None and y is not None and y > 1):
            out.append(y)
        elif y == 1 or (y is None and x is not None and x > 1) or x == y:
            out.append(x)
        else:
            out.append(None)
    return tuple(out)


def _infer_output(op: Any, slot: int, inputs: list[Shape]) -> Shape:
    """A few shape rules for outputs TensorFlow left unknown after re-inference."""
    kind = op.type
    if kind == "IdentityN":
        return inputs[slot] if slot < len(inputs) else None
    if slot != 0 or not inputs:
        return None
    if kind in _SAME_SHAPE_OPS or (kind in ELEMENT_COSTS and len(inputs) == 1):
        return inputs[0]
    if kind in ELEMENT_COSTS and len(inputs) == 2:
        return _broadcast(inputs[0], inputs[1])
    if kind == "MatMul" and len(inputs) == 2 and inputs[0] is not None and inputs[1] is not None:
        attr = _attr_getter(op)
        if len(inputs[0]) == 2 and len(inputs[1]) == 2:
            rows = inputs[0][1 if attr("transpose_a") else 0]
            return (rows, inputs[1][0 if attr("transpose_b") else 1])
    return None


class _ShapedTensor:
    """A stand-in tensor: all TensorFlow's flops formulas read is ``get_shape()``."""

    def __init__(self, shape: Any) -> None:
        self._shape = shape

    def get_shape(self) -> Any:
        return self._shape

    @property
    def shape(self) -> Any:
        return self._shape


class _TfFilledGraph:
    """A ``tf.Graph`` as TensorFlow's flops formulas see it after ``tfprof_logger``'s
    ``_fill_missing_graph_shape(graph, run_meta)``, without mutating the graph.

    Every not fully defined output shape is merged with the recorded one, by
    TensorFlow's rule (:func:`~tfprof_lite.capture.oplog.recorded_outputs`).
    """

    def __init__(self, graph: Any, run_meta: Any) -> None:
        from tensorflow.python.framework import tensor_shape

        self._graph = graph
        self._shapes: dict[str, Any] = {}
        for _, _, tensor, dims in recorded_outputs(graph, run_meta):
            current = self._shapes.get(tensor.name, tensor.get_shape())
            if current.is_fully_defined():
                continue
            try:
                self._shapes[tensor.name] = current.merge_with(tensor_shape.TensorShape(dims))
            except ValueError:
                continue

    def get_tensor_by_name(self, name: str) -> Any:
        tensor = self._graph.get_tensor_by_name(name)
        shape = self._shapes.get(tensor.name)
        return tensor if shape is None else _ShapedTensor(shape)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._graph, name)


def _tf_registered(op_type: str) -> bool:
    from tensorflow.python.framework import ops

    registry = getattr(ops, "_stats_registry", None)
    if registry is None:  # unknown TensorFlow internals: ask every time
        return True
    try:
        registry.lookup(f"{op_type},flops")
    except LookupError:
        return False
    return True


def tf_registered_flops(graph: Any, op: Any) -> tuple[int | None, str | None, str]:
    """TensorFlow's own value for ``op``, as ``tfprof_logger`` computes it.

    Returns ``(value, reason, detail)``: the registered statistic (0 when it is 0),
    or None with ``REASON_NO_FORMULA`` (nothing registered),
    ``REASON_DATA_FORMAT`` (the formula only supports NHWC),
    ``REASON_INCOMPLETE_SHAPE`` (any other ValueError, as tfprof counts it) or
    ``REASON_ERROR`` (another exception; TensorFlow itself would crash).
    """
    from tensorflow.python.framework import ops

    if not _tf_registered(op.type):
        return None, REASON_NO_FORMULA, f"TensorFlow registers no flops statistics for {op.type}"
    try:
        stats = ops.get_stats_for_node_def(graph, op.node_def, "flops")
    except ValueError as err:
        text = " ".join(str(err).split())
        return None, (REASON_DATA_FORMAT if "NHWC" in text else REASON_INCOMPLETE_SHAPE), text
    except Exception as err:  # noqa: BLE001 - reported, never raised
        return None, REASON_ERROR, f"{type(err).__name__}: {err}"
    return (int(stats.value) if stats.value else 0), None, ""


# --------------------------------------------------------------------- graph walk
_WHILE_KINDS = (("body", "body"), ("cond", "cond"))
_IF_KINDS = (("then_branch", "then"), ("else_branch", "else"))
#: Op type -> (function attribute, runtime kind token; None = inlined call).
_CALLERS: dict[str, tuple[tuple[str, Optional[str]], ...]] = {
    "While": _WHILE_KINDS,
    "StatelessWhile": _WHILE_KINDS,
    "If": _IF_KINDS,
    "StatelessIf": _IF_KINDS,
    "PartitionedCall": (("f", None),),
    "StatefulPartitionedCall": (("f", None),),
}
_CASES = ("Case", "StatelessCase")
_BRANCHING = ("If", "StatelessIf", *_CASES)
_MAX_DEPTH = 32


def _function_specs(op: Any) -> list[tuple[str, Optional[str]]]:
    """(function name, runtime kind token) for each body an op calls."""
    if op.type in _CASES:
        try:
            branches = op.get_attr("branches")
        except ValueError:
            return []
        return [(b.name, f"branch{i}") for i, b in enumerate(branches)]
    specs = []
    for attr, kind in _CALLERS.get(op.type, ()):
        try:
            specs.append((op.get_attr(attr).name, kind))
        except (ValueError, AttributeError):
            continue
    return specs


@dataclass
class _Scope:
    """The graph or one function-body instance being walked."""

    graph: Any
    path: str
    function: Optional[str]
    prefixes: tuple[str, ...]
    caller: Optional[str]
    count: Optional[int] = None
    depth: int = 0
    shapes: dict[str, Shape] = field(default_factory=dict)
    runtime: dict[str, tuple[Optional[_Runtime], tuple[str, ...]]] = field(default_factory=dict)


def _as_tf_graph(graph: Any) -> Any:
    """``graph`` itself if it is a ``tf.Graph``, else a GraphDef imported into a new one."""
    if is_tf_graph(graph):
        return graph
    try:
        import tensorflow as tf
    except ImportError as err:
        raise MissingDependencyError("corrected FLOPs need TensorFlow installed") from err
    from tfprof_lite.proto import messages as pb
    from tfprof_lite.proto.codec import parse

    graph_def = tf.compat.v1.GraphDef.FromString(
        parse(pb.GraphDef, graph, "graph").SerializeToString()
    )
    return _import(graph_def)


def _runtime_index(run_meta: Any) -> _RuntimeIndex | None:
    if run_meta is None:
        return None
    from tfprof_lite.proto import messages as pb
    from tfprof_lite.proto.codec import parse

    meta = parse(pb.RunMetadata, run_meta, "run_meta")
    return _RuntimeIndex(meta) if meta.HasField("step_stats") else None


class FlopCounter:
    """Corrected FLOP tables for one graph; keeps loaded function bodies between calls.

    Args:
        graph: a ``tf.Graph``, or a GraphDef (ours or TensorFlow's, or its bytes),
            which is imported into a new ``tf.Graph``.
        conventions: counting conventions (default :class:`FlopConventions`).

    Raises:
        MissingDependencyError: TensorFlow is not installed.
        InvalidInputError: ``graph`` is None or not a graph.
    """

    def __init__(self, graph: Any, conventions: FlopConventions | None = None) -> None:
        if graph is None:
            from tfprof_lite.errors import InvalidInputError

            raise InvalidInputError("corrected FLOPs need a graph (tf.Graph or GraphDef)")
        self.graph = _as_tf_graph(graph)
        self.conventions = conventions or FlopConventions()
        self._library: dict[str, Any] | None = None
        self._bodies: dict[tuple[str, tuple[Shape, ...]], Any] = {}

    def table(self, run_meta: Any = None, compare_tf: bool = True) -> FlopTable:
        """The FLOP table, refined by ``run_meta`` (a RunMetadata, ours, TF's or bytes).

        ``compare_tf=False`` skips TensorFlow's registered values (``tf_flops`` and
        ``tf_reason`` stay None for graph nodes): faster, used by the profile hook.
        """
        return _Walk(self, _runtime_index(run_meta), compare_tf).run()

    def function_def(self, name: str) -> Any | None:
        """The FunctionDef called ``name`` from the graph's library, or None."""
        if self._library is None:
            library = self.graph.as_graph_def().library
            self._library = {f.signature.name: f for f in library.function}
        return self._library.get(name)

    def body_graph(self, name: str, arg_shapes: Sequence[Shape]) -> Any:
        """Function ``name`` as a FuncGraph with TensorFlow's shape inference from its args.

        Raises:
            KeyError: no such function; other TensorFlow errors when it cannot load.
        """
        key = (name, tuple(arg_shapes))
        body = self._bodies.get(key)
        if body is None:
            from tensorflow.python.framework import function_def_to_graph

            fdef = self.function_def(name)
            if fdef is None:
                raise KeyError(f"function {name} is not in the graph's library")
            shapes = (
                _arg_protos(fdef, arg_shapes)
                if len(arg_shapes) == len(fdef.signature.input_arg)
                else None
            )
            if shapes is not None:  # arg_attr shapes would override ours: merged in
                fdef = _without_arg_shapes(fdef)
            body = function_def_to_graph.function_def_to_graph(fdef, input_shapes=shapes)
            self._bodies[key] = body
        return body


def _arg_protos(fdef: Any, arg_shapes: Sequence[Shape]) -> list[Any]:
    """TensorShapes for a function's args: ours merged with its recorded arg shapes.

    Resource handles get None (TensorFlow's own rule: their shapes confuse inference).
    """
    from tensorflow.python.framework import tensor_shape

    shapes: list[Any] = []
    for i, (arg, shape) in enumerate(zip(fdef.signature.input_arg, arg_shapes)):
        recorded: Shape = None
        attrs = fdef.arg_attr[i].attr if i in fdef.arg_attr else {}
        value = attrs.get("_output_shapes") if "_output_shapes" in attrs else None
        if value is not None and value.WhichOneof("value") == "list" and value.list.shape:
            recorded = _dims(tensor_shape.TensorShape(value.list.shape[0]))
        elif value is not None and value.WhichOneof("value") == "shape":
            recorded = _dims(tensor_shape.TensorShape(value.shape))
        merged = _merge(shape, recorded)
        is_resource = arg.type == 20  # DT_RESOURCE
        shapes.append(None if is_resource else tensor_shape.TensorShape(_as_list(merged)))
    return shapes


def _as_list(shape: Shape) -> list[Dim] | None:
    return None if shape is None else list(shape)


def _without_arg_shapes(fdef: Any) -> Any:
    """A copy of ``fdef`` without ``_output_shapes`` arg attributes."""
    copy = type(fdef)()
    copy.CopyFrom(fdef)
    for attrs in copy.arg_attr.values():
        if "_output_shapes" in attrs.attr:
            del attrs.attr["_output_shapes"]
    return copy


class _Walk:
    """One table computation: the (refined) graph, then every function body."""

    def __init__(self, counter: FlopCounter, runtime: _RuntimeIndex | None, compare: bool) -> None:
        self.counter = counter
        self.runtime = runtime
        self.compare_tf = compare
        self.conv = counter.conventions
        self.notes: list[str] = []
        self.rows: list[FlopRow] = []
        self._tf_view: Any = None
        self.graph = self._refined_graph()

    def run(self) -> FlopTable:
        self._scope_rows(_Scope(self.graph, "", None, ("",), None))
        return FlopTable(tuple(self.rows), self.conv, self.runtime is not None, tuple(self.notes))

    # ------------------------------------------------------------ refinement
    def _refined_graph(self) -> Any:
        """With a RunMetadata: a copy of the graph whose recorded output shapes are
        declared (``_output_shapes``) and re-inferred by TensorFlow's importer, so
        they reach every consumer; the caller's graph itself is never touched."""
        graph = self.counter.graph
        if self.runtime is None or all(
            t.shape.is_fully_defined() for op in graph.get_operations() for t in op.outputs
        ):
            return graph
        graph_def = graph.as_graph_def(add_shapes=True)
        # Re-imported even when no declaration changed: shapes set on the graph after
        # its consumers were built (TensorFlow's own fill) only propagate this way.
        refined = [node.name for node in graph_def.node if self._declare_recorded(node)]
        try:
            copy = _import(graph_def)
        except Exception as err:  # noqa: BLE001 - fall back to per-node recorded shapes
            self.notes.append(f"shape re-inference failed ({type(err).__name__}: {err})")
            return graph
        shown = ", ".join(refined[:5]) + (", ..." if len(refined) > 5 else "")
        self.notes.append(
            "TensorFlow's shape inference re-run on a copy of the graph; "
            f"{len(refined)} node(s) declared with recorded output shapes"
            + (f" ({shown})" if refined else "")
        )
        return copy

    def _declare_recorded(self, node: Any) -> bool:
        """Merge a node's recorded output shapes into its ``_output_shapes``; True if changed."""
        from tensorflow.python.framework import tensor_shape

        assert self.runtime is not None
        rt = self.runtime.get(node.name)
        recorded = {**(rt.outputs if rt else {}), **self.runtime.feeds.get(node.name, {})}
        if not recorded or "_output_shapes" not in node.attr:
            return False
        protos = node.attr["_output_shapes"].list.shape
        changed = False
        for slot, proto in enumerate(protos):
            static = _dims(tensor_shape.TensorShape(proto))
            new = _merge(static, recorded.get(slot))
            if new != static and _compatible(static, new):
                proto.CopyFrom(tensor_shape.TensorShape(_as_list(new)).as_proto())
                changed = True
        return changed

    # ------------------------------------------------------------ runtime and shapes
    def _runtime(self, scope: _Scope, name: str) -> tuple[_Runtime | None, tuple[str, ...]]:
        cached = scope.runtime.get(name)
        if cached is not None:
            return cached
        found: list[tuple[str, _Runtime]] = []
        if self.runtime is not None:
            for prefix in scope.prefixes:
                full = f"{prefix}/{name}" if prefix else name
                rt = self.runtime.get(full)
                if rt is not None:
                    found.append((full, rt))
        merged: _Runtime | None = None
        if found:
            merged = _Runtime(runs=sum(rt.runs for _, rt in found))
            for _, rt in found:
                for slot, shape in rt.outputs.items():
                    old = merged.outputs.get(slot, shape)
                    merged.outputs[slot] = _merge_runtime(old, shape)
        result = (merged, tuple(full for full, _ in found))
        scope.runtime[name] = result
        return result

    def _shape(self, scope: _Scope, tensor: Any, propagate: bool = True) -> Shape:
        """Static shape, completed by the records and, failing those, by light
        propagation from the producer's inputs (identity-like, elementwise, MatMul)."""
        cached = scope.shapes.get(tensor.name, ())
        if cached != ():
            return cached
        shape = _dims(tensor.shape)
        if not _known(shape):
            rt, _ = self._runtime(scope, tensor.op.name)
            recorded = rt.outputs.get(tensor.value_index) if rt is not None else None
            if recorded is None and scope.function is None and self.runtime is not None:
                recorded = self.runtime.feeds.get(tensor.op.name, {}).get(tensor.value_index)
            shape = _merge(shape, recorded)
        if not _known(shape) and propagate:
            inputs = [self._shape(scope, t, propagate=False) for t in tensor.op.inputs]
            shape = _merge(shape, _infer_output(tensor.op, tensor.value_index, inputs))
        if not _known(shape) and propagate:
            shape = _merge(shape, self._from_consumers(scope, tensor))
        if propagate or _known(shape):
            scope.shapes[tensor.name] = shape
        return shape

    def _from_consumers(self, scope: _Scope, tensor: Any) -> Shape:
        """The shape of a same-shape consumer's known output (e.g. a fused-away MatMul
        read back from the BiasAdd whose record carries the fused kernel)."""
        for consumer in tensor.consumers():
            if not consumer.outputs or not consumer.inputs or consumer.inputs[0] is not tensor:
                continue
            if consumer.type in _SAME_SHAPE_OPS or (
                consumer.type in ELEMENT_COSTS and len(consumer.inputs) == 1
            ):
                out = self._shape(scope, consumer.outputs[0], propagate=False)
                if _known(out):
                    return out
        return None

    # ------------------------------------------------------------ rows
    def _scope_rows(self, scope: _Scope) -> None:
        for op in scope.graph.get_operations():
            if scope.function is not None and op.type == "Placeholder":
                continue  # a function argument, not an op
            row = self._row(scope, op)
            self.rows.append(row)
            if op.type in _CALLERS or op.type in _CASES:
                self._descend(scope, op, row)

    def _row(self, scope: _Scope, op: Any) -> FlopRow:
        runtime, names = self._runtime(scope, op.name)
        info = OpInfo(
            op.name,
            op.type,
            tuple(self._shape(scope, t) for t in op.inputs),
            tuple(self._shape(scope, t) for t in op.outputs),
            _attr_getter(op),
        )
        try:
            ours: tuple[int | None, str | None, str] = (op_flops(info, self.conv), None, "")
        except FlopError as err:
            ours = (None, err.reason, err.detail)
        theirs = self._tf_value(scope, op)
        count: int | None = runtime.runs if runtime is not None else None
        if count is None:
            count = 1 if scope.function is None else scope.count
        return _make_row(
            scope, op, ours, theirs, count, runtime.runs if runtime is not None else None, names
        )

    def _tf_value(self, scope: _Scope, op: Any) -> tuple[int | None, str | None, str]:
        if scope.function is not None:
            return None, REASON_FUNCTION_BODY, f"inside function {scope.function}"
        if not self.compare_tf:
            return None, None, ""
        graph = self._tf_graph()
        try:
            original = graph.get_operation_by_name(op.name)
        except (KeyError, ValueError):
            return None, REASON_ERROR, "not in the original graph"
        return tf_registered_flops(graph, original)

    def _tf_graph(self) -> Any:
        """The graph TensorFlow's values are computed on: the caller's, or with a
        RunMetadata a read-only view refined by TensorFlow's own rule, so
        ``tf_flops`` is what ``tf.compat.v1.profiler.profile(graph, run_meta)`` logs."""
        if self._tf_view is None:
            graph = self.counter.graph
            self._tf_view = (
                graph if self.runtime is None else _TfFilledGraph(graph, self.runtime.meta)
            )
        return self._tf_view

    # ------------------------------------------------------------ function bodies
    def _descend(self, scope: _Scope, op: Any, row: FlopRow) -> None:
        if scope.depth >= _MAX_DEPTH:
            self.notes.append(f"{scope.path}{op.name}: functions nested too deeply, not walked")
            return
        args = self._arg_shapes(scope, op)
        children: list[_Scope] = []
        for fname, kind in _function_specs(op):
            try:
                body = self.counter.body_graph(fname, args)
            except Exception as err:  # noqa: BLE001 - noted, the rest of the table stands
                self.notes.append(f"{scope.path}{op.name}: cannot load function {fname} ({err})")
                continue
            child = self._child(scope, op, body, fname, kind)
            child.count = self._body_count(child, row, kind)
            self._scope_rows(child)
            if kind != "cond":
                children.append(child)
        self._refine_outputs(scope, op, children, args)

    def _child(self, scope: _Scope, op: Any, body: Any, fname: str, kind: str | None) -> _Scope:
        """The scope of one function body called by ``op``, with its runtime prefixes."""
        bases = [f"{p}/{op.name}" if p else op.name for p in scope.prefixes]
        prefixes = bases
        if kind is not None:
            runtime = self.runtime
            prefixes = (
                [p for b in bases for p in runtime.instance_prefixes(b, kind)] if runtime else []
            )
        return _Scope(
            body,
            f"{scope.path}{op.name}/" + (f"{kind}/" if kind else ""),
            fname,
            tuple(prefixes),
            scope.caller or op.name,
            depth=scope.depth + 1,
        )

    def _refine_outputs(
        self, scope: _Scope, op: Any, children: list[_Scope], args: list[Shape]
    ) -> None:
        """Complete the caller's output shapes from its bodies (for its consumers).

        A loop's outputs are its loop variables (the shapes given to the body); a
        call's or a branch's are the body's outputs (of the executed branches when a
        RunMetadata tells which ran; dims the branches disagree on stay unknown).
        """
        if op.type in ("While", "StatelessWhile"):
            found: list[Shape] | None = args if len(args) == len(op.outputs) else None
        else:
            ran = [c for c in children if c.count] or children
            found = None
            for child in ran:
                outs = [self._shape(child, t) for t in child.graph.outputs]
                if len(outs) != len(op.outputs):
                    return
                found = (
                    outs if found is None else [_merge_runtime(a, b) for a, b in zip(found, outs)]
                )
        for tensor, shape in zip(op.outputs, found or ()):
            scope.shapes[tensor.name] = _merge(self._shape(scope, tensor), shape)

    def _body_count(self, child: _Scope, caller: FlopRow, kind: str | None) -> int | None:
        """Executions of a body instance, for its ops without records of their own."""
        if self.runtime is None:  # a call runs once per call; loops and branches: unknown
            return caller.count if kind is None else None
        recorded = [
            rt.runs
            for op in child.graph.get_operations()
            for rt in [self._runtime(child, op.name)[0]]
            if rt is not None and rt.runs
        ]
        if recorded:
            return max(recorded)
        if caller.runs:  # the caller ran as one kernel (not lowered or inlined)
            return caller.runs if kind is None else None
        return 0

    def _arg_shapes(self, scope: _Scope, op: Any) -> list[Shape]:
        inputs = list(op.inputs)[1:] if op.type in _BRANCHING else list(op.inputs)
        shapes = [self._shape(scope, t) for t in inputs]
        if op.type not in ("While", "StatelessWhile"):
            return shapes
        try:
            from tensorflow.python.framework import tensor_shape

            invariants = [_dims(tensor_shape.TensorShape(p)) for p in op.get_attr("output_shapes")]
        except (ValueError, TypeError):
            return shapes
        if len(invariants) != len(shapes):
            return shapes
        # A loop variable keeps the invariant unless the caller did not relax it (the
        # invariant is then just the input's static shape): refined dims are safe there.
        return [
            _merge(inv, shape) if self._original_static(scope, t) == inv else inv
            for t, inv, shape in zip(inputs, invariants, shapes)
        ]

    def _original_static(self, scope: _Scope, tensor: Any) -> Shape:
        if scope.function is not None:
            return _dims(tensor.shape)
        try:
            return _dims(self.counter.graph.get_tensor_by_name(tensor.name).shape)
        except (KeyError, ValueError):
            return _dims(tensor.shape)


def _make_row(
    scope: _Scope,
    op: Any,
    ours: tuple[int | None, str | None, str],
    theirs: tuple[int | None, str | None, str],
    count: int | None,
    runs: int | None,
    names: tuple[str, ...],
) -> FlopRow:
    flops, reason, detail = ours
    tf_flops, tf_reason, tf_detail = theirs
    if flops is None and tf_flops:
        flops, status = tf_flops, STATUS_FALLBACK
    elif flops is None:
        status = STATUS_MISSING
    elif op.type in ZERO_COST_OPS:
        status = STATUS_ZERO
    elif tf_flops is None:
        status = STATUS_ADDED
    else:
        status = STATUS_TF if flops == tf_flops else STATUS_CORRECTED
    if reason is None and flops and count is None:
        reason, detail = REASON_UNKNOWN_COUNT, "executions unknown without a RunMetadata"
    return FlopRow(
        name=scope.path + op.name,
        op=op.type,
        flops=flops,
        tf_flops=tf_flops,
        count=count,
        runs=runs,
        status=status,
        reason=reason,
        tf_reason=tf_reason,
        detail=detail,
        tf_detail=tf_detail,
        function=scope.function,
        caller=scope.caller,
        runtime_names=names,
    )


def _import(graph_def: Any) -> Any:
    """``graph_def`` imported into a new ``tf.Graph`` (TensorFlow's shape inference)."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(graph_def, name="")
    return graph


# --------------------------------------------------------------------- public API
def corrected_flops(
    graph: Any,
    run_meta: Any = None,
    conventions: FlopConventions | None = None,
) -> FlopTable:
    """The corrected FLOP table of ``graph`` (see the module docstring).

    Args:
        graph: ``tf.Graph`` or GraphDef (message or bytes).
        run_meta: optional RunMetadata of one run (ours, TensorFlow's or bytes):
            completes unknown shapes and counts executions of function bodies.
        conventions: counting conventions (default: FLOP = 2 x MAC).

    Returns:
        A :class:`FlopTable`; TensorFlow's default numbers are in ``tf_flops``.
    """
    return FlopCounter(graph, conventions).table(run_meta)


def missing_flops_report(
    graph: Any,
    run_meta: Any = None,
    conventions: FlopConventions | None = None,
    include_zero_cost: bool = False,
) -> Any:
    """Ops TensorFlow gives no FLOPs, and why (see :mod:`tfprof_lite.analysis.flops_report`).

    Returns:
        A :class:`~tfprof_lite.analysis.flops_report.MissingFlopsReport` with
        ``to_text()`` and ``to_json()``.
    """
    from tfprof_lite.analysis.flops_report import missing_from_table

    table = corrected_flops(graph, run_meta, conventions)
    return missing_from_table(table, include_zero_cost=include_zero_cost)


def resolve_flops_mode(flops: Union[str, FlopConventions, None]) -> FlopConventions | None:
    """``"tf"``/None -> None (TensorFlow's numbers); ``"corrected"`` -> default conventions.

    Raises:
        InvalidOptionError: anything else.
    """
    if flops is None or flops == "tf":
        return None
    if flops == "corrected":
        return FlopConventions()
    if isinstance(flops, FlopConventions):
        return flops
    raise InvalidOptionError(
        f"flops must be one of {', '.join(FLOPS_MODES)} or a FlopConventions, got {flops!r}"
    )


def _profile_values(table: FlopTable, skip: Collection[str]) -> tuple[dict[str, int], set[str]]:
    """Per-node static FLOPs for a profile, and the callers that got attributions."""
    values: dict[str, int] = {}
    caller_runs: dict[str, int | None] = {}
    attributed: dict[str, int] = {}
    for row in table.rows:
        if not row.in_function:
            caller_runs[row.name] = row.runs
            if row.flops:
                values[row.name] = row.flops
        elif row.runtime_names:
            for name in row.runtime_names:
                values[name] = row.flops or 0
        elif row.total and row.caller is not None:
            attributed[row.caller] = attributed.get(row.caller, 0) + row.total
    for caller, total in attributed.items():
        runs = caller_runs.get(caller)
        values[caller] = values.get(caller, 0) + (total // runs if runs else total)
    kept = {name: v for name, v in values.items() if v and name not in skip}
    return kept, set(attributed) - set(skip)


def profile_entries(table: FlopTable, skip: Collection[str] = ()) -> list[OpLogEntrySpec]:
    """Op-log entries that put the table's FLOPs into a profile.

    Graph nodes get their per-execution FLOPs (tfprof multiplies by run count);
    function-body ops get them on their RunMetadata pseudo nodes; body ops without
    records of their own but with a known count are attributed to the outermost
    GraphDef caller (divided by the caller's own run count when it was recorded).
    Names in ``skip`` (user op-log FLOPs) and zero values are left out.
    """
    values, _ = _profile_values(table, skip)
    return [OpLogEntrySpec(name, float_ops=value) for name, value in values.items()]


class FlopsHook:
    """Puts corrected FLOPs into a profile model: the opt-in ``flops=`` hook of
    ``profile`` and ``Profiler`` (applied after the default op log, and again after
    every ``add_step``).

    Args:
        graph: ``tf.Graph`` or GraphDef.
        conventions: counting conventions.
        skip: node names whose FLOPs a user op log set (never overridden).
    """

    def __init__(
        self, graph: Any, conventions: FlopConventions, skip: Collection[str] = ()
    ) -> None:
        self.counter = FlopCounter(graph, conventions)
        self.skip = frozenset(skip)
        self._attributed: set[str] = set()

    def apply(self, model: Any, run_meta: Any = None) -> FlopTable:
        """Overwrite the model's static FLOPs with the table for ``run_meta``.

        A caller that carried attributed body FLOPs before but none now (its body
        got pseudo nodes of its own from this RunMetadata) is reset to 0 so nothing
        is counted twice. Returns the table used.
        """
        table = self.counter.table(run_meta, compare_tf=False)
        values, attributed = _profile_values(table, self.skip)
        for name in self._attributed - set(values):
            nid = model.index.get(name)
            if nid is not None:
                model.static_float_ops[nid] = 0
        self._attributed = attributed
        model.add_op_log([OpLogEntrySpec(n, float_ops=v) for n, v in values.items()], {})
        return table
