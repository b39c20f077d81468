"""FLOP formulas per op type: pure Python, no TensorFlow.

:func:`op_flops` ``(info, conventions)`` returns the FLOPs of one execution of an
op described by an :class:`~tfprof_lite.model.flops.opinfo.OpInfo`, or raises
:class:`~tfprof_lite.model.flops.opinfo.FlopError` with a ``REASON_*`` when a
needed dim is unknown or the op has no formula; :func:`has_formula` says whether
a type is known. TensorFlow's registered formulas are reproduced for the ops it
covers; the counting conventions come from
:class:`~tfprof_lite.model.flops.conventions.FlopConventions`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from tfprof_lite.model.flops.conventions import (
    ELEMENT_COSTS,
    FUSED_COSTS,
    REASON_INCOMPLETE_SHAPE,
    REASON_NO_FORMULA,
    TF_UNARY_COSTS,
    ZERO_COST_OPS,
    FlopConventions,
)
from tfprof_lite.model.flops.opinfo import Dim, FlopError, Formula, OpInfo, Shape, fmt

__all__ = ["has_formula", "op_flops"]


def _count(shape: Sequence[int]) -> int:
    return math.prod(shape)


def _elements(info: OpInfo, source: str) -> int:
    """Element count of input 0, input 1 or the output; a unary op's output and its
    input 0 (also BiasAdd's) have the same size, so either known one is used."""
    if source == "in1":
        return _count(info.input(1))
    first, second = (info.input, info.output) if source == "in0" else (info.output, info.input)
    try:
        return _count(first(0))
    except FlopError:
        if len(info.inputs) == 1 or info.op in ("BiasAdd", "BiasAddV1"):
            return _count(second(0))
        raise


def _elementwise(info: OpInfo, conv: FlopConventions) -> int:
    cost = conv.element_cost(info.op)
    if cost is None:  # pragma: no cover - registry and table agree
        raise FlopError(REASON_NO_FORMULA, info.op)
    if info.op in TF_UNARY_COSTS or info.op in ("BiasAdd", "BiasAddV1"):
        source = "in0"
    elif info.op in ("AssignAddVariableOp", "AssignSubVariableOp"):
        source = "in1"
    else:
        source = "out"
    return cost * _elements(info, source)


def _l2_loss(info: OpInfo, conv: FlopConventions) -> int:
    return 3 * _count(info.input(0)) - 1


def _add_n(info: OpInfo, conv: FlopConventions) -> int:
    if not info.inputs:
        return 0
    return _count(info.input(0)) * (len(info.inputs) - 1)


def _reduction(info: OpInfo, conv: FlopConventions) -> int:
    inputs = _count(info.input(0))
    return inputs if info.op == "Mean" else inputs - _count(info.output(0))


def _kernel_area(info: OpInfo) -> int:
    ksize = info.attr("ksize")
    if not ksize:
        raise FlopError(REASON_NO_FORMULA, f"{info.op} without a ksize attribute")
    return _count([int(k) for k in ksize])


def _pool(info: OpInfo, conv: FlopConventions) -> int:
    return _kernel_area(info) * _count(info.output(0))


def _avg_pool_grad(info: OpInfo, conv: FlopConventions) -> int:
    return 2 * _kernel_area(info) * _count(info.input(1))


def _max_pool_grad(info: OpInfo, conv: FlopConventions) -> int:
    orig_out = _count(info.input(1))
    return _kernel_area(info) * orig_out + orig_out


def _matmul_depth(info: OpInfo) -> int:
    """The contracted dim k, from the first operand or, if unknown there, the second."""
    if info.op in ("MatMul", "_FusedMatMul"):
        axes = (0 if info.attr("transpose_a") else 1, 1 if info.attr("transpose_b") else 0)
    else:
        axes = (-2 if info.attr("adj_x") else -1, -1 if info.attr("adj_y") else -2)
    try:
        return info.dim(0, axes[0])
    except FlopError:
        try:
            return info.dim(1, axes[1])
        except FlopError:
            pass
        raise


def _matmul(info: OpInfo, conv: FlopConventions) -> int:
    return conv.contraction(_count(info.output(0)), _matmul_depth(info))


def _filter_depth(info: OpInfo, filter_dims: int, filter_input: int = 1) -> int:
    return _count([info.dim(filter_input, axis) for axis in range(filter_dims)])


def _conv(spatial: int, depthwise: bool = False) -> Formula:
    taps = spatial if depthwise else spatial + 1  # kernel dims (+ input depth)

    def formula(info: OpInfo, conv: FlopConventions) -> int:
        return conv.contraction(_count(info.output(0)), _filter_depth(info, taps))

    return formula


def _generic_conv(info: OpInfo, conv: FlopConventions) -> int:
    filt = info.input(1)
    return conv.contraction(_count(info.output(0)), _count(filt[:-1]))


def _conv_backprop(taps: int, filter_is_output: bool) -> Formula:
    """Backprop of a convolution: the forward MACs, |dy| x kernel taps (x depth)."""

    def formula(info: OpInfo, conv: FlopConventions) -> int:
        filt = info.output(0) if filter_is_output else info.input(1)
        if len(filt) < taps:
            raise FlopError(REASON_INCOMPLETE_SHAPE, f"filter shape {fmt(filt)}")
        return conv.contraction(_count(info.input(2)), _count(filt[:taps]), exact=False)

    return formula


def _dilation(info: OpInfo, conv: FlopConventions) -> int:
    return 2 * _count(info.output(0)) * info.dim(1, 0) * info.dim(1, 1)


def _fused_cost(name: str, conv: FlopConventions) -> int:
    cost = conv.per_element.get(name, FUSED_COSTS.get(name))
    if cost is None:
        cost = conv.element_cost(name)
    if cost is None:
        raise FlopError(REASON_NO_FORMULA, f"fused op {name}")
    return cost


def _fused(base: Formula) -> Formula:
    """A ``_Fused*`` kernel: the contraction plus each ``fused_ops`` entry per element."""

    def formula(info: OpInfo, conv: FlopConventions) -> int:
        out = _count(info.output(0))
        extra = sum(_fused_cost(str(name), conv) for name in info.attr("fused_ops") or ())
        return base(info, conv) + extra * out

    return formula


def _batch_norm(info: OpInfo, conv: FlopConventions) -> int:
    per_element = 6 if info.attr("is_training") else 2
    return per_element * _count(info.input(0))


def _batch_norm_ex(info: OpInfo, conv: FlopConventions) -> int:
    per_element = _batch_norm(info, conv) // max(_count(info.input(0)), 1)
    side = 1 if info.attr("num_side_inputs") else 0
    mode = str(info.attr("activation_mode") or "Identity")
    act = 0 if mode == "Identity" else _fused_cost(mode, conv)
    return (per_element + side + act) * _count(info.input(0))


_EINSUM_TERM = re.compile(r"^(?:[A-Za-z]|\.\.\.)*$")


def _einsum_terms(equation: str, operands: int) -> tuple[list[str], str]:
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != operands or not all(_EINSUM_TERM.match(t) for t in [*terms, rhs]):
        raise FlopError(REASON_NO_FORMULA, f"einsum equation {equation!r}")
    if not arrow:  # implicit output: labels seen once, sorted; ellipsis first
        letters = [c for c in lhs if c.isalpha()]
        rhs = ("..." if "..." in lhs else "") + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1)
        )
    return terms, rhs


def _einsum_labels(term: str, shape: Shape, ellipsis: int) -> list[tuple[str, Dim]]:
    """(label, size) per dim of one operand; ellipsis dims become ``.0``, ``.1`` ...

    Ellipsis dims are right-aligned over ``ellipsis`` broadcast dims, as numpy does.
    """
    labels = list(term)
    if "..." in term:
        head, _, tail = term.partition("...")
        if shape is None:
            raise FlopError(REASON_INCOMPLETE_SHAPE, f"einsum operand {term} of unknown rank")
        extra = len(shape) - len(head) - len(tail)
        labels = list(head) + [f".{ellipsis - extra + j}" for j in range(extra)] + list(tail)
    if shape is None:
        return [(label, None) for label in labels]
    if len(labels) != len(shape):
        raise FlopError(REASON_INCOMPLETE_SHAPE, f"einsum operand {term} has shape {fmt(shape)}")
    return list(zip(labels, shape))


def _einsum_sizes(terms: list[str], shapes: Sequence[Shape]) -> dict[str, int]:
    ellipsis = max(
        (len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes) if s is not None),
        default=0,
    )
    sizes: dict[str, int] = {}
    unknown: set[str] = set()
    for term, shape in zip(terms, shapes):
        for label, size in _einsum_labels(term, shape, ellipsis):
            if size is None:
                unknown.add(label)
            elif size != 1 or label not in sizes:  # size-1 dims broadcast
                sizes[label] = max(size, sizes.get(label, 1))
    missing = unknown - set(sizes)
    if missing:
        raise FlopError(REASON_INCOMPLETE_SHAPE, f"einsum labels {sorted(missing)} unknown")
    return sizes


def _einsum(info: OpInfo, conv: FlopConventions) -> int:
    terms, rhs = _einsum_terms(str(info.attr("equation") or ""), len(info.inputs))
    sizes = _einsum_sizes(terms, info.inputs)
    out_labels = set(rhs.replace("...", ""))
    out_labels.update(label for label in sizes if label.startswith(".") and "..." in rhs)
    contracted = [label for label in sizes if label not in out_labels]
    out = _count([sizes[label] for label in sizes if label in out_labels])
    depth = _count([sizes[label] for label in contracted])
    if len(terms) == 1:  # a reduction (sum over dropped labels) or a transpose
        return out * depth - out if contracted else 0
    if not contracted:  # elementwise / outer product: one multiplication per element
        return out
    return conv.contraction(out, depth)


_FORMULAS: dict[str, Formula] = {op: _elementwise for op in ELEMENT_COSTS}
_FORMULAS.update(
    {
        "L2Loss": _l2_loss,
        "AddN": _add_n,
        "AvgPool": _pool,
        "MaxPool": _pool,
        "AvgPool3D": _pool,
        "MaxPool3D": _pool,
        "AvgPoolGrad": _avg_pool_grad,
        "AvgPool3DGrad": _avg_pool_grad,
        "MaxPoolGrad": _max_pool_grad,
        "MaxPool3DGrad": _max_pool_grad,
        "MatMul": _matmul,
        "BatchMatMul": _matmul,
        "BatchMatMulV2": _matmul,
        "BatchMatMulV3": _matmul,
        "Einsum": _einsum,
        "Conv2D": _conv(2),
        "Conv3D": _conv(3),
        "DepthwiseConv2dNative": _conv(2, depthwise=True),
        "Conv": _generic_conv,
        "Dilation2D": _dilation,
        "Conv2DBackpropInput": _conv_backprop(3, filter_is_output=False),
        "Conv2DBackpropInputV2": _conv_backprop(3, filter_is_output=False),
        "Conv2DBackpropFilter": _conv_backprop(3, filter_is_output=True),
        "Conv3DBackpropInputV2": _conv_backprop(4, filter_is_output=False),
        "Conv3DBackpropFilterV2": _conv_backprop(4, filter_is_output=True),
        "DepthwiseConv2dNativeBackpropInput": _conv_backprop(2, filter_is_output=False),
        "DepthwiseConv2dNativeBackpropFilter": _conv_backprop(2, filter_is_output=True),
        "_FusedConv2D": _fused(_conv(2)),
        "_FusedConv3D": _fused(_conv(3)),
        "_FusedDepthwiseConv2dNative": _fused(_conv(2, depthwise=True)),
        "_FusedMatMul": _fused(_matmul),
        "FusedBatchNorm": _batch_norm,
        "FusedBatchNormV2": _batch_norm,
        "FusedBatchNormV3": _batch_norm,
        "_FusedBatchNormEx": _batch_norm_ex,
    }
)
for _op in ("Mean", "Sum", "ArgMax", "ArgMin", "BiasAddGrad", "Max", "Min", "Prod", "All", "Any"):
    _FORMULAS[_op] = _reduction


def op_flops(info: OpInfo, conventions: FlopConventions | None = None) -> int:
    """Our FLOPs for one execution of an op (0 for :data:`ZERO_COST_OPS`).

    Raises:
        FlopError: no formula for the op type, or a shape it needs is unknown.
    """
    conv = conventions or FlopConventions()
    if info.op in ZERO_COST_OPS:
        return 0
    formula = _FORMULAS.get(info.op)
    if formula is None:
        raise FlopError(REASON_NO_FORMULA, f"no formula for {info.op}")
    return int(formula(info, conv))


def has_formula(op_type: str) -> bool:
    """True when :func:`op_flops` knows the op type (a formula or zero-cost)."""
    return op_type in _FORMULAS or op_type in ZERO_COST_OPS
