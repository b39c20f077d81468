"""Send a finished query where its ``-output`` option says.

The OUTPUTS registry maps an output type to the function that renders and
writes a :class:`~tfprof_lite.views.result.ViewResult`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from tfprof_lite.base.writing import write_atomic, write_stdout
from tfprof_lite.options.options import Options
from tfprof_lite.outputs import collapsed, table
from tfprof_lite.outputs.text import render_report, render_stdout
from tfprof_lite.views.result import ViewResult

__all__ = ["OUTPUTS", "emit", "output_problem"]

log = logging.getLogger("tfprof_lite")


def _stdout(result: ViewResult) -> None:
    write_stdout(render_stdout(result))


def _file(result: ViewResult) -> None:
    outfile = result.opts.output.outfile
    if result.empty or outfile is None:
        return
    write_atomic(outfile, render_report(result))


def _none(result: ViewResult) -> None:
    return None


def _pprof(result: ViewResult) -> None:
    outfile = result.opts.output.outfile
    if result.empty or outfile is None:
        return
    from tfprof_lite.outputs import pprof, pprof_extended

    if pprof_extended.is_extended(result):
        write_atomic(outfile, pprof_extended.render_extended(result))
    else:
        write_atomic(outfile, pprof.render(result))
    write_stdout(f"\nRun pprof -png --nodecount=100 --sample_index=1 <{outfile}>\n")


def _writer(render: Callable[[ViewResult], str]) -> Callable[[ViewResult], None]:
    """An output that renders the result and writes it atomically to ``outfile``."""

    def write(result: ViewResult) -> None:
        outfile = result.opts.output.outfile
        if result.empty or outfile is None:
            return
        write_atomic(outfile, render(result))

    return write


def _timeline(result: ViewResult) -> None:
    if result.empty or result.opts.output.outfile is None:
        return
    if result.view == "graph" and result.opts.step < 0:
        # Profiler runs one graph query per step (profiler.emit_graph_timelines).
        log.warning("Must specify -step option to generate timeline in graph view.")
        return
    from tfprof_lite.outputs import timeline

    rendered = timeline.render(result)
    if rendered.notes:
        write_stdout(rendered.notes)
    write_atomic(rendered.path, rendered.data)
    write_stdout(timeline.written_message(rendered.path))


def _unsupported(result: ViewResult) -> None:
    log.warning(
        "-output %s is not supported by this tfprof_lite release; use stdout, file or none",
        result.opts.output.type,
    )


OUTPUTS: dict[str, Callable[[ViewResult], None]] = {
    "stdout": _stdout,
    "file": _file,
    "none": _none,
    "timeline": _timeline,
    "pprof": _pprof,
    "json": _writer(table.render_json),
    "csv": _writer(table.render_csv),
    "collapsed": _writer(collapsed.render),
}


def output_problem(view: str, opts: Options) -> str | None:
    """tfprof's complaint when ``opts``'s output cannot take a query of ``view``, or None."""
    if opts.output.type == "timeline" and view == "op":
        return "op view doesn't support timeline yet. Consider graph/scope/code view."
    if opts.output.type != "pprof" or dict(opts.output.options).get("extended"):
        return None
    if view != "code":
        return "Only 'code' view supports pprof output now."
    from tfprof_lite.outputs.pprof import check_pprof_select

    return check_pprof_select(opts.select)


def emit(result: ViewResult) -> None:
    """Render and write ``result`` according to its options' output type."""
    OUTPUTS[result.opts.output.type](result)
