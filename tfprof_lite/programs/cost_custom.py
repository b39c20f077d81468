"""Costs of ``custom-call`` instructions: library matmuls and convolutions.

Contract: :func:`custom_call_cost` returns ``(flops, transcendentals, bytes)``
of one custom call.

* cuBLAS GEMMs (``__cublas$gemm``, ``__cublas$lt$matmul...``) are dots: 2 x the
  result's elements x the lhs contracting dimensions named by the
  ``gemm_backend_config.dot_dimension_numbers`` of the backend config (as XLA's
  ``GpuHloCostAnalysis``); cuDNN convolutions (``__cudnn$conv...``) are
  convolutions over the instruction's window, dimension numbers and feature
  groups, with operand 0 as the input, operand 1 as the kernel and the first
  result as the output. Both read their operands and write their first result
  only (the scratch workspace a GEMM or convolution returns beside it is not
  counted, as XLA leaves it out for convolutions).
* oneDNN matmuls on CPU (``__onednn$matmul``) are dots contracting the lhs's
  last dimension (its second last when the config transposes it): an estimate,
  the config does not name dimensions. oneDNN convolutions use the instruction's
  convolution fields when it has them.
* Any other custom call: no flops; its operands' and results' arrays as bytes.
  (XLA's own ``HloCostAnalysis`` marks these unknown with -1.)
"""

from __future__ import annotations

from typing import Any

from tfprof_lite.programs.cost_rules import (
    backend_config,
    conv_flops,
    dot_flops,
    first_array,
    leaf_bytes,
    shape_size,
)
from tfprof_lite.programs.hlo import element_count

__all__ = ["custom_call_cost", "is_gemm", "is_library_conv"]

_CUDNN_CONV = "__cudnn$conv"


def is_gemm(target: str) -> bool:
    """Whether ``target`` is a cuBLAS or hipBLAS matrix multiplication."""
    return target in ("__cublas$gemm", "__cublas$lt$matmul") or target.startswith(
        "__cublas$lt$matmul$"
    )


def is_library_conv(target: str) -> bool:
    """Whether ``target`` is a cuDNN (or MIOpen) convolution custom call."""
    return target.startswith(_CUDNN_CONV)


def _operand_bytes(operands: list[Any]) -> float:
    return sum(shape_size(o.shape) for o in operands)


def _gemm(instruction: Any, operands: list[Any]) -> tuple[float, float, float]:
    config = backend_config(instruction).get("gemm_backend_config", {})
    dnums = config.get("dot_dimension_numbers", {}) if isinstance(config, dict) else {}
    contracting = [int(d) for d in dnums.get("lhs_contracting_dimensions", [])]
    out = first_array(instruction.shape)
    if not contracting and operands:
        rank = len(operands[0].shape.dimensions)
        contracting = [rank - 1] if rank else []
    flops = dot_flops(operands[0].shape, out, contracting) if operands else 0.0
    return flops, 0.0, _operand_bytes(operands) + shape_size(out)


def _has_conv_numbers(dnums: Any) -> bool:
    """Whether ``dnums`` (``ConvolutionDimensionNumbers``) was given: an absent one
    reads as all zeros, which no convolution has (its batch and feature dimensions
    differ)."""
    return bool(
        len(dnums.input_spatial_dimensions)
        or int(dnums.input_batch_dimension) != int(dnums.input_feature_dimension)
    )


def _library_conv(instruction: Any, operands: list[Any]) -> tuple[float, float, float]:
    out = first_array(instruction.shape)
    flops = 0.0
    if len(operands) >= 2 and _has_conv_numbers(instruction.convolution_dimension_numbers):
        flops = conv_flops(instruction, operands[0].shape, operands[1].shape, out)
    return flops, 0.0, _operand_bytes(operands) + shape_size(out)


def _onednn_matmul(instruction: Any, operands: list[Any]) -> tuple[float, float, float]:
    out = first_array(instruction.shape)
    flops = 0.0
    if operands and len(operands[0].shape.dimensions):
        dims = list(operands[0].shape.dimensions)
        config = backend_config(instruction).get("onednn_matmul_config", {})
        transposed = isinstance(config, dict) and bool(config.get("transpose_a"))
        width = int(dims[-2]) if transposed and len(dims) > 1 else int(dims[-1])
        flops = 2.0 * element_count(out) * width
    return flops, 0.0, _operand_bytes(operands) + shape_size(out)


def custom_call_cost(instruction: Any, operands: list[Any]) -> tuple[float, float, float]:
    """``(flops, transcendentals, bytes)`` of one custom call (see the module doc)."""
    target = str(instruction.custom_call_target)
    if is_gemm(target):
        return _gemm(instruction, operands)
    if is_library_conv(target) or target == "__onednn$convolution":
        return _library_conv(instruction, operands)
    if target == "__onednn$matmul":
        return _onednn_matmul(instruction, operands)
    moved = leaf_bytes(instruction.shape) + sum(leaf_bytes(o.shape) for o in operands)
    return 0.0, 0.0, moved
