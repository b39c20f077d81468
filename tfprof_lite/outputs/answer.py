"""Answer one view query the way tfprof does: checks, query, output, returned message.

:func:`answer_query` is what ``Profiler.profile_*`` and the one-shot ``profile``
do with a model, a view and options: run the query with tfprof's pre-checks and
the output's own refusals (:func:`run_query`), write it where ``-output`` says
and return the view's message. The graph view with a timeline output and no
step is tfprof's special case: one query and one file per step
(:func:`emit_graph_timelines`) and an empty message.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.options.options import Options
from tfprof_lite.outputs.emit import emit, output_problem
from tfprof_lite.outputs.message import empty_message, view_message
from tfprof_lite.views import View, ViewResult
from tfprof_lite.views.query import run_view

__all__ = ["answer_query", "emit_graph_timelines", "run_query"]


def run_query(model: ProfileModel, view: View, opts: Options) -> ViewResult:
    """Query ``view`` for ``opts``'s output: tfprof's pre-checks, and the output's own
    refusals (e.g. pprof from a view other than code), as TensorFlow gives them."""
    return run_view(model, view, opts, output_problem(view.name, opts))


def emit_graph_timelines(model: ProfileModel, view: View, opts: Options) -> None:
    """Graph view, timeline output, negative step: as tfprof, one query and file per step."""
    for step in model.sorted_steps():
        emit(run_query(model, view, replace(opts, step=step)))


def answer_query(model: ProfileModel, view: View, opts: Options) -> Any:
    """Run, write and return one query: a GraphNodeProto or MultiGraphNodeProto."""
    if view.name == "graph" and opts.step < 0 and opts.output.type == "timeline":
        emit_graph_timelines(model, view, opts)
        return empty_message(view.name)
    result = run_query(model, view, opts)
    emit(result)
    return view_message(result)
