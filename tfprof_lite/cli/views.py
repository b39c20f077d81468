"""``tfprof-lite scope|graph|op|code [PROFILE] [options]``: one view of a profile.

Contract: the profile comes from :mod:`tfprof_lite.cli.inputs` (a ``profile_<step>``
file, a directory of them, or ``--graph/--run-meta/--op-log``). Options may be
written tfprof-style (``-max_depth 4 -select micros,bytes``) or click-style
(``--max-depth 4``, ``--max_depth=4``); defaults are those of TF's ``profiler``
command line (``-max_depth 10 -select micros``, all regexes ``.*``). With
``-output stdout`` (the default) the report body is printed as tfprof's
``-output file`` writes it (no Options block), highlighted on a terminal; every
other ``-output`` type is written by :func:`tfprof_lite.outputs.emit.emit`. A
``-step`` the profile lacks is an error (exit 1), in the shell too.
``code`` also takes ``--user-code/--all-frames`` (:mod:`tfprof_lite.cli.frames`):
all frames (tfprof's view) by default, user code by default for ``-output
collapsed`` (flame-graph stacks).
"""

from __future__ import annotations

import dataclasses

import click

from tfprof_lite.cli.common import TfprofCommand, query_options, write_report
from tfprof_lite.cli.frames import frame_options, user_code_from
from tfprof_lite.cli.inputs import (
    InputSpec,
    input_options,
    load_profiler,
    require_step,
    source_name,
)
from tfprof_lite.options.options import Options
from tfprof_lite.outputs.answer import emit_graph_timelines, run_query
from tfprof_lite.outputs.emit import emit
from tfprof_lite.outputs.text import render_report
from tfprof_lite.profiler import Profiler
from tfprof_lite.views import make_view

__all__ = ["VIEW_COMMANDS", "VIEW_NAMES", "show_view"]

#: The view commands, in tfprof's order.
VIEW_NAMES: tuple[str, ...] = ("scope", "graph", "op", "code")

_HELP = {
    "scope": "Name-scope view: graph nodes as a tree of their name scopes.",
    "graph": "Graph view: graph nodes as a tree of their inputs.",
    "op": "Op-type view: one row per op type (MatMul, Conv2D...), aggregated.",
    "code": "Python code view: the call stacks that created the ops (needs code traces).",
}

_EXAMPLES = {
    "scope": "tfprof-lite scope tfprof_out/profile_4 -max_depth 4 -select micros,bytes "
    "-order_by micros",
    "graph": "tfprof-lite graph tfprof_out/profile_4 --max-depth 3 --select micros,occurrence",
    "op": "tfprof-lite op tfprof_out/ -select micros,occurrence -order_by micros",
    "code": "tfprof-lite code --graph graph.pbtxt --run-meta rm0.pb,rm1.pb --op-log "
    "op_log.pb -max_depth 6",
}


def show_view(prof: Profiler, view: str, opts: Options, source: str = "profile") -> None:
    """Runs one view query and prints or writes it as ``opts.output`` says.

    Raises:
        InvalidInputError: ``opts.step`` is a step the profile (``source``) lacks.
    """
    require_step(prof.model, opts.step, source)
    shown = make_view(view, prof.model)
    if view == "graph" and opts.step < 0 and opts.output.type == "timeline":
        emit_graph_timelines(prof.model, shown, opts)  # one file per step, as tfprof
        return
    result = run_query(prof.model, shown, opts)
    if opts.output.type == "stdout":
        if not result.empty:
            write_report(render_report(result))
    else:
        emit(result)


def _make(view: str) -> click.Command:
    @click.command(
        name=view,
        cls=TfprofCommand,
        help=f"{_HELP[view]}\n\n\b\nExample:\n  {_EXAMPLES[view]}",
        short_help=_HELP[view].split(":")[0] + ".",
    )
    @input_options
    @click.pass_context
    def command(
        ctx: click.Context,
        profile: tuple[str, ...],
        graph: str | None,
        run_meta: tuple[str, ...],
        op_log: str | None,
    ) -> None:
        opts = query_options(ctx)
        spec = InputSpec.from_params(profile, graph, run_meta, op_log)
        show_view(load_profiler(spec, opts.step), view, opts, source_name(spec))

    return command


@click.command(
    name="code",
    cls=TfprofCommand,
    help=f"{_HELP['code']}\n\n\b\nExamples:\n  {_EXAMPLES['code']}\n"
    "  tfprof-lite code tfprof_out/profile_4 --user-code -order_by micros\n"
    "  tfprof-lite code tfprof_out/profile_4 -output collapsed:outfile=code.folded",
    short_help=_HELP["code"].split(":")[0] + ".",
)
@input_options
@frame_options("--all-frames for text, --user-code for -output collapsed")
@click.pass_context
def code_command(
    ctx: click.Context,
    profile: str | None,
    graph: str | None,
    run_meta: tuple[str, ...],
    op_log: str | None,
    user_code: bool | None,
    user_include: tuple[str, ...],
    user_exclude: tuple[str, ...],
) -> None:
    """The code view; ``--user-code`` folds library frames into the user's own."""
    opts = query_options(ctx)
    flame = opts.output.type == "collapsed"
    rules = user_code_from(user_code, user_include, user_exclude, default=flame)
    opts = dataclasses.replace(opts, user_code=rules)
    spec = InputSpec.from_params(profile, graph, run_meta, op_log)
    show_view(load_profiler(spec, opts.step), "code", opts, source_name(spec))


VIEW_COMMANDS: dict[str, click.Command] = {
    view: code_command if view == "code" else _make(view) for view in VIEW_NAMES
}
