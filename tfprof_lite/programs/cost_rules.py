"""Per-opcode cost rules of the HLO cost model that need no called computation.

Contract (the conventions of XLA's ``HloCostAnalysis``, see
``docs/programs/cost_model.md``):

* :func:`shape_size` is the bytes XLA's CPU and GPU backends charge for a shape:
  an array's elements times its element size (packed when the layout gives an
  ``element_size_in_bits``, else at least one byte each), a tuple's own table of
  pointers (8 bytes an element, not its elements), an opaque value one pointer,
  a token nothing. :func:`leaf_bytes` sums a shape's arrays instead.
* :func:`default_bytes` is an instruction's bytes before any rule: its output
  and every operand, each by :func:`shape_size`.
* :func:`dot_flops` is 2 x output elements x the product of the lhs contracting
  dimensions; :func:`conv_flops` 2 x (input features / feature groups) x output
  features x (batch / batch groups) x the valid (input, kernel) position pairs
  of each spatial dimension (padding, strides and dilations skip positions).
* :data:`TRANSCENDENTAL` and :data:`ELEMENTWISE` are the opcodes costed one
  transcendental, respectively one flop, per output element.
* :data:`LOCAL_RULES` maps the remaining opcodes whose cost depends only on the
  instruction and its operands' shapes to ``rule(instruction, operands)``
  returning ``(flops, transcendentals, bytes)``.
"""

from __future__ import annotations

import json
from math import prod
from typing import Any, Callable

from tfprof_lite.programs.hlo import ELEMENT_BITS, element_count

__all__ = [
    "ELEMENTWISE",
    "LOCAL_RULES",
    "NO_BYTES",
    "TRANSCENDENTAL",
    "backend_config",
    "conv_flops",
    "default_bytes",
    "dot_flops",
    "first_array",
    "leaf_bytes",
    "shape_size",
    "transpose_is_bitcast",
]

#: (flops, transcendentals, bytes accessed) of one instruction.
Triple = tuple[float, float, float]
Rule = Callable[[Any, list[Any]], Triple]

_TUPLE, _OPAQUE, _TOKEN = 13, 14, 17
#: Bytes of one pointer (a tuple's table entry, an opaque value) on CPU and GPU.
POINTER_BYTES = 8

#: Elementwise opcodes XLA counts as transcendentals (one per output element).
TRANSCENDENTAL = frozenset(
    {
        "erf", "exponential", "log", "logistic", "power", "sqrt", "cbrt", "rsqrt",
        "tanh", "sine", "cosine", "exponential-minus-one", "log-plus-one", "atan2",
        "tan",
    }
)  # fmt: skip

#: Elementwise opcodes XLA counts as one flop per output element.
ELEMENTWISE = frozenset(
    {
        "abs", "add", "and", "bitcast-convert", "ceil", "clamp", "clz", "compare",
        "complex", "convert", "divide", "floor", "imag", "is-finite", "maximum",
        "minimum", "multiply", "negate", "not", "or", "popcnt", "real",
        "reduce-precision", "remainder", "round-nearest-afz", "round-nearest-even",
        "select", "shift-left", "shift-right-arithmetic", "shift-right-logical",
        "sign", "stochastic-convert", "subtract", "xor",
    }
)  # fmt: skip

#: Opcodes that touch no memory and cost nothing (XLA forwards or elides them).
NO_BYTES = frozenset(
    {"parameter", "constant", "get-tuple-element", "bitcast", "domain", "after-all",
     "add-dependency"}
)  # fmt: skip


def shape_size(shape: Any) -> float:
    """Bytes XLA charges for ``shape`` (see the module docstring)."""
    kind = int(shape.element_type)
    if kind == _TUPLE:
        return float(POINTER_BYTES * len(shape.tuple_shapes))
    if kind == _OPAQUE:
        return float(POINTER_BYTES)
    bits = ELEMENT_BITS.get(kind)
    if bits is None:
        return 0.0
    count = prod(shape.dimensions)
    packed = shape.layout.element_size_in_bits
    if packed > 0:
        return float(-(-count * packed // 8))
    return float(count * max(1, -(-bits // 8)))


def leaf_bytes(shape: Any) -> float:
    """Bytes of every array inside ``shape`` (a tuple's elements, recursively)."""
    if int(shape.element_type) == _TUPLE:
        return sum(leaf_bytes(s) for s in shape.tuple_shapes)
    return 0.0 if int(shape.element_type) == _OPAQUE else shape_size(shape)


def first_array(shape: Any) -> Any:
    """``shape`` itself, or for a tuple its first element (XLA's result of many ops)."""
    if int(shape.element_type) == _TUPLE and len(shape.tuple_shapes):
        return shape.tuple_shapes[0]
    return shape


def default_bytes(instruction: Any, operands: list[Any]) -> float:
    """Output plus operand bytes: XLA's bytes accessed before any opcode rule."""
    return shape_size(instruction.shape) + sum(shape_size(o.shape) for o in operands)


def backend_config(instruction: Any) -> dict[str, Any]:
    """The instruction's backend config as a dict (empty when it is not JSON)."""
    raw = bytes(instruction.backend_config)
    if not raw.strip().startswith(b"{"):
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def dot_flops(lhs_shape: Any, out_shape: Any, lhs_contracting: Any) -> float:
    """2 x output elements x the product of the lhs contracting dimensions."""
    width = 1
    for dim in lhs_contracting:
        width *= int(lhs_shape.dimensions[int(dim)])
    return 2.0 * element_count(out_shape) * width


def _valid_positions(in_size: int, kernel: int, out_size: int, dim: Any) -> int:
    """(output, kernel) index pairs of one spatial dimension that read an input."""
    stride = int(dim.stride) or 1
    base = int(dim.base_dilation) or 1
    dilation = int(dim.window_dilation) or 1
    low = int(dim.padding_low)
    count = 0
    for k in range(kernel):
        if stride == 1 and base == 1:
            offset = low - k * dilation
            count += max(min(in_size + offset, out_size) - max(offset, 0), 0)
            continue
        for o in range(out_size):
            position = o * stride - low + k * dilation
            if position % base == 0 and 0 <= position // base < in_size:
                count += 1
    return count


def conv_flops(instruction: Any, lhs: Any, rhs: Any, out: Any) -> float:
    """Convolution FLOPs over the given operand and result shapes (see module doc)."""
    dnums = instruction.convolution_dimension_numbers
    in_features = int(lhs.dimensions[int(dnums.input_feature_dimension)])
    out_features = int(out.dimensions[int(dnums.output_feature_dimension)])
    batch = int(lhs.dimensions[int(dnums.input_batch_dimension)])
    positions = 1
    for i, dim in enumerate(instruction.window.dimensions):
        positions *= _valid_positions(
            int(lhs.dimensions[int(dnums.input_spatial_dimensions[i])]),
            int(rhs.dimensions[int(dnums.kernel_spatial_dimensions[i])]),
            int(out.dimensions[int(dnums.output_spatial_dimensions[i])]),
            dim,
        )
    groups = int(instruction.feature_group_count) or 1
    batch_groups = int(instruction.batch_group_count) or 1
    return 2.0 * (in_features // groups) * out_features * (batch // batch_groups) * positions


def transpose_is_bitcast(instruction: Any, operand: Any) -> bool:
    """Whether a transpose only relabels dimensions (its layouts make it a bitcast)."""
    out_order = list(instruction.shape.layout.minor_to_major)
    in_order = list(operand.shape.layout.minor_to_major)
    dims = [int(d) for d in instruction.dimensions]
    if not out_order or len(out_order) != len(in_order) or len(dims) != len(out_order):
        return False
    return [dims[int(i)] for i in out_order] == [int(i) for i in in_order]


def _elements_of(shape: Any) -> int:
    return element_count(first_array(shape))


def _dot(instruction: Any, operands: list[Any]) -> Triple:
    dnums = instruction.dot_dimension_numbers
    flops = dot_flops(operands[0].shape, instruction.shape, dnums.lhs_contracting_dimensions)
    return flops, 0.0, default_bytes(instruction, operands)


def _convolution(instruction: Any, operands: list[Any]) -> Triple:
    flops = conv_flops(instruction, operands[0].shape, operands[1].shape, instruction.shape)
    return flops, 0.0, default_bytes(instruction, operands)


def _slice(instruction: Any, operands: list[Any]) -> Triple:
    return 0.0, 0.0, 2 * shape_size(instruction.shape)


def _dynamic_slice(instruction: Any, operands: list[Any]) -> Triple:
    index = shape_size(operands[1].shape) if len(operands) > 1 else 0.0
    return 0.0, 0.0, 2 * shape_size(instruction.shape) + index


def _dynamic_update_slice(instruction: Any, operands: list[Any]) -> Triple:
    index = shape_size(operands[2].shape) if len(operands) > 2 else 0.0
    return 0.0, 0.0, 2 * shape_size(operands[1].shape) + index


def _tuple(instruction: Any, operands: list[Any]) -> Triple:
    return 0.0, 0.0, shape_size(instruction.shape)


def _gather(instruction: Any, operands: list[Any]) -> Triple:
    index = shape_size(operands[1].shape) if len(operands) > 1 else 0.0
    return 0.0, 0.0, 2 * shape_size(instruction.shape) + index


def _transpose(instruction: Any, operands: list[Any]) -> Triple:
    if operands and transpose_is_bitcast(instruction, operands[0]):
        return 0.0, 0.0, 0.0
    return 0.0, 0.0, default_bytes(instruction, operands)


def _sort(instruction: Any, operands: list[Any]) -> Triple:
    n = element_count(operands[0].shape) if operands else 0
    flops = float(n * (n - 1).bit_length()) if n else 0.0
    return flops, 0.0, default_bytes(instruction, operands)


def _fft(instruction: Any, operands: list[Any]) -> Triple:
    factors = 1
    for length in instruction.fft_length:
        factors *= max(int(length), 1).bit_length() - 1
    flops = 2.0 * 4 * factors * _elements_of(operands[0].shape)
    return flops, 0.0, default_bytes(instruction, operands)


def _all_reduce(instruction: Any, operands: list[Any]) -> Triple:
    out = leaf_bytes(instruction.shape)
    flops = float(element_count(instruction.shape))
    return flops, 0.0, out + sum(shape_size(o.shape) for o in operands)


def _rng(instruction: Any, operands: list[Any]) -> Triple:
    return 0.0, float(element_count(instruction.shape)), default_bytes(instruction, operands)


def _triangular_solve(instruction: Any, operands: list[Any]) -> Triple:
    a, b = operands[0].shape, operands[1].shape
    flops = 2.0 * int(a.dimensions[-1]) * element_count(b)
    read = shape_size(a) / 2 + shape_size(b)
    return flops, 0.0, shape_size(instruction.shape) + read


def _cholesky(instruction: Any, operands: list[Any]) -> Triple:
    a = operands[0].shape
    flops = float(int(a.dimensions[-1]) * element_count(a) // 3)
    return flops, 0.0, shape_size(a)


def _infeed(instruction: Any, operands: list[Any]) -> Triple:
    return 0.0, 0.0, leaf_bytes(instruction.shape)


def _outfeed(instruction: Any, operands: list[Any]) -> Triple:
    return 0.0, 0.0, sum(leaf_bytes(o.shape) for o in operands)


LOCAL_RULES: dict[str, Rule] = {
    "dot": _dot,
    "convolution": _convolution,
    "slice": _slice,
    "dynamic-slice": _dynamic_slice,
    "dynamic-update-slice": _dynamic_update_slice,
    "tuple": _tuple,
    "gather": _gather,
    "transpose": _transpose,
    "sort": _sort,
    "fft": _fft,
    "all-reduce": _all_reduce,
    "all-reduce-start": _all_reduce,
    "rng": _rng,
    "rng-bit-generator": _rng,
    "triangular-solve": _triangular_solve,
    "cholesky": _cholesky,
    "infeed": _infeed,
    "outfeed": _outfeed,
}
