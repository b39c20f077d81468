"""tfprof's text report: Doc section, legend and one line per displayed node.

:func:`render_report` returns the text tfprof writes with ``-output file`` (the
report body); :func:`render_stdout` wraps it in the Options block and banners
that ``-output stdout`` prints. Both are byte-identical to TensorFlow 2.21. The
lines are drawn by :mod:`~tfprof_lite.outputs.text_tree` (scope, graph, code)
and :mod:`~tfprof_lite.outputs.text_op`; the Doc texts come from the metric
table (:mod:`tfprof_lite.base.metrics`).
"""

from __future__ import annotations

from tfprof_lite.base.metrics import select_doc
from tfprof_lite.options.options import Options
from tfprof_lite.outputs.text_op import render_op
from tfprof_lite.outputs.text_tree import render_tree
from tfprof_lite.views.result import ViewResult

__all__ = [
    "BANNER_END",
    "BANNER_OPTIONS",
    "BANNER_REPORT",
    "MISSING_STREAM_WARNING",
    "doc_section",
    "options_block",
    "render_report",
    "render_stdout",
]

MISSING_STREAM_WARNING = (
    "\n\nFound accelerator operation but misses accelerator stream stats!\n\n"
    "It's likely a gpu tracing issue rather than tf-profiler issue.\n"
    "If you found your operation missing accelerator time, consider to post to "
    "discuss@tensorflow.org!\n\n"
)

_VIEW_HELP = {
    "scope": "scope: The nodes in the model graph are organized by their names, which is "
    "hierarchical like filesystem.",
    "code": "code: When python trace is available, the nodes are python lines and their are "
    "organized by the python call stack.",
    "op": "op: The nodes are operation kernel type, such as MatMul, Conv2D. Graph nodes "
    "belonging to the same type are aggregated together.",
}
_VIEW_HELP["graph"] = _VIEW_HELP["scope"]

BANNER_OPTIONS = "\n=========================Options=============================\n"
BANNER_REPORT = "\n==================Model Analysis Report======================\n"
BANNER_END = "\n======================End of Report==========================\n"


def options_block(opts: Options) -> str:
    """The 21-line ``-name value`` block printed before a stdout report."""
    return opts.block_text()


def doc_section(view: str, opts: Options) -> str:
    """``\\nDoc:\\n`` + the view's help + one help entry per selected attribute."""
    helps = [select_doc(s) for s in opts.select]
    return f"\nDoc:\n{_VIEW_HELP[view]}\n" + "\n".join(helps) + "\n\n"


def render_report(result: ViewResult) -> str:
    """The report body (what ``-output file`` writes); empty for an empty result."""
    if result.empty:
        return ""
    prefix = MISSING_STREAM_WARNING if result.model.miss_accelerator_stream else ""
    prefix += doc_section(result.view, result.opts) + "Profile:\n"
    if result.view == "op":
        return prefix + render_op(result)
    return prefix + render_tree(result)


def render_stdout(result: ViewResult) -> str:
    """Everything ``-output stdout`` prints: Options block, banners and the report."""
    return (
        BANNER_OPTIONS
        + options_block(result.opts)
        + BANNER_REPORT
        + render_report(result)
        + BANNER_END
    )
