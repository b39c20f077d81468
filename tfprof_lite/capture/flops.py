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
import math
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from tfprof_lite.capture.oplog import is_tf_graph
from tfprof_lite.errors import InvalidOptionError, MissingDependencyError
from tfprof_lite.model.devices import DEVICE_CANONICAL, classify_device
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

Dim = Optional[int]
#: A tensor shape: dims (``None`` = unknown dim) or ``None`` for an unknown rank.
Shape = Optional[tuple[Dim, ...]]

REASON_NO_FORMULA = "no_formula"
REASON_INCOMPLETE_SHAPE = "incomplete_shape"
REASON_DATA_FORMAT = "unsupported_data_format"
REASON_FUNCTION_BODY = "function_body"
REASON_UNKNOWN_COUNT = "unknown_run_count"
REASON_ERROR = "error"

STATUS_TF = "tf"
STATUS_CORRECTED = "corrected"
STATUS_ADDED = "added"
STATUS_FALLBACK = "tf_fallback"
STATUS_ZERO = "zero"
STATUS_MISSING = "missing"

#: Values accepted by ``flops=`` on ``profile``/``Profiler`` (or a FlopConventions).
FLOPS_MODES = ("tf", "corrected")


# --------------------------------------------------------------------- conventions
def _words(text: str) -> list[str]:
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
    _words(
        "Add AddV2 Sub Mul RealDiv Maximum Minimum Pow GreaterEqual Greater LessEqual Less "
        "Equal NotEqual"
    ),
    1,
)
_TF_BINARY.update({"SquaredDifference": 2, "RsqrtGrad": 4})
#: Elementwise ops TensorFlow has no formula for: cost x |output| (textbook count
#: of arithmetic operations per element; transcendental functions count 1).
_EXTRA_ELEMENTWISE = dict.fromkeys(
    _words(
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
    _words(
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
    _words(
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

    TensorFlow's rule: for each record (in proto order) naming a graph op whose
    recorded output count equals the op's, every not fully defined output shape is
    merged with the recorded one (output ``i`` = the ``i``-th recorded output).
    """

    def __init__(self, graph: Any, run_meta: Any) -> None:
        self._graph = graph
        self._shapes: dict[str, Any] = {}
        for dev in run_meta.step_stats.dev_stats:
            for ns in dev.node_stats:
                if ns.output:
                    self._fill(ns)

    def _fill(self, ns: Any) -> None:
        from tensorflow.python.framework import tensor_shape

        try:
            op = self._graph.get_operation_by_name(ns.node_name)
        except (KeyError, ValueError):
            return
        if len(ns.output) != len(op.outputs):
            return
        for i, out in enumerate(ns.output):
            tensor = op.outputs[i]
            current = self._shapes.get(tensor.name, tensor.get_shape())
            if current.is_fully_defined():
                continue
            recorded = tensor_shape.TensorShape([d.size for d in out.tensor_description.shape.dim])
            try:
                self._shapes[tensor.name] = current.merge_with(recorded)
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
