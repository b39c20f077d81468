"""``tfprof-lite cluster PROFILE... [--json] [--trace FILE] [--by-name] [--steps B]
[--same-clock]``: one picture of every task of a distributed run.

Contract: each PROFILE is a file or directory holding one or more tasks'
profiles (:func:`tfprof_lite.cluster.load_inputs`); they are merged
(:func:`tfprof_lite.cluster.merge`) and :func:`tfprof_lite.analysis.cluster.cluster_report`
is printed: per task and step the wall time split into compute, input, network
and idle, the stragglers, parameter-server load and the clock correction.
``--json`` prints the report as JSON; ``--trace FILE`` also writes the merged
Chrome trace (:mod:`tfprof_lite.outputs.cluster_trace`) and says on stderr where
it went and how to open it. PROFILEs of one task (two runs of one program) are
no cluster: refused (exit 2, pointing to ``tfprof-lite diff``) unless
``--merge`` is given. Errors are one line (exit 1 for bad inputs).
"""

from __future__ import annotations

import json

import click

from tfprof_lite.analysis.cluster import cluster_report
from tfprof_lite.base.shown import shown
from tfprof_lite.base.writing import check_output_path, write_stdout
from tfprof_lite.cli.common import TfprofCommand
from tfprof_lite.cli.inputs import MERGE_HELP, same_task_error
from tfprof_lite.cli.progress import Spinner
from tfprof_lite.errors import SameTaskError
from tfprof_lite.model.cluster_merge import STEP_BASES

__all__ = ["CLUSTER_COMMANDS", "cluster_command"]


@click.command(
    "cluster",
    cls=TfprofCommand,
    takes_query_options=False,
    short_help="Per-task time, stragglers, ps load of a cluster.",
)
@click.argument("profiles", nargs=-1, required=True, metavar="PROFILE...")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--trace", metavar="FILE", help="Also write the merged Chrome trace to FILE.")
@click.option("--by-name", is_flag=True, help="Add same-named nodes of all tasks up.")
@click.option(
    "--steps",
    type=click.Choice(STEP_BASES),
    default="auto",
    show_default=True,
    help="Match steps by recorded global step, by step number, or auto.",
)
@click.option("--same-clock", is_flag=True, help="All tasks ran on one host: no clock fix.")
@click.option("--merge", "allow_same_task", is_flag=True, help=MERGE_HELP)
def cluster_command(
    profiles: tuple[str, ...],
    as_json: bool,
    trace: str | None,
    by_name: bool,
    steps: str,
    same_clock: bool,
    allow_same_task: bool,
) -> None:
    """Merge the profiles of every task (one PROFILE or directory per task, or a
    shared directory) and show where each task's step time went.

    \b
    Examples:
      tfprof-lite cluster w0/ w1/
      tfprof-lite cluster shared_dir --trace cluster.json
    """
    from tfprof_lite.cluster import merge

    if trace:
        check_output_path(trace)  # before the profiles are read
    with Spinner("merging the profiles of every task"):
        try:
            prof = merge(
                profiles,
                by_name=by_name,
                steps=steps,
                same_clock=same_clock,
                allow_same_task=allow_same_task,
            )
        except SameTaskError as err:
            raise same_task_error(err) from err
        cluster = prof.cluster  # type: ignore[attr-defined]
        report = cluster_report(cluster)
    if trace:
        from tfprof_lite.outputs.cluster_trace import write_trace

        with Spinner(f"writing {trace}"):
            write_trace(cluster, trace)
        # stderr: stdout holds the report (JSON with --json)
        click.echo(f"Wrote {shown(trace)} (the merged Chrome trace); {_OPEN_HINT}", err=True)
    if as_json:
        write_stdout(json.dumps(report.to_dict(), indent=1) + "\n")
    else:
        write_stdout(report.to_text())


_OPEN_HINT = (
    "open it in https://ui.perfetto.dev or chrome://tracing, or offline in speedscope "
    "(tfprof-lite help outputs/cluster_trace)"
)

CLUSTER_COMMANDS: dict[str, click.Command] = {"cluster": cluster_command}
