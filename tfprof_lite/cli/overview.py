"""``tfprof-lite overview [PROFILE] [--top N] [--json]``: the one-page summary.

Contract: loads the profile like every command (:mod:`tfprof_lite.cli.inputs`) and
prints :func:`tfprof_lite.analysis.overview.overview` of it: steps and average step
time, host and device idle shares, the top op types by self time with their
achieved FLOP/s, the hosts and devices, the input verdict and a recommendation.
Text is :meth:`~tfprof_lite.analysis.overview.Overview.to_text` unchanged;
``--json`` prints :meth:`~tfprof_lite.analysis.overview.Overview.to_dict` (the
step-time and input-pipeline reports included) as one JSON document. A profile
without traced steps still prints, with a recommendation saying so.
"""

from __future__ import annotations

import click

from tfprof_lite.analysis.overview import overview
from tfprof_lite.base.writing import write_stdout
from tfprof_lite.cli.common import TfprofCommand
from tfprof_lite.cli.inputs import InputSpec, input_options, load_profiler
from tfprof_lite.cli.progress import Spinner

__all__ = ["OVERVIEW_COMMANDS", "overview_command"]


@click.command(
    "overview",
    cls=TfprofCommand,
    takes_query_options=False,
    short_help="Step time, idle time, top ops, environment, advice.",
)
@input_options
@click.option(
    "--top",
    default=10,
    show_default=True,
    type=click.IntRange(min=1),
    help="How many op types to list.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the overview as JSON.")
def overview_command(
    profile: tuple[str, ...],
    graph: str | None,
    run_meta: tuple[str, ...],
    op_log: str | None,
    top: int,
    as_json: bool,
) -> None:
    """The overview of a profile: average step time, host and device idle time,
    the top op types by self time with achieved FLOP/s, the run environment and
    a recommendation.

    \b
    Examples:
      tfprof-lite overview tfprof_out/profile_4
      tfprof-lite overview tfprof_out --top 5 --json > overview.json
      tfprof-lite overview worker0/ worker1/   (one directory per task: merged)
    """
    spec = InputSpec.from_params(profile, graph, run_meta, op_log)
    prof = load_profiler(spec)
    with Spinner("analysing the profile"):
        page = overview(prof.model, top, getattr(prof, "cluster", None))
    if as_json:
        import json

        write_stdout(json.dumps(page.to_dict(), indent=1) + "\n")
    else:
        write_stdout(page.to_text())


OVERVIEW_COMMANDS: dict[str, click.Command] = {"overview": overview_command}
