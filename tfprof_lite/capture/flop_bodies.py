"""Function bodies for the FLOP walk: which ops call which functions, and loading them.

Contract: :func:`function_specs` lists the bodies an op calls (control flow v2
``While``/``If``/``Case``, stateless or not, and ``PartitionedCall``/
``StatefulPartitionedCall``) with the token TensorFlow's lowering puts in their
runtime node names (``body``, ``then``, ``branch<i>``; None for an inlined
call). :class:`FunctionLibrary` loads a body as a FuncGraph with TensorFlow's
shape inference from the caller's argument shapes (merged with the shapes the
function recorded for its args; resource handles get none), cached per
(function, argument shapes). TensorFlow is imported when a body is loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from tfprof_lite.capture.flop_runtime import as_list, dims, merge
from tfprof_lite.model.flops import Shape

__all__ = ["BRANCHING", "CALLERS", "CASES", "MAX_DEPTH", "FunctionLibrary", "function_specs"]

_WHILE_KINDS = (("body", "body"), ("cond", "cond"))
_IF_KINDS = (("then_branch", "then"), ("else_branch", "else"))
#: Op type -> (function attribute, runtime kind token; None = inlined call).
CALLERS: dict[str, tuple[tuple[str, Optional[str]], ...]] = {
    "While": _WHILE_KINDS,
    "StatelessWhile": _WHILE_KINDS,
    "If": _IF_KINDS,
    "StatelessIf": _IF_KINDS,
    "PartitionedCall": (("f", None),),
    "StatefulPartitionedCall": (("f", None),),
}
#: Op types calling one of several branch functions.
CASES = ("Case", "StatelessCase")
#: Op types whose first input selects the body (not an argument).
BRANCHING = ("If", "StatelessIf", *CASES)
#: Deepest function nesting walked.
MAX_DEPTH = 32


def function_specs(op: Any) -> list[tuple[str, Optional[str]]]:
    """(function name, runtime kind token) for each body an op calls."""
    if op.type in CASES:
        try:
            branches = op.get_attr("branches")
        except ValueError:
            return []
        return [(b.name, f"branch{i}") for i, b in enumerate(branches)]
    specs = []
    for attr, kind in CALLERS.get(op.type, ()):
        try:
            specs.append((op.get_attr(attr).name, kind))
        except (ValueError, AttributeError):
            continue
    return specs


class FunctionLibrary:
    """The functions of a graph's library, loaded as FuncGraphs on demand.

    Args:
        graph: the ``tf.Graph`` whose library is read.
    """

    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self._library: dict[str, Any] | None = None
        self._bodies: dict[tuple[str, tuple[Shape, ...]], Any] = {}

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
                arg_shapes_for(fdef, arg_shapes)
                if len(arg_shapes) == len(fdef.signature.input_arg)
                else None
            )
            if shapes is not None:  # arg_attr shapes would override ours: merged in
                fdef = without_arg_shapes(fdef)
            body = function_def_to_graph.function_def_to_graph(fdef, input_shapes=shapes)
            self._bodies[key] = body
        return body


def arg_shapes_for(fdef: Any, arg_shapes: Sequence[Shape]) -> list[Any]:
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
            recorded = dims(tensor_shape.TensorShape(value.list.shape[0]))
        elif value is not None and value.WhichOneof("value") == "shape":
            recorded = dims(tensor_shape.TensorShape(value.shape))
        merged = merge(shape, recorded)
        is_resource = arg.type == 20  # DT_RESOURCE
        shapes.append(None if is_resource else tensor_shape.TensorShape(as_list(merged)))
    return shapes


def without_arg_shapes(fdef: Any) -> Any:
    """A copy of ``fdef`` without ``_output_shapes`` arg attributes."""
    copy = type(fdef)()
    copy.CopyFrom(fdef)
    for attrs in copy.arg_attr.values():
        if "_output_shapes" in attrs.attr:
            del attrs.attr["_output_shapes"]
    return copy
