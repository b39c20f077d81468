"""TensorFlow's registered ``flops`` statistics of live ops, the common ones computed
straight from the ops' tensors.

Contract: :meth:`RegisteredFlops.value` is ``(flops, missing)`` for one op as
``tfprof_logger`` gets it from ``ops.get_stats_for_node_def(graph, op.node_def,
"flops")``: 0 when the op type has no function or the function raises a
``LookupError`` (``IndexError`` and ``KeyError`` included), 0 and ``missing``
when it raises a ``ValueError`` (a shape it reads is not fully defined), else the
statistic's value.

TensorFlow's functions read the shapes of the op's first input and first output
by name through the deprecated ``graph_util.tensor_shape_from_node_def_name``,
after the op's ``NodeDef`` was parsed; that costs more than the arithmetic by far.
The functions of ``flops_registry`` that only multiply element counts (unary,
binary and reduction ops, ``L2Loss``, ``MatMul``) are computed here from the same
tensors (``op.inputs[0]``, ``op.outputs[0]``: the tensors those names denote),
with the same checks in the same order, hence the same errors. Such a value can
change only while a shape it reads is not fully defined (``missing``); the value
of any other function, while a shape of the op's inputs or outputs is not. A kind
is used
only for the very function object TensorFlow registered, and only after its
first op gave TensorFlow's own answer (value or error); every other function
(convolutions, pools, ``AddN``, batched products, user registrations) is called
as TensorFlow calls it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["RegisteredFlops", "TensorLookup", "registry_call"]

#: How one kind of function computes an op's statistic: ``kind(op, args)``.
_Kind = Callable[[Any, Any], int]

#: flops_registry function name -> (kind, factors); see ``_KINDS``.
_SPECS: dict[str, tuple[str, tuple[int, ...]]] = {
    **{
        name: ("unary", (factor,))
        for name, factor in (
            ("_reciprocal_flops", 1),
            ("_square_flops", 1),
            ("_rsqrt_flops", 2),
            ("_log_flops", 1),
            ("_neg_flops", 1),
            ("_assign_sub_flops", 1),
            ("_assign_add_flops", 1),
            ("_softmax_flops", 5),
        )
    },
    "_l2_loss_flops": ("l2_loss", ()),
    **{
        name: ("binary", (factor,))
        for name, factor in (
            ("_add_flops", 1),
            ("_sub_flops", 1),
            ("_mul_flops", 1),
            ("_real_div_flops", 1),
            ("_maximum_flops", 1),
            ("_minimum_flops", 1),
            ("_pow_flops", 1),
            ("_rsqrt_grad_flops", 4),
            ("_greater_equal_flops", 1),
            ("_greater_flops", 1),
            ("_less_equal_flops", 1),
            ("_less_flops", 1),
            ("_equal_flops", 1),
            ("_not_equal_flops", 1),
            ("_squared_difference_flops", 2),
        )
    },
    **{
        name: ("reduction", factors)
        for name, factors in (
            ("_mean_flops", (1, 1)),
            ("_sum_flops", (1, 0)),
            ("_arg_max_flops", (1, 0)),
            ("_arg_min_flops", (1, 0)),
            ("_bias_add_grad_flops", (1, 0)),
        )
    },
    "_calc_mat_mul_flops": ("mat_mul", ()),
}

#: Larger values go to TensorFlow's function (``MatMul`` multiplies NumPy int64).
_INT64_LIMIT = 2**63


def _first_input(op: Any) -> Any:
    """The fully defined shape of ``node.input[0]``'s tensor."""
    inputs = op.inputs
    if not inputs:  # node.input[0]: IndexError, or a control input: KeyError
        raise IndexError("list index out of range")
    shape = inputs[0].get_shape()
    shape.assert_is_fully_defined()
    return shape


def _first_output(op: Any) -> Any:
    """The fully defined shape of ``<node name>:0``."""
    outputs = op.outputs
    if not outputs:
        raise KeyError(op.name)
    shape = outputs[0].get_shape()
    shape.assert_is_fully_defined()
    return shape


def _bool_attr(op: Any, name: str) -> bool:
    """``node.attr[name].b``: False when the op has no such attribute."""
    read = getattr(op, "_get_attr_bool", op.get_attr)
    try:
        return bool(read(name))
    except ValueError:
        return False


def _unary(op: Any, factors: tuple[int, ...]) -> int:
    return int(_first_input(op).num_elements()) * factors[0]


def _l2_loss(op: Any, factors: tuple[int, ...]) -> int:
    return int(_first_input(op).num_elements()) * 3 - 1


def _binary(op: Any, factors: tuple[int, ...]) -> int:
    return int(_first_output(op).num_elements()) * factors[0]


def _reduction(op: Any, factors: tuple[int, ...]) -> int:
    reduce, finalize = factors
    elements = int(_first_input(op).num_elements())
    return elements * reduce + int(_first_output(op).num_elements()) * (finalize - reduce)


def _mat_mul(op: Any, factors: tuple[int, ...]) -> int:
    transpose_a = _bool_attr(op, "transpose_a")
    a_shape = _first_input(op)
    k = int(a_shape[0]) if transpose_a else int(a_shape[1])
    count = 1
    for dim in _first_output(op).as_list():
        count *= dim
    value = k * count * 2
    if not -_INT64_LIMIT <= value < _INT64_LIMIT:
        raise OverflowError(value)
    return value


_KINDS: dict[str, _Kind] = {
    "unary": _unary,
    "l2_loss": _l2_loss,
    "binary": _binary,
    "reduction": _reduction,
    "mat_mul": _mat_mul,
}


class TensorLookup:
    """A ``tf.Graph`` as TensorFlow's flops functions see it, with a fast
    ``get_tensor_by_name``.

    The functions only read tensors by name (``graph_util.
    tensor_shape_from_node_def_name``); TensorFlow's own look-up parses the name
    under the graph's lock for each. A plain ``op:index`` name of an existing
    output is looked up here; every other name goes to the graph, so results and
    errors are TensorFlow's.
    """

    def __init__(self, graph: Any) -> None:
        self._graph = graph
        self._op_by_name = getattr(graph, "_get_operation_by_name", graph.get_operation_by_name)

    def get_tensor_by_name(self, name: Any) -> Any:
        """The tensor ``name`` (``op:index``), as ``tf.Graph.get_tensor_by_name``."""
        if isinstance(name, str):
            op_name, sep, index = name.partition(":")
            if sep and index.isascii() and index.isdigit():
                try:
                    outputs = self._op_by_name(op_name).outputs
                except KeyError:
                    outputs = ()
                if int(index) < len(outputs):
                    return outputs[int(index)]
        return self._graph.get_tensor_by_name(name)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._graph, name)


class RegisteredFlops:
    """TensorFlow's registered ``flops`` statistics for the ops of one graph."""

    def __init__(self, graph: Any) -> None:
        self.tensors = TensorLookup(graph)
        self._functions: dict[str, Any] = {}
        # Registered function -> (kind, factors): to check on its first op, then in use.
        self._unchecked: dict[Any, tuple[_Kind, Any]] = _known_functions()
        self._checked: dict[Any, tuple[_Kind, Any]] = {}

    def function(self, op_type: str) -> Any:
        """TensorFlow's registered ``flops`` function for ``op_type``, or None."""
        function = self._functions.get(op_type, self)
        if function is self:
            function = self._functions[op_type] = _flops_function(op_type)
        return function

    def value(self, op: Any, function: Any) -> tuple[int, bool, bool]:
        """``(flops, missing, settled)`` of ``op`` by the registered ``function``
        (see the module docstring); ``settled``: the value cannot change as the
        graph's shapes get refined."""
        if function is None:  # get_stats_for_node_def returns an empty OpStats
            return 0, False, True
        fast = self._checked.get(function)
        if fast is not None:
            try:
                flops, missing = _outcome(fast[0], op, fast[1])
            except OverflowError:
                flops, missing = self.call(op, function)
            return flops, missing, not missing
        own = self.call(op, function)
        spec = self._unchecked.pop(function, None)
        if spec is not None and _checks(spec, op, own):
            self._checked[function] = spec
        return own[0], own[1], _shapes_known(op)

    def call(self, op: Any, function: Any) -> tuple[int, bool]:
        """``(flops, missing)`` of ``op`` by calling ``function`` as TensorFlow does
        (TensorFlow's own functions warn of a deprecation: call this inside
        :func:`~tfprof_lite.capture.notes.tf_deprecations_silenced`)."""
        return _outcome(_call_registered, op, (function, self.tensors))


def _call_registered(op: Any, args: tuple[Any, Any]) -> int:
    function, tensors = args
    stats = function(tensors, op.node_def)
    return int(stats.value) if stats is not None and stats.value else 0


def _outcome(kind: _Kind, op: Any, args: Any) -> tuple[int, bool]:
    """``kind(op, args)`` as ``tfprof_logger`` takes a statistic: a ``LookupError``
    gives none, a ``ValueError`` none and a missing shape."""
    try:
        return kind(op, args), False
    except LookupError:
        return 0, False
    except ValueError:
        return 0, True


def _checks(spec: tuple[_Kind, Any], op: Any, own: tuple[int, bool]) -> bool:
    """Whether ``spec`` gives TensorFlow's outcome ``own`` for ``op``."""
    try:
        return _outcome(spec[0], op, spec[1]) == own
    except Exception:  # noqa: BLE001 - any other outcome is a difference
        return False


def _shapes_known(op: Any) -> bool:
    """Whether every input and output shape of ``op`` is fully defined."""
    for tensors in (op.inputs, op.outputs):
        for tensor in tensors:
            if not tensor.get_shape().is_fully_defined():
                return False
    return True


def _known_functions() -> dict[Any, tuple[_Kind, Any]]:
    """TensorFlow's registered functions this module computes, by identity."""
    try:
        from tensorflow.python.profiler.internal import flops_registry
    except ImportError:  # unknown TensorFlow internals: call every function
        return {}
    known = {}
    for name, (kind, factors) in _SPECS.items():
        function = getattr(flops_registry, name, None)
        if function is not None:
            known[function] = (_KINDS[kind], factors)
    return known


def _flops_function(op_type: str) -> Any:
    """TensorFlow's registered ``flops`` function for ``op_type``, or None."""
    from tensorflow.python.framework import ops

    registry = getattr(ops, "_stats_registry", None)
    if registry is None:  # unknown TensorFlow internals: ask TensorFlow every time
        return registry_call
    try:
        return registry.lookup(f"{op_type},flops")
    except LookupError:
        return None


def registry_call(graph: Any, node_def: Any) -> Any:
    """``ops.get_stats_for_node_def`` (through the public look-up)."""
    from tensorflow.python.framework import ops

    return ops.get_stats_for_node_def(graph, node_def, "flops")
