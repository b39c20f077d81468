"""FLOP counting conventions: cost tables, the reason and status vocabulary.

:class:`FlopConventions` states how contractions count (MAC = 2 FLOPs by default,
or 1; optionally exact dot products) and the FLOPs per element of elementwise
ops (:data:`ELEMENT_COSTS`, overridable). :data:`ZERO_COST_OPS` do no
arithmetic by convention. ``REASON_*`` say why a value is missing and
``STATUS_*`` how a row of the corrected table relates to TensorFlow's value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tfprof_lite.errors import InvalidOptionError

__all__ = [
    "ELEMENT_COSTS",
    "EXTRA_ELEMENT_COSTS",
    "FLOPS_MODES",
    "FUSED_COSTS",
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
    "TF_BINARY_COSTS",
    "TF_UNARY_COSTS",
    "ZERO_COST_OPS",
    "FlopConventions",
    "words",
]

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
def words(text: str) -> list[str]:
    """Op type names from a space-separated list."""
    return text.split()


#: TensorFlow's registered unary formulas: cost x |input 0|.
TF_UNARY_COSTS = {
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
TF_BINARY_COSTS = dict.fromkeys(
    words(
        "Add AddV2 Sub Mul RealDiv Maximum Minimum Pow GreaterEqual Greater LessEqual Less "
        "Equal NotEqual"
    ),
    1,
)
TF_BINARY_COSTS.update({"SquaredDifference": 2, "RsqrtGrad": 4})
#: Elementwise ops TensorFlow has no formula for: cost x |output| (textbook count
#: of arithmetic operations per element; transcendental functions count 1).
EXTRA_ELEMENT_COSTS = dict.fromkeys(
    words(
        "Relu Relu6 Elu Selu LeakyRelu Tanh Sigmoid Exp Expm1 Log1p Sqrt Abs Sign Floor Ceil "
        "Round Rint Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh Erf Erfc Softplus "
        "Softsign Inv IsNan IsInf IsFinite LogicalNot Div DivNoNan FloorDiv FloorMod Mod "
        "TruncateDiv TruncateMod Atan2 Xdivy Xlogy Xlog1py LogicalAnd LogicalOr Select "
        "SelectV2 ClipByValue ReluGrad Relu6Grad LeakyReluGrad"
    ),
    1,
)
EXTRA_ELEMENT_COSTS.update(
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
FUSED_COSTS = {"BiasAdd": 1, "Add": 1, "FusedBatchNorm": 2, "GeluExact": 4, "GeluApproximate": 8}

#: Default FLOPs per element of every elementwise op (TF's and ours).
ELEMENT_COSTS: Mapping[str, int] = {**TF_UNARY_COSTS, **TF_BINARY_COSTS, **EXTRA_ELEMENT_COSTS}

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
