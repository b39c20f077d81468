"""FLOP formulas per op type: pure Python, no TensorFlow.

Contract: :func:`op_flops` ``(info, conventions)`` returns the FLOPs of one
execution of an op described by an :class:`OpInfo` (type, attributes, input and
output shapes), or raises :class:`FlopError` with a ``REASON_*`` when a needed
dim is unknown or the op has no formula; :func:`has_formula` says whether a type
is known. TensorFlow's registered formulas are reproduced for the ops it covers,
and :class:`FlopConventions` states the MAC-vs-FLOP and per-element costs.
:class:`FlopRow`/:class:`FlopTable` hold the per-op results that
:mod:`tfprof_lite.capture.flops` computes from graphs and RunMetadata and
:mod:`tfprof_lite.analysis.flops_report` reports on.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from tfprof_lite.errors import InvalidOptionError

__all__ = [
    "Dim",
    "ELEMENT_COSTS",
    "FLOPS_MODES",
    "FlopConventions",
    "FlopError",
    "FlopRow",
    "FlopTable",
    "Formula",
    "OpInfo",
    "REASON_DATA_FORMAT",
    "REASON_ERROR",
    "REASON_FUNCTION_BODY",
    "REASON_INCOMPLETE_SHAPE",
    "REASON_NO_FORMULA",
    "REASON_UNKNOWN_COUNT",
    "STATUS_ADDED",
    "STATUS_CORRECTED",
    "STATUS_FALLBACK",
    "STATUS_MISSING",
    "STATUS_TF",
    "STATUS_ZERO",
    "Shape",
    "ZERO_COST_OPS",
    "fmt",
    "has_formula",
    "op_flops",
    "words",
]

Dim = Optional[int]
#: A tensor shape: dims (``None`` = unknown dim) or ``None`` for an unknown rank.
Shape = Optional[tuple[Dim, ...]]

REASON_NO_FORMULA = "no_formula"
REASON_INCOMPLETE_SHAPE = "incomplete_shape"
REASON_DATA_FORMAT = "unsupported_data_format"
REASON_FUNCTION_BODY = "function_body"
REASON_UNKNOWN_COUNT = "unknown_run_count"
REASON_ERROR = "error"


# --------------------------------------------------------------------- conventions
def words(text: str) -> list[str]:
    """Op type names from a space-separated list."""
    return text.split()


#: TensorFlow's registered unary formulas: cost x |input 0|.
_TF_UNARY = {
    "Reciprocal": 1,
    "Square": 1,
    "Rsqrt": 2,
    "Log": 1,
    "Neg": 1,
    "AssignSub": 1,
    "AssignAdd": 1,
    "Softmax": 5,
}
#: TensorFlow's registered binary formulas: cost x |output|.
_TF_BINARY = dict.fromkeys(
    words(
        "Add AddV2 Sub Mul RealDiv Maximum Minimum Pow GreaterEqual Greater LessEqual Less "
        "Equal NotEqual"
    ),
    1,
)
_TF_BINARY.update({"SquaredDifference": 2, "RsqrtGrad": 4})
#: Elementwise ops TensorFlow has no formula for: cost x |output| (textbook count
#: of arithmetic operations per element; transcendental functions count 1).
_EXTRA_ELEMENTWISE = dict.fromkeys(
    words(
        "Relu Relu6 Elu Selu LeakyRelu Tanh Sigmoid Exp Expm1 Log1p Sqrt Abs Sign Floor Ceil "
        "Round Rint Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh Erf Erfc Softplus "
        "Softsign Inv IsNan IsInf IsFinite LogicalNot Div DivNoNan FloorDiv FloorMod Mod "
        "TruncateDiv TruncateMod Atan2 Xdivy Xlogy Xlog1py LogicalAnd LogicalOr Select "
        "SelectV2 ClipByValue ReluGrad Relu6Grad LeakyReluGrad"
    ),
    1,
)
_EXTRA_ELEMENTWISE.update(
    {
        "EluGrad": 2,
        "SeluGrad": 2,
        "SoftplusGrad": 2,
        "SqrtGrad": 2,
        "TanhGrad": 3,
        "SigmoidGrad": 3,
        "ReciprocalGrad": 3,
        "SoftsignGrad": 3,
        "AssignAddVariableOp": 1,
        "AssignSubVariableOp": 1,
        "BiasAdd": 1,
        "BiasAddV1": 1,
    }
)
#: Ops fused into ``_Fused*`` kernels (``fused_ops`` attr) that are not elementwise ops.
_FUSED_COSTS = {"BiasAdd": 1, "Add": 1, "FusedBatchNorm": 2, "GeluExact": 4, "GeluApproximate": 8}

#: Default FLOPs per element of every elementwise op (TF's and ours).
ELEMENT_COSTS: Mapping[str, int] = {**_TF_UNARY, **_TF_BINARY, **_EXTRA_ELEMENTWISE}

#: Ops that do no arithmetic by our convention (data movement, constants,
#: variables, control flow plumbing, shape ops, casts): 0 FLOPs, not "missing".
ZERO_COST_OPS = frozenset(
    words(
        "Const HostConst Identity IdentityN NoOp Placeholder PlaceholderWithDefault "
        "PlaceholderV2 VarHandleOp VariableV2 Variable ReadVariableOp AssignVariableOp Assign "
        "VarIsInitializedOp IsVariableInitialized DestroyResourceOp Reshape Shape ShapeN Size Rank "
        "ExpandDims Squeeze Transpose ConjugateTranspose ConcatV2 Concat ConcatOffset Pack Unpack "
        "Split SplitV Slice StridedSlice StridedSliceGrad ResourceStridedSliceAssign Gather "
        "GatherV2 GatherNd ResourceGather Tile Pad PadV2 MirrorPad Fill ZerosLike OnesLike "
        "BroadcastTo BroadcastArgs BroadcastGradientArgs Cast Bitcast StopGradient PreventGradient "
        "Snapshot CheckNumerics CheckNumericsV2 EnsureShape Switch RefSwitch Merge RefMerge Enter "
        "RefEnter Exit RefExit NextIteration RefNextIteration LoopCond ControlTrigger If "
        "StatelessIf While StatelessWhile Case StatelessCase PartitionedCall "
        "StatefulPartitionedCall Range RandomUniform RandomUniformInt RandomStandardNormal "
        "TruncatedNormal StatelessRandomUniformV2 StatelessRandomNormalV2 "
        "StatelessTruncatedNormalV2 StatelessRandomGetKeyCounter Multinomial Assert Print "
        "PrintV2 StringFormat SaveV2 RestoreV2 MergeV2Checkpoints ShardedFilename StringJoin "
        "IteratorGetNext IteratorGetNextSync IteratorV2 Iterator OneShotIterator MakeIterator "
        "AnonymousIteratorV2 AnonymousIteratorV3 DeleteIterator OptionalGetValue "
        "ScalarSummary HistogramSummary MergeSummary TensorSummaryV2 Where Unique ArgMaxV1 "
        "OneHot InvertPermutation DynamicStitch ParallelDynamicStitch DynamicPartition "
        "TensorListReserve TensorListFromTensor TensorListStack TensorListSetItem "
        "TensorListGetItem TensorListLength TensorListElementShape TensorListPushBack "
        "TensorListPopBack ScatterNd TensorScatterUpdate UnsortedSegmentSum"
    )
)


@dataclass(frozen=True)
class FlopConventions:
    """How FLOPs are counted in the corrected table.

    Attributes:
        flops_per_mac: FLOPs per multiply-accumulate in contractions (MatMul,
            BatchMatMul, Einsum, convolutions): 2 (default, TensorFlow's "2mnk") or
            1 (count MACs).
        exact_dot_products: count a length-k dot product as 2k-1 FLOPs (k
            multiplications, k-1 additions: MatMul = m*n*(2k-1)) instead of 2k.
            Needs ``flops_per_mac=2``. Applies to forward contractions only.
        per_element: FLOPs-per-element overrides for elementwise ops (op type ->
            cost), merged over :data:`ELEMENT_COSTS`.
    """

    flops_per_mac: int = 2
    exact_dot_products: bool = False
    per_element: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.flops_per_mac not in (1, 2):
            raise InvalidOptionError(f"flops_per_mac must be 1 or 2, got {self.flops_per_mac}")
        if self.exact_dot_products and self.flops_per_mac != 2:
            raise InvalidOptionError("exact_dot_products needs flops_per_mac=2")
        bad = {k: v for k, v in self.per_element.items() if not isinstance(v, int) or v < 0}
        if bad:
            raise InvalidOptionError(f"per_element costs must be non-negative ints: {bad}")

    def contraction(self, outputs: int, depth: int, exact: bool = True) -> int:
        """FLOPs of ``outputs`` dot products of length ``depth`` (MACs = outputs x depth)."""
        if exact and self.exact_dot_products:
            return outputs * (2 * depth - 1) if depth else 0
        return self.flops_per_mac * outputs * depth

    def element_cost(self, op: str) -> int | None:
        """FLOPs per element of an elementwise op, or None if it is not one."""
        cost = self.per_element.get(op)
        return cost if cost is not None else ELEMENT_COSTS.get(op)

    def describe(self) -> str:
        """One line: the convention in words."""
        if self.exact_dot_products:
            dot = "dot product of length k = 2k-1 FLOPs (MatMul m*n*(2k-1))"
        elif self.flops_per_mac == 2:
            dot = "1 MAC = 2 FLOPs (MatMul 2*m*n*k)"
        else:
            dot = "counting MACs (MatMul m*n*k)"
        extra = f", {len(self.per_element)} per-element override(s)" if self.per_element else ""
        return dot + extra


# --------------------------------------------------------------------- formulas
class FlopError(Exception):
    """A formula could not produce a value (``reason`` is one of ``REASON_*``)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class OpInfo:
    """What a formula sees of one op: type, data input/output shapes, attributes.

    ``attr(name)`` returns the attribute as a Python value (strings decoded), or
    None when the op has no such attribute.
    """

    name: str
    op: str
    inputs: tuple[Shape, ...]
    outputs: tuple[Shape, ...]
    attr: Callable[[str], Any] = field(default=lambda _name: None, repr=False)

    def input(self, index: int) -> tuple[int, ...]:
        """Fully defined shape of data input ``index`` (else FlopError)."""
        return _full(self.inputs[index] if index < len(self.inputs) else None, f"input {index}")

    def output(self, index: int = 0) -> tuple[int, ...]:
        """Fully defined shape of output ``index`` (else FlopError)."""
        return _full(self.outputs[index] if index < len(self.outputs) else None, f"output {index}")

    def dim(self, index: int, axis: int) -> int:
        """One known dim of data input ``index`` (else FlopError)."""
        shape = self.inputs[index] if index < len(self.inputs) else None
        if shape is None or not -len(shape) <= axis < len(shape) or shape[axis] is None:
            raise FlopError(REASON_INCOMPLETE_SHAPE, f"input {index} dim {axis} of {fmt(shape)}")
        return int(shape[axis])  # type: ignore[arg-type]


Formula = Callable[[OpInfo, FlopConventions], int]


def fmt(shape: Shape) -> str:
    """A shape as text: ``[?, 8]``, ``<unknown rank>``."""
    if shape is None:
        return "<unknown rank>"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _full(shape: Shape, what: str) -> tuple[int, ...]:
    if shape is None or any(d is None for d in shape):
        raise FlopError(REASON_INCOMPLETE_SHAPE, f"{what} shape {fmt(shape)}")
    return tuple(int(d) for d in shape)  # type: ignore[arg-type]


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
    if info.op in _TF_UNARY or info.op in ("BiasAdd", "BiasAddV1"):
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
    cost = conv.per_element.get(name, _FUSED_COSTS.get(name))
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


STATUS_TF = "tf"
STATUS_CORRECTED = "corrected"
STATUS_ADDED = "added"
STATUS_FALLBACK = "tf_fallback"
STATUS_ZERO = "zero"
STATUS_MISSING = "missing"

#: Values accepted by ``flops=`` on ``profile``/``Profiler`` (or a FlopConventions).
FLOPS_MODES = ("tf", "corrected")


# --------------------------------------------------------------------- results
@dataclass(frozen=True)
class FlopRow:
    """FLOPs of one op (a graph node or an op inside a function body).

    Attributes:
        name: graph node name, or ``<caller>/<kind>/<node>`` for a function-body op
            (kind ``body``/``cond``/``then``/``else``/``branch<i>``; calls: no kind).
        op: op type.
        flops: our FLOPs per execution (TensorFlow's when ours failed, status
            ``tf_fallback``), or None.
        tf_flops: TensorFlow's registered value on the graph's current static
            shapes (None when it gives none; always None in function bodies).
        count: executions the totals multiply ``flops`` by: the RunMetadata's
            record count; for graph nodes never recorded 1 (tfprof's static rule);
            for body ops without records the body's count; None when unknown.
        runs: record count in the RunMetadata (None: no record / no RunMetadata).
        status: ``tf``, ``corrected``, ``added``, ``tf_fallback``, ``zero``, ``missing``.
        reason: why ``flops`` is ours-missing (``REASON_*``), else None.
        tf_reason: why TensorFlow has no value (``REASON_*``), else None.
        detail: why our value is missing or not counted, in words.
        tf_detail: why TensorFlow has no value, in words (its error message).
        function: the function the op lives in (None for graph nodes).
        caller: the outermost GraphDef node the function body hangs off.
        runtime_names: RunMetadata node names of this op (pseudo nodes in tfprof).
    """

    name: str
    op: str
    flops: int | None
    tf_flops: int | None
    count: int | None
    runs: int | None
    status: str
    reason: str | None = None
    tf_reason: str | None = None
    detail: str = ""
    tf_detail: str = ""
    function: str | None = None
    caller: str | None = None
    runtime_names: tuple[str, ...] = ()

    @property
    def in_function(self) -> bool:
        """True for an op inside a function body."""
        return self.function is not None

    @property
    def total(self) -> int | None:
        """``flops x count`` when both are known."""
        if self.flops is None or self.count is None:
            return None
        return self.flops * self.count

    def to_dict(self) -> dict[str, Any]:
        """The row as JSON-ready data."""
        return {
            "name": self.name,
            "op": self.op,
            "flops": self.flops,
            "tf_flops": self.tf_flops,
            "count": self.count,
            "runs": self.runs,
            "total": self.total,
            "status": self.status,
            "reason": self.reason,
            "tf_reason": self.tf_reason,
            "detail": self.detail,
            "tf_detail": self.tf_detail,
            "function": self.function,
            "caller": self.caller,
            "runtime_names": list(self.runtime_names),
        }


@dataclass(frozen=True)
class FlopTable:
    """The corrected FLOP table of one graph (and optional RunMetadata).

    Attributes:
        rows: graph nodes in graph order, each followed by its function bodies.
        conventions: the counting conventions used.
        with_run_meta: whether a RunMetadata refined shapes and counts.
        notes: what was refined or could not be loaded.
    """

    rows: tuple[FlopRow, ...]
    conventions: FlopConventions
    with_run_meta: bool
    notes: tuple[str, ...] = ()

    def __iter__(self) -> Iterator[FlopRow]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def row(self, name: str) -> FlopRow:
        """The row called ``name`` (KeyError if none)."""
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(name)

    @property
    def total_flops(self) -> int:
        """Sum of ``flops x count`` over rows where both are known."""
        return sum(row.total or 0 for row in self.rows)

    @property
    def tf_total_flops(self) -> int:
        """Sum of TensorFlow's values x count (graph nodes only; what tfprof shows)."""
        return sum((row.tf_flops or 0) * (row.count or 0) for row in self.rows)

    @property
    def unknown_count(self) -> tuple[FlopRow, ...]:
        """Rows with FLOPs but an unknown execution count (not in the totals)."""
        return tuple(r for r in self.rows if r.flops and r.count is None)

    def to_dict(self) -> dict[str, Any]:
        """The table as JSON-ready data."""
        return {
            "conventions": self.conventions.describe(),
            "with_run_meta": self.with_run_meta,
            "total_flops": self.total_flops,
            "tf_total_flops": self.tf_total_flops,
            "notes": list(self.notes),
            "rows": [row.to_dict() for row in self.rows],
        }

    def format_text(self, only_changed: bool = False) -> str:
        """A text table (see :func:`tfprof_lite.analysis.flops_report.format_flop_table`)."""
        from tfprof_lite.analysis.flops_report import format_flop_table

        return format_flop_table(self, only_changed=only_changed)
