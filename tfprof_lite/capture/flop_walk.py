"""The corrected-FLOP walk: one table over a graph and every function body it calls.

Contract: :class:`Walk` computes one :class:`~tfprof_lite.model.flops.FlopTable`
(see :mod:`tfprof_lite.capture.flops`). With a RunMetadata it first refines the
graph: recorded output shapes are declared on a *copy* whose shape inference
TensorFlow re-runs (the caller's graph is never touched). Each op gets our
formula's value, TensorFlow's registered one (unless ``compare_tf`` is off) and
an execution count from the records, and every body it calls is walked with
its own runtime name prefixes (:func:`make_row` decides the row's status).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from tfprof_lite.capture.flop_bodies import (
    BRANCHING,
    CALLERS,
    CASES,
    MAX_DEPTH,
    FunctionLibrary,
    function_specs,
)
from tfprof_lite.capture.flop_runtime import (
    SAME_SHAPE_OPS,
    Runtime,
    RuntimeIndex,
    as_list,
    attr_getter,
    compatible,
    dims,
    infer_output,
    known,
    merge,
    merge_runtime,
)
from tfprof_lite.capture.flop_tf import TfFilledGraph, import_graph_def, tf_registered_flops
from tfprof_lite.model.flops import (
    ELEMENT_COSTS,
    REASON_ERROR,
    REASON_FUNCTION_BODY,
    REASON_UNKNOWN_COUNT,
    STATUS_ADDED,
    STATUS_CORRECTED,
    STATUS_FALLBACK,
    STATUS_MISSING,
    STATUS_TF,
    STATUS_ZERO,
    ZERO_COST_OPS,
    FlopConventions,
    FlopError,
    FlopRow,
    FlopTable,
    OpInfo,
    Shape,
    op_flops,
)

__all__ = ["Scope", "Walk", "make_row"]


@dataclass
class Scope:
    """The graph or one function-body instance being walked."""

    graph: Any
    path: str
    function: Optional[str]
    prefixes: tuple[str, ...]
    caller: Optional[str]
    count: Optional[int] = None
    depth: int = 0
    shapes: dict[str, Shape] = field(default_factory=dict)
    runtime: dict[str, tuple[Optional[Runtime], tuple[str, ...]]] = field(default_factory=dict)


class Walk:
    """One table computation: the (refined) graph, then every function body.

    Args:
        library: the graph and its functions.
        conventions: counting conventions.
        runtime: the RunMetadata's index, or None.
        compare: also compute TensorFlow's registered values.
    """

    def __init__(
        self,
        library: FunctionLibrary,
        conventions: FlopConventions,
        runtime: RuntimeIndex | None,
        compare: bool,
    ) -> None:
        self.library = library
        self.runtime = runtime
        self.compare_tf = compare
        self.conv = conventions
        self.notes: list[str] = []
        self.rows: list[FlopRow] = []
        self._tf_view: Any = None
        self.graph = self._refined_graph()

    def run(self) -> FlopTable:
        """The table."""
        self._scope_rows(Scope(self.graph, "", None, ("",), None))
        return FlopTable(tuple(self.rows), self.conv, self.runtime is not None, tuple(self.notes))

    # ------------------------------------------------------------ refinement
    def _refined_graph(self) -> Any:
        """With a RunMetadata: a copy of the graph whose recorded output shapes are
        declared (``_output_shapes``) and re-inferred by TensorFlow's importer, so
        they reach every consumer; the caller's graph itself is never touched."""
        graph = self.library.graph
        if self.runtime is None or all(
            t.shape.is_fully_defined() for op in graph.get_operations() for t in op.outputs
        ):
            return graph
        graph_def = graph.as_graph_def(add_shapes=True)
        # Re-imported even when no declaration changed: shapes set on the graph after
        # its consumers were built (TensorFlow's own fill) only propagate this way.
        refined = [node.name for node in graph_def.node if self._declare_recorded(node)]
        try:
            copy = import_graph_def(graph_def)
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
            static = dims(tensor_shape.TensorShape(proto))
            new = merge(static, recorded.get(slot))
            if new != static and compatible(static, new):
                proto.CopyFrom(tensor_shape.TensorShape(as_list(new)).as_proto())
                changed = True
        return changed

    # ------------------------------------------------------------ runtime and shapes
    def _runtime(self, scope: Scope, name: str) -> tuple[Runtime | None, tuple[str, ...]]:
        cached = scope.runtime.get(name)
        if cached is not None:
            return cached
        found: list[tuple[str, Runtime]] = []
        if self.runtime is not None:
            for prefix in scope.prefixes:
                full = f"{prefix}/{name}" if prefix else name
                rt = self.runtime.get(full)
                if rt is not None:
                    found.append((full, rt))
        merged: Runtime | None = None
        if found:
            merged = Runtime(runs=sum(rt.runs for _, rt in found))
            for _, rt in found:
                for slot, shape in rt.outputs.items():
                    old = merged.outputs.get(slot, shape)
                    merged.outputs[slot] = merge_runtime(old, shape)
        result = (merged, tuple(full for full, _ in found))
        scope.runtime[name] = result
        return result

    def _shape(self, scope: Scope, tensor: Any, propagate: bool = True) -> Shape:
        """Static shape, completed by the records and, failing those, by light
        propagation from the producer's inputs (identity-like, elementwise, MatMul)."""
        cached = scope.shapes.get(tensor.name, ())
        if cached != ():
            return cached
        shape = dims(tensor.shape)
        if not known(shape):
            rt, _ = self._runtime(scope, tensor.op.name)
            recorded = rt.outputs.get(tensor.value_index) if rt is not None else None
            if recorded is None and scope.function is None and self.runtime is not None:
                recorded = self.runtime.feeds.get(tensor.op.name, {}).get(tensor.value_index)
            shape = merge(shape, recorded)
        if not known(shape) and propagate:
            inputs = [self._shape(scope, t, propagate=False) for t in tensor.op.inputs]
            shape = merge(shape, infer_output(tensor.op, tensor.value_index, inputs))
        if not known(shape) and propagate:
            shape = merge(shape, self._from_consumers(scope, tensor))
        if propagate or known(shape):
            scope.shapes[tensor.name] = shape
        return shape

    def _from_consumers(self, scope: Scope, tensor: Any) -> Shape:
        """The shape of a same-shape consumer's known output (e.g. a fused-away MatMul
        read back from the BiasAdd whose record carries the fused kernel)."""
        for consumer in tensor.consumers():
            if not consumer.outputs or not consumer.inputs or consumer.inputs[0] is not tensor:
                continue
            if consumer.type in SAME_SHAPE_OPS or (
                consumer.type in ELEMENT_COSTS and len(consumer.inputs) == 1
            ):
                out = self._shape(scope, consumer.outputs[0], propagate=False)
                if known(out):
                    return out
        return None

    # ------------------------------------------------------------ rows
    def _scope_rows(self, scope: Scope) -> None:
        for op in scope.graph.get_operations():
            if scope.function is not None and op.type == "Placeholder":
                continue  # a function argument, not an op
            row = self._row(scope, op)
            self.rows.append(row)
            if op.type in CALLERS or op.type in CASES:
                self._descend(scope, op, row)

    def _row(self, scope: Scope, op: Any) -> FlopRow:
        runtime, names = self._runtime(scope, op.name)
        info = OpInfo(
            op.name,
            op.type,
            tuple(self._shape(scope, t) for t in op.inputs),
            tuple(self._shape(scope, t) for t in op.outputs),
            attr_getter(op),
        )
        try:
            ours: tuple[int | None, str | None, str] = (op_flops(info, self.conv), None, "")
        except FlopError as err:
            ours = (None, err.reason, err.detail)
        theirs = self._tf_value(scope, op)
        count: int | None = runtime.runs if runtime is not None else None
        if count is None:
            count = 1 if scope.function is None else scope.count
        return make_row(
            scope, op, ours, theirs, count, runtime.runs if runtime is not None else None, names
        )

    def _tf_value(self, scope: Scope, op: Any) -> tuple[int | None, str | None, str]:
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
            graph = self.library.graph
            self._tf_view = (
                graph if self.runtime is None else TfFilledGraph(graph, self.runtime.meta)
            )
        return self._tf_view

    # ------------------------------------------------------------ function bodies
    def _descend(self, scope: Scope, op: Any, row: FlopRow) -> None:
        if scope.depth >= MAX_DEPTH:
            self.notes.append(f"{scope.path}{op.name}: functions nested too deeply, not walked")
            return
        args = self._arg_shapes(scope, op)
        children: list[Scope] = []
        for fname, kind in function_specs(op):
            try:
                body = self.library.body_graph(fname, args)
            except Exception as err:  # noqa: BLE001 - noted, the rest of the table stands
                self.notes.append(f"{scope.path}{op.name}: cannot load function {fname} ({err})")
                continue
            child = self._child(scope, op, body, fname, kind)
            child.count = self._body_count(child, row, kind)
            self._scope_rows(child)
            if kind != "cond":
                children.append(child)
        self._refine_outputs(scope, op, children, args)

    def _child(self, scope: Scope, op: Any, body: Any, fname: str, kind: str | None) -> Scope:
        """The scope of one function body called by ``op``, with its runtime prefixes."""
        bases = [f"{p}/{op.name}" if p else op.name for p in scope.prefixes]
        prefixes = bases
        if kind is not None:
            runtime = self.runtime
            prefixes = (
                [p for b in bases for p in runtime.instance_prefixes(b, kind)] if runtime else []
            )
        return Scope(
            body,
            f"{scope.path}{op.name}/" + (f"{kind}/" if kind else ""),
            fname,
            tuple(prefixes),
            scope.caller or op.name,
            depth=scope.depth + 1,
        )

    def _refine_outputs(
        self, scope: Scope, op: Any, children: list[Scope], args: list[Shape]
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
                    outs if found is None else [merge_runtime(a, b) for a, b in zip(found, outs)]
                )
        for tensor, shape in zip(op.outputs, found or ()):
            scope.shapes[tensor.name] = merge(self._shape(scope, tensor), shape)

    def _body_count(self, child: Scope, caller: FlopRow, kind: str | None) -> int | None:
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

    def _arg_shapes(self, scope: Scope, op: Any) -> list[Shape]:
        inputs = list(op.inputs)[1:] if op.type in BRANCHING else list(op.inputs)
        shapes = [self._shape(scope, t) for t in inputs]
        if op.type not in ("While", "StatelessWhile"):
            return shapes
        try:
            from tensorflow.python.framework import tensor_shape

            invariants = [dims(tensor_shape.TensorShape(p)) for p in op.get_attr("output_shapes")]
        except (ValueError, TypeError):
            return shapes
        if len(invariants) != len(shapes):
            return shapes
        # A loop variable keeps the invariant unless the caller did not relax it (the
        # invariant is then just the input's static shape): refined dims are safe there.
        return [
            merge(inv, shape) if self._original_static(scope, t) == inv else inv
            for t, inv, shape in zip(inputs, invariants, shapes)
        ]

    def _original_static(self, scope: Scope, tensor: Any) -> Shape:
        if scope.function is not None:
            return dims(tensor.shape)
        try:
            return dims(self.library.graph.get_tensor_by_name(tensor.name).shape)
        except (KeyError, ValueError):
            return dims(tensor.shape)


def make_row(
    scope: Scope,
    op: Any,
    ours: tuple[int | None, str | None, str],
    theirs: tuple[int | None, str | None, str],
    count: int | None,
    runs: int | None,
    names: tuple[str, ...],
) -> FlopRow:
    """The row of ``op``: our value (or TensorFlow's as a fallback) and its status."""
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
