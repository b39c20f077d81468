"""The FLOP model: pure Python, no TensorFlow.

* :mod:`~tfprof_lite.model.flops.conventions`: :class:`FlopConventions` (MAC vs
  FLOP, per-element costs), the cost tables, :data:`ZERO_COST_OPS` and the
  ``REASON_*`` / ``STATUS_*`` vocabulary;
* :mod:`~tfprof_lite.model.flops.opinfo`: :class:`OpInfo` (what a formula sees
  of one op) and :class:`FlopError`;
* :mod:`~tfprof_lite.model.flops.formulas`: :func:`op_flops`, the FLOPs of one
  execution of an op (TensorFlow's registered formulas reproduced for the ops it
  covers), and :func:`has_formula`;
* :mod:`~tfprof_lite.model.flops.table`: :class:`FlopRow` / :class:`FlopTable`,
  the per-op results that :mod:`tfprof_lite.capture.flops` computes from graphs
  and RunMetadata and :mod:`tfprof_lite.analysis.flops_report` reports on, and
  their text rendering.

This package exposes the public names of all four.
"""

from __future__ import annotations

from tfprof_lite.model.flops.conventions import (
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
    FlopConventions,
    words,
)
from tfprof_lite.model.flops.formulas import has_formula, op_flops
from tfprof_lite.model.flops.opinfo import Dim, FlopError, Formula, OpInfo, Shape, fmt
from tfprof_lite.model.flops.table import FlopRow, FlopTable, format_flop_table, text_table

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
    "format_flop_table",
    "has_formula",
    "op_flops",
    "text_table",
    "words",
]
