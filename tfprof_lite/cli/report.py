"""``tfprof-lite report [PROFILE] -o report.html``: a self-contained HTML report.

Contract: loads the profile like every command (:mod:`tfprof_lite.cli.inputs`),
renders it with :func:`tfprof_lite.report.render_html` and writes the file
atomically (``-o -`` writes to stdout), then prints one line saying where it went.
tfprof query options filter the tables and pick the step (``-step 3``,
``-hide_name_regexes '.*/Initializer.*'``); depth, ``-select``, ``-order_by`` and
``-output`` are set by the report itself. The code view (flame graph and table)
folds library frames into the user's own unless ``--all-frames`` is given
(:mod:`tfprof_lite.cli.frames`).
"""

from __future__ import annotations

import dataclasses
import os
import sys

import click

from tfprof_lite.base.shown import shown
from tfprof_lite.base.writing import check_output_path, write_atomic
from tfprof_lite.cli.common import TfprofCommand, query_options, style
from tfprof_lite.cli.frames import frame_options, user_code_from
from tfprof_lite.cli.inputs import InputSpec, input_options, load_profiler, require_step
from tfprof_lite.cli.progress import Spinner
from tfprof_lite.options.builder import ProfileOptionBuilder
from tfprof_lite.options.options import Options
from tfprof_lite.report import render_html

__all__ = ["REPORT_COMMANDS"]


@click.command("report", cls=TfprofCommand, short_help="Self-contained HTML report.")
@input_options
@click.option(
    "-o",
    "--output",
    "output",
    default="report.html",
    show_default=True,
    metavar="FILE",
    help="Where to write the HTML ('-' for stdout).",
)
@click.option("--title", default=None, help="Page title (default: the profile's file name).")
@click.option(
    "--max-rows",
    default=2000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Most rows per table (the slowest are kept).",
)
@frame_options("--user-code")
@click.pass_context
def report_command(
    ctx: click.Context,
    profile: tuple[str, ...],
    graph: str | None,
    run_meta: tuple[str, ...],
    op_log: str | None,
    output: str,
    title: str | None,
    max_rows: int,
    user_code: bool | None,
    user_include: tuple[str, ...],
    user_exclude: tuple[str, ...],
) -> None:
    """Writes one offline HTML file: overview, time per step (wall vs summed op
    time, input/compute/idle), a zoomable trace viewer of every step, flame
    graph, sortable op table and scope/code trees, GPU kernels, memory, advisor
    findings and a glossary.

    \b
    Example:
      tfprof-lite report tfprof_out/profile_4 -o report.html
      tfprof-lite report tfprof_out -o step2.html -step 2 --title "step 2"
    """
    opts = query_options(ctx, Options.from_dict(ProfileOptionBuilder().build()))
    rules = user_code_from(user_code, user_include, user_exclude, default=True)
    opts = dataclasses.replace(opts, user_code=rules)
    check_output_path(output)  # before the profile is loaded
    spec = InputSpec.from_params(profile, graph, run_meta, op_log)
    prof = load_profiler(spec, opts.step)
    source = shown(spec.profile or graph or "run metadata")  # for display only
    require_step(prof.model, opts.step, source)
    name = shown(title or f"tfprof-lite report: {os.path.basename(os.path.normpath(source))}")
    with Spinner("rendering the report"):
        page = render_html(
            prof.model,
            opts,
            title=name,
            source=source,
            max_rows=max_rows,
            all_frames=not rules,
            cluster=getattr(prof, "cluster", None),
        )
    if output == "-":
        sys.stdout.write(page)
        sys.stdout.flush()
        return
    write_atomic(output, page)
    size = f"{len(page.encode('utf-8')) / 1024:.1f} KB"
    click.echo(f"Wrote {style(shown(output), sys.stdout, bold=True)} ({size})")


REPORT_COMMANDS: dict[str, click.Command] = {"report": report_command}
