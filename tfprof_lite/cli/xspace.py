"""``tfprof-lite xspace PROFILE... -o LOGDIR``: the profile as an XSpace for XProf.

Contract:

* The profile comes from :mod:`tfprof_lite.cli.inputs` (saved profiles, a
  GraphDef with RunMetadata files for several steps, several PROFILEs merged
  as a cluster, an XSpace).
* Writes ``LOGDIR/plugins/profile/<run>/<host>.xplane.pb`` through
  :meth:`tfprof_lite.profiler.Profiler.write_xspace`: one file, or one per task
  of a cluster profile; each appears only when complete (temporary file and
  rename). ``--run-name`` names the run directory (default: the current time,
  UTC), ``--host-name`` the file of a single-task profile (default
  ``localhost``). (``--run`` and ``--host`` choose what to read from an XSpace
  input, as in every command.)
* A profile without timed steps is an error naming the input (exit 1). One line
  then says what was written and how to open it (``xprof --logdir LOGDIR`` or
  ``tensorboard --logdir LOGDIR``).
"""

from __future__ import annotations

import sys

import click

from tfprof_lite.base.shown import shown
from tfprof_lite.cli.common import TfprofCommand, style
from tfprof_lite.cli.inputs import InputSpec, input_options, load_profiler, source_name
from tfprof_lite.cli.progress import Spinner
from tfprof_lite.errors import InvalidInputError

__all__ = ["XSPACE_COMMANDS", "xspace_command"]


@click.command(
    "xspace",
    cls=TfprofCommand,
    takes_query_options=False,
    short_help="Write the profile as an XSpace for XProf / TensorBoard.",
)
@input_options
@click.option(
    "-o",
    "--output",
    "output",
    required=True,
    metavar="LOGDIR",
    help="The logdir to write plugins/profile/<run>/<host>.xplane.pb under.",
)
@click.option(
    "--run-name",
    "run_name",
    default=None,
    metavar="NAME",
    help="The run directory to write (default: the current time, UTC).",
)
@click.option(
    "--host-name",
    "host_name",
    default=None,
    metavar="NAME",
    help="The file name of a one-task profile (default: localhost).",
)
def xspace_command(
    profile: tuple[str, ...],
    graph: str | None,
    run_meta: tuple[str, ...],
    op_log: str | None,
    output: str,
    run_name: str | None,
    host_name: str | None,
) -> None:
    """Writes the profile as an XSpace (*.xplane.pb) that XProf and TensorBoard's
    Profile tab open: steps, op executions, GPU kernels and copies, allocator
    timeline; one file per task of a cluster profile.

    \b
    Examples:
      tfprof-lite xspace tfprof_out/profile_4 -o xprof_logs
      tfprof-lite xspace --graph g.pb --run-meta rm0.pb --run-meta rm1.pb -o xprof_logs
      xprof --logdir xprof_logs --port 6006
    """
    for part in (run_name, host_name):
        if part is not None and (not part or "/" in part or part in (".", "..")):
            raise click.BadParameter(
                f"{part!r} must be a plain file name", param_hint="--run-name/--host-name"
            )
    spec = InputSpec.from_params(profile, graph, run_meta, op_log)
    spec.check()
    prof = load_profiler(spec)
    if not prof.model.steps:
        raise InvalidInputError(
            f"{source_name(spec)}: no traced steps in this profile (add FULL_TRACE RunMetadata)"
        )
    with Spinner(f"writing {shown(output)}"):
        paths = prof.write_xspace(output, run=run_name, host=host_name)
    where = style(shown(output), sys.stdout, bold=True)
    click.echo(
        f"Wrote {len(paths)} XSpace file{'s' if len(paths) != 1 else ''} under {where} "
        f"({', '.join(shown(p) for p in paths)}); open it with: xprof --logdir "
        f"{shown(output)} (or tensorboard --logdir {shown(output)}, Profile tab)"
    )


XSPACE_COMMANDS: dict[str, click.Command] = {"xspace": xspace_command}
