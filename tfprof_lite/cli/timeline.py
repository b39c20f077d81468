"""``tfprof-lite timeline [PROFILE] -o trace.json[.gz]``: a Chrome trace of the steps.

Contract:

* The profile comes from :mod:`tfprof_lite.cli.inputs`. Every traced step goes
  into one trace (:func:`tfprof_lite.outputs.steps_trace.write_steps_trace`: a
  ``Steps`` process with one slice per step, one process per device, steps laid
  end to end), or only step N with ``--step N`` (``-step N``; for a directory it
  also picks ``profile_N``). A step the profile lacks, or a profile without traced
  steps, is an error naming the input (exit 1).
* ``--show-memory`` / ``--show-dataflow`` need what only a RunMetadata holds
  (tensor allocations and the producer of each input), so they take
  ``--run-meta`` input and draw one step with
  :class:`tfprof_lite.outputs.chrome_trace.Timeline` (TensorFlow's client
  timeline: tensor lifetimes and allocator counters, flow arrows). The step is
  ``--step N`` (run-metadata file N), or the only file given. With a saved
  profile they are a usage error (exit 2).
* The file is gzip-compressed when its name ends in ``.gz`` and appears only
  when complete (written through a temporary file and a rename). One line then
  says where it went and how to open it.
"""

from __future__ import annotations

import gzip
import sys

import click

from tfprof_lite.base.shown import shown
from tfprof_lite.base.writing import check_output_path, write_atomic
from tfprof_lite.cli.common import TfprofCommand, style
from tfprof_lite.cli.inputs import (
    InputSpec,
    input_options,
    load_profiler,
    parse_file,
    require_step,
    source_name,
)
from tfprof_lite.cli.progress import Spinner
from tfprof_lite.errors import InvalidInputError, UsageError
from tfprof_lite.outputs.steps_trace import write_steps_trace
from tfprof_lite.proto import messages as pb

__all__ = ["TIMELINE_COMMANDS", "step_stats_trace", "timeline_command"]

_OPEN_HINT = "open it in https://ui.perfetto.dev or chrome://tracing"


def _write_steps(spec: InputSpec, output: str, step: int) -> str:
    """Writes the multi-step trace; returns what the summary line says about it."""
    prof = load_profiler(spec, step)
    model = prof.model
    source = source_name(spec)
    cluster = getattr(prof, "cluster", None)
    if cluster is not None:  # several tasks: one process per task on one clock
        from tfprof_lite.outputs.cluster_trace import write_trace

        with Spinner(f"writing {output}"):
            events = write_trace(cluster, output)
        fix = cluster.clock.largest
        return f"{events} events, {len(cluster.tasks)} tasks, largest clock correction {fix}us"
    if not model.steps:
        raise InvalidInputError(
            f"{source}: no traced steps in this profile (add FULL_TRACE RunMetadata)"
        )
    require_step(model, step, source)
    steps = [step] if step >= 0 else model.sorted_steps()
    with Spinner(f"writing {output}"):
        events = write_steps_trace(model, output, steps)
    label = f"step {steps[0]}" if len(steps) == 1 else f"{len(steps)} steps"
    return f"{events} events, {label}"


def _pick_run_meta(spec: InputSpec, step: int) -> tuple[str, int]:
    """The run-metadata file drawn with --show-memory/--show-dataflow, and its step."""
    if spec.profile or not spec.run_meta:
        raise UsageError(
            "--show-memory/--show-dataflow need the step's RunMetadata "
            "(--run-meta RM): a saved profile keeps no tensor or dataflow records"
        )
    if step < 0 and len(spec.run_meta) > 1:
        raise UsageError("--show-memory/--show-dataflow draw one step; pick it with --step N")
    step = max(step, 0)
    if step >= len(spec.run_meta):
        raise InvalidInputError(
            f"{spec.run_meta[0]}: no step {step} (--run-meta gave steps 0-{len(spec.run_meta) - 1})"
        )
    return spec.run_meta[step], step


def step_stats_trace(run_meta_path: str, show_memory: bool, show_dataflow: bool) -> str:
    """TensorFlow's client-timeline trace of one RunMetadata file, as JSON text.

    Raises:
        InvalidInputError: the file is not a RunMetadata with step stats.
    """
    from tfprof_lite.outputs.chrome_trace import Timeline

    meta = parse_file(pb.RunMetadata, run_meta_path)
    timeline = Timeline(meta.step_stats)
    return timeline.generate_chrome_trace_format(
        show_dataflow=show_dataflow, show_memory=show_memory
    )


def _write_one_step(
    spec: InputSpec, output: str, step: int, show_memory: bool, show_dataflow: bool
) -> str:
    path, step = _pick_run_meta(spec, step)
    with Spinner(f"writing {output}"):
        text = step_stats_trace(path, show_memory, show_dataflow)
        data = text.encode("utf-8")
        write_atomic(output, gzip.compress(data, mtime=0) if output.endswith(".gz") else data)
    extras = [name for name, on in (("memory", show_memory), ("dataflow", show_dataflow)) if on]
    return f"step {step}, with {' and '.join(extras)}"


@click.command(
    "timeline",
    cls=TfprofCommand,
    takes_query_options=False,
    short_help="Chrome trace of the profile's steps.",
)
@input_options
@click.option(
    "-o",
    "--output",
    "output",
    default="timeline.json",
    show_default=True,
    metavar="FILE",
    help="Where to write the trace; a name ending in .gz is gzip-compressed.",
)
@click.option(
    "--step",
    default=-1,
    type=int,
    metavar="N",
    help="Only step N (default: every traced step).",
)
@click.option(
    "--show-memory",
    is_flag=True,
    help="Tensor lifetimes and allocator counters (one step, needs --run-meta).",
)
@click.option(
    "--show-dataflow",
    is_flag=True,
    help="Arrows from producers to consumers (one step, needs --run-meta).",
)
def timeline_command(
    profile: tuple[str, ...],
    graph: str | None,
    run_meta: tuple[str, ...],
    op_log: str | None,
    output: str,
    step: int,
    show_memory: bool,
    show_dataflow: bool,
) -> None:
    """Writes the profile's steps as one Chrome trace (Perfetto, chrome://tracing):
    a slice per step, a process per device, one event per op execution.

    \b
    Examples:
      tfprof-lite timeline tfprof_out/profile_4 -o steps.json.gz
      tfprof-lite timeline tfprof_out --step 3 -o step3.json
      tfprof-lite timeline --run-meta rm0.pb --show-memory --show-dataflow -o rm0.json
    """
    check_output_path(output)  # before the profile is loaded
    spec = InputSpec.from_params(profile, graph, run_meta, op_log)
    spec.check()
    if show_memory or show_dataflow:
        what = _write_one_step(spec, output, step, show_memory, show_dataflow)
    else:
        what = _write_steps(spec, output, step)
    click.echo(f"Wrote {style(shown(output), sys.stdout, bold=True)} ({what}); {_OPEN_HINT}")


TIMELINE_COMMANDS: dict[str, click.Command] = {"timeline": timeline_command}
