"""``tfprof-lite op-stats``: per op type and per op, host and device, over the whole window.

Contract: loads the profile like every command (:mod:`tfprof_lite.cli.inputs`:
an XSpace file, run directory or logdir, or TF1 inputs) and prints
:func:`tfprof_lite.analysis.op_stats.op_stats`: its ``to_text()``, or with
``--json`` its ``to_dict()``. ``--top N`` keeps the N ops with the most self
time on each side (host, device); the types and totals count every op. A TF1
profile (no window of events) is aggregated from its steps' records, and the
output says so.
"""

from __future__ import annotations

import json

import click

from tfprof_lite.analysis.op_stats import op_stats
from tfprof_lite.base.writing import write_stdout
from tfprof_lite.cli.common import TfprofCommand
from tfprof_lite.cli.inputs import InputSpec, input_options, load_profiler
from tfprof_lite.cli.progress import Spinner

__all__ = ["OP_STATS_COMMANDS", "op_stats_command"]


@click.command(
    "op-stats",
    cls=TfprofCommand,
    takes_query_options=False,
    short_help="Op count, time and self time per type and op, whole window.",
)
@input_options
@click.option(
    "--top",
    default=None,
    type=click.IntRange(min=1),
    help="Keep the N ops with the most self time per side (default: all).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
def op_stats_command(
    profile: tuple[str, ...],
    graph: str | None,
    run_meta: tuple[str, ...],
    op_log: str | None,
    top: int | None,
    as_json: bool,
) -> None:
    """Op statistics over the whole profile: per op type and per op, on the
    host (TF ops, tf.data iterators, XLA program runs) and on the device (GPU
    kernels and copies by the op that launched them), the occurrences, total
    time, self time (less the ops nested inside) and share of its side's self
    time, and how many occurrences fall outside every step. An XSpace counts
    every event of its window, before, between and after the steps too; a TF1
    profile sums its steps' records.

    \b
    Examples:
      tfprof-lite op-stats LOGDIR --top 20
      tfprof-lite op-stats run/host.xplane.pb --json > op_stats.json
      tfprof-lite op-stats --graph graph.pb --run-meta rm4.pb
    """
    spec = InputSpec.from_params(profile, graph, run_meta, op_log)
    model = load_profiler(spec, -1).model
    with Spinner("counting ops"):
        found = op_stats(model, top)
    if as_json:
        write_stdout(json.dumps(found.to_dict(), indent=1) + "\n")
    else:
        write_stdout(found.to_text())


OP_STATS_COMMANDS: dict[str, click.Command] = {"op-stats": op_stats_command}
