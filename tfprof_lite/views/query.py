"""One query of a view with tfprof's pre-checks, for every caller below the facade.

tfprof refuses a query whose ``-step`` was never added (it prints the available
steps) and a code-view query on a profile without code traces; both give an
empty result. A caller that knows the output can refuse it too (``problem``: the
facade passes the output's complaint, e.g. pprof on a non-code view), which gives
a root-only empty result. Nothing here prints the report: that is the outputs'
job.
"""

from __future__ import annotations

import logging

from tfprof_lite.base.shared import shared
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.options.options import Options
from tfprof_lite.views import View, make_view
from tfprof_lite.views.node import ROOT_NAME, ShowNode
from tfprof_lite.views.result import ViewResult

__all__ = ["run_view"]

log = logging.getLogger("tfprof_lite")


def _step_known(model: ProfileModel, opts: Options) -> bool:
    if opts.step < 0 or opts.step in model.steps:
        return True
    steps = "".join(f"{s} " for s in model.sorted_steps())
    log.warning("Options -step=%d not found.\nAvailable steps: %s", opts.step, steps)
    return False


def run_view(
    model: ProfileModel, view: View | str, opts: Options, problem: str | None = None
) -> ViewResult:
    """Query ``view`` (a view or its command name) on ``model`` with ``opts``.

    Args:
        model: the profile.
        view: a view built on ``model``, or ``scope``/``graph``/``op``/``code``.
        opts: the query's options.
        problem: why the caller's output cannot take this query, if it cannot
            (logged, and the result is the root alone).
    """
    if isinstance(view, str):  # one view (and its cached trees) per sharing block
        name = view
        shown = shared(("view", name), model, lambda: make_view(name, model))
    else:
        shown = view
    ok = _step_known(model, opts)
    if ok and shown.name == "code" and not model.has_trace:
        log.warning("No code trace information")
        ok = False
    if not ok:
        return ViewResult(shown.name, ShowNode(ROOT_NAME, -1), opts, model, empty=True)
    if problem:
        log.warning("%s", problem)
        root = ShowNode(ROOT_NAME, -1)
        return ViewResult(shown.name, root, opts, model, empty=True, root_only=True)
    return shown.query(opts)
