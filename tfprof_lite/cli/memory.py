"""``tfprof-lite memory`` and ``tfprof-lite kernels``: memory and GPU kernel analyses.

Contract: both load the profile like every command (:mod:`tfprof_lite.cli.inputs`).
``memory`` prints :func:`tfprof_lite.analysis.memory.memory_profile` (per step and
allocator: the peak, when it happens and what is live then, by op and by name
scope); ``kernels`` prints :func:`tfprof_lite.analysis.kernels.kernel_stats` (GPU
kernels and copies per kernel name and launching op). Text is the report's
``to_text()`` unchanged; ``--json`` prints its ``to_dict()``. ``--step N`` keeps
one traced step and is an error (exit 1) when the profile has no such step. A
profile without the records these need still prints, saying what is missing.

``memory`` of several steps prints, by default, the summary of
:mod:`tfprof_lite.analysis.memory_summary` (per allocator the peak step and the
steps with the same finding as ranges; a bounded number of lines for any number
of steps), then the step with the highest peak in detail. ``--per-step`` (or
``--all-steps``) prints every step in detail, ``--steps RANGE`` (``3-7,9``) the
steps in RANGE.
"""

from __future__ import annotations

import json
from typing import Any

import click

from tfprof_lite.analysis.kernels import kernel_stats
from tfprof_lite.analysis.memory import MemoryReport, memory_profile
from tfprof_lite.analysis.memory_summary import parse_steps, summarize
from tfprof_lite.base.writing import write_stdout
from tfprof_lite.cli.common import TfprofCommand
from tfprof_lite.cli.inputs import (
    InputSpec,
    input_options,
    load_profiler,
    require_step,
    source_name,
)
from tfprof_lite.cli.progress import Spinner
from tfprof_lite.model.profile import ProfileModel

__all__ = ["MEMORY_COMMANDS", "kernels_command", "memory_command"]


def _load(
    profile: tuple[str, ...],
    graph: str | None,
    run_meta: tuple[str, ...],
    op_log: str | None,
    step: int,
) -> ProfileModel:
    spec = InputSpec.from_params(profile, graph, run_meta, op_log)
    model = load_profiler(spec, step).model
    require_step(model, step, source_name(spec))
    return model


def _print(report: Any, as_json: bool, **text_options: bool) -> None:
    if as_json:
        write_stdout(json.dumps(report.to_dict(), indent=1) + "\n")
    else:
        text = report.to_text(**text_options)
        write_stdout(text if text.endswith("\n") else text + "\n")


_STEP = click.option(
    "--step", "-step", default=-1, type=int, help="One traced step (default: every step)."
)
_MEMORY_STEP = click.option(
    "--step",
    "-step",
    default=-1,
    type=int,
    help="One traced step (default: the step with the highest peak).",
)
_TOP = click.option(
    "--top", default=10, show_default=True, type=click.IntRange(min=1), help="Rows to list."
)
_JSON = click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")


@click.command(
    "memory",
    cls=TfprofCommand,
    takes_query_options=False,
    short_help="Peak memory per allocator and what is live at the peak.",
)
@input_options
@_MEMORY_STEP
@_TOP
@click.option(
    "--scope-depth",
    default=None,
    type=click.IntRange(min=1),
    help="Group scopes on their first N levels (default: the op's full scope).",
)
@click.option(
    "--per-step",
    "--all-steps",
    "all_steps",
    is_flag=True,
    help="Print every traced step in detail (default: a summary, then the step "
    "with the highest peak).",
)
@click.option(
    "--steps",
    "steps_range",
    default=None,
    metavar="RANGE",
    help="Print the traced steps in RANGE in detail (3-7,9).",
)
@_JSON
def memory_command(
    profile: tuple[str, ...],
    graph: str | None,
    run_meta: tuple[str, ...],
    op_log: str | None,
    step: int,
    top: int,
    scope_depth: int | None,
    all_steps: bool,
    steps_range: str | None,
    as_json: bool,
) -> None:
    """The memory profile: per step and allocator, the peak bytes, when the
    peak happens, and the ops and name scopes whose tensors are live then, with
    their shapes. Exact from RunMetadata (--run-meta); approximated per device
    from per-op bytes for saved profiles, which keep less.

    \b
    Examples:
      tfprof-lite memory --graph graph.pb --run-meta rm4.pb --top 5
      tfprof-lite memory tfprof_out/profile_4 --step 4 --json > memory.json
      tfprof-lite memory run.xplane.pb --steps 100-120
    """
    ranges = _ranges(steps_range)
    model = _load(profile, graph, run_meta, op_log, step)
    with Spinner("analysing memory"):
        report = memory_profile(model, None if step < 0 else step, top, scope_depth)
    if ranges is not None:
        report = _keep(report, ranges)
    elif step < 0 and not all_steps and not as_json and len(report.steps) > 1:
        write_stdout(_summary_text(report))
        return
    _print(report, as_json)


def _ranges(text: str | None) -> list[tuple[int, int]] | None:
    if text is None:
        return None
    try:
        return parse_steps(text)
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--steps") from None


def _keep(report: MemoryReport, ranges: list[tuple[int, int]]) -> MemoryReport:
    """The steps of ``report`` in ``ranges``."""
    kept = [s for s in report.steps if any(lo <= s.step <= hi for lo, hi in ranges)]
    return MemoryReport(kept, list(report.notes))


def _summary_text(report: MemoryReport) -> str:
    """The summary of every step, then the step with the highest peak in detail."""
    summary = summarize(report)
    peak = summary.peak_step()
    head = (
        f"memory of the {summary.steps} traced steps (--per-step prints every step, "
        "--steps RANGE some, --step N one):"
    )
    lines = [head, *(f"  {line}" for line in summary.lines())]
    if peak is None:
        lines += [f"note: {text}" for text in report.notes]
        return "\n".join(lines) + "\n"
    detail = _keep(report, [(peak, peak)])
    lines.append(f"step {peak} has the highest peak:")
    return "\n".join(lines) + "\n" + detail.to_text()


@click.command(
    "kernels",
    cls=TfprofCommand,
    takes_query_options=False,
    short_help="GPU kernel statistics per kernel, launch config and op.",
)
@input_options
@_STEP
@click.option(
    "--top",
    default=None,
    type=click.IntRange(min=1),
    help="Keep the N rows with the most time (default: all).",
)
@click.option("--full-names", is_flag=True, help="Print kernel names whole (default: shortened).")
@_JSON
def kernels_command(
    profile: tuple[str, ...],
    graph: str | None,
    run_meta: tuple[str, ...],
    op_log: str | None,
    step: int,
    top: int | None,
    full_names: bool,
    as_json: bool,
) -> None:
    """GPU kernel statistics from the stream devices (/stream:N, /stream:all,
    memcpy): per kernel name, launch configuration and launching op, the count
    and the total, average, minimum and maximum time, with registers per thread,
    shared memory, grid, block, theoretical occupancy and tensor-core use where
    the records give them. A CPU-only profile prints why there is nothing.

    \b
    Examples:
      tfprof-lite kernels --graph graph.pb --run-meta rm0.pb,rm1.pb --top 20
      tfprof-lite kernels tfprof_out/profile_4 --json
    """
    model = _load(profile, graph, run_meta, op_log, step)
    with Spinner("collecting kernels"):
        report = kernel_stats(model, None if step < 0 else step, top)
    _print(report, as_json, full_names=full_names)


MEMORY_COMMANDS: dict[str, click.Command] = {
    "memory": memory_command,
    "kernels": kernels_command,
}
