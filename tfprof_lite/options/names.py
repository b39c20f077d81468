"""The names of tfprof's 21 query options, in its canonical order.

A module of its own, with no imports, so that the command line can tell tfprof's
options apart from its own before a command runs without loading the option
parsing and RE2 (:mod:`tfprof_lite.options.coerce` re-exports the tuple).
"""

from __future__ import annotations

__all__ = ["OPTION_NAMES"]

#: Option keys in tfprof's canonical order (``kOptions`` without the leading ``-``);
#: also the keys of ``Options.to_dict`` and the order of the Options block.
OPTION_NAMES: tuple[str, ...] = (
    "max_depth",
    "min_bytes",
    "min_peak_bytes",
    "min_residual_bytes",
    "min_output_bytes",
    "min_micros",
    "min_accelerator_micros",
    "min_cpu_micros",
    "min_params",
    "min_float_ops",
    "min_occurrence",
    "step",
    "order_by",
    "account_type_regexes",
    "start_name_regexes",
    "trim_name_regexes",
    "show_name_regexes",
    "hide_name_regexes",
    "account_displayed_op_only",
    "select",
    "output",
)
