"""tfprof's per-node display test, for the views that walk ShowNodes (op view).

:func:`should_show` applies the ``min_*`` thresholds, ``max_depth`` and the
``show_name_regexes`` / ``hide_name_regexes`` filters to one
:class:`~tfprof_lite.views.node.ShowNode`. The table-backed views (scope, graph,
code) run the same test on arrays (:func:`tfprof_lite.views.passes.show_mask`).
"""

from __future__ import annotations

from tfprof_lite.options.options import Options
from tfprof_lite.options.regex import full_match_any
from tfprof_lite.views.node import ROOT_NAME, ShowNode
from tfprof_lite.views.stats import (
    ACC,
    CPU,
    EXEC,
    FLOPS,
    OUTPUT,
    PARAMS,
    PEAK,
    REQUESTED,
    RESIDUAL,
    RUN,
)

__all__ = ["should_show"]


def should_show(node: ShowNode, opts: Options, depth: int, code_view: bool) -> bool:
    """tfprof's ShouldShow: thresholds on totals (some on self), depth, show/hide names."""
    if node.name == ROOT_NAME:
        return True
    t = node.total
    if (
        t[REQUESTED] < opts.min_bytes
        or t[PEAK] < opts.min_peak_bytes
        or t[RESIDUAL] < opts.min_residual_bytes
        or t[OUTPUT] < opts.min_output_bytes
        or t[EXEC] < opts.min_micros
        or t[ACC] < opts.min_accelerator_micros
        or t[CPU] < opts.min_cpu_micros
        or depth > opts.max_depth
    ):
        return False
    counted = t if code_view else node.self_
    if counted[PARAMS] < opts.min_params or counted[FLOPS] < opts.min_float_ops:
        return False
    if not code_view and node.self_[RUN] < opts.min_occurrence:
        return False
    shows = opts.show_name_regexes
    if not (list(shows) == [".*"] or full_match_any(shows, node.name)):
        return False
    return not full_match_any(opts.hide_name_regexes, node.name)
