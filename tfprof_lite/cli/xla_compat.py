"""``tfprof-lite xla-compat``: which ops of a profiled graph XLA cannot JIT-compile.

Contract:

* ``tfprof-lite xla-compat PROFILE`` reads the XLA compatibility a capture stored
  in the profile (:func:`tfprof_lite.capture.xla_compat.annotate`; no TensorFlow
  needed) and prints :meth:`~tfprof_lite.analysis.xla_compat.XlaCompatReport.to_text`
  (``--json``: the report's ``to_dict()``). A profile without that data is an
  error (exit 1) saying how to record it.
* ``tfprof-lite xla-compat --graph GRAPHDEF`` checks a GraphDef file live against
  TensorFlow's kernel registry (needs TensorFlow; exit 1 with one line when it is
  missing).
* ``--target`` (``XLA_CPU_JIT``, ``XLA_GPU_JIT``; default: the profile's first
  target, or ``XLA_CPU_JIT`` for ``--graph``), ``--scope-depth``, ``--max-ops``.
  Exit code 0 whether or not incompatible ops were found, unless ``--strict``:
  then 3 when any compute op is incompatible.

Register with ``COMMANDS.update(XLA_COMPAT_COMMANDS)`` in :mod:`tfprof_lite.cli`.
"""

from __future__ import annotations

import json

import click

from tfprof_lite.analysis.xla_compat import XlaCompatReport, report_from_model
from tfprof_lite.analysis.xla_ops import TARGETS
from tfprof_lite.base.writing import write_stdout
from tfprof_lite.cli.common import TfprofCommand
from tfprof_lite.cli.inputs import InputSpec, input_options, load_profiler, parse_file
from tfprof_lite.errors import InvalidInputError, MissingDependencyError
from tfprof_lite.proto import messages as pb

__all__ = ["XLA_COMPAT_COMMANDS", "STRICT_EXIT_CODE", "live_report", "xla_compat_command"]

#: Exit code of ``--strict`` when incompatible compute ops were found.
STRICT_EXIT_CODE = 3


def live_report(graph_path: str, target: str, depth: int) -> XlaCompatReport:
    """Check the GraphDef file ``graph_path`` with TensorFlow's kernel registry.

    Raises:
        MissingDependencyError: TensorFlow is not installed.
        InvalidInputError: the file is not a GraphDef.
    """
    graph_def = parse_file(pb.GraphDef, graph_path)
    try:
        from tfprof_lite.capture.xla_compat import check_graph
    except ImportError as err:  # pragma: no cover - the module imports no TF itself
        raise MissingDependencyError(f"cannot check {graph_path}: {err}") from err
    try:
        return check_graph(graph_def.SerializeToString(), target, depth=depth)
    except ImportError as err:
        raise MissingDependencyError(
            f"checking --graph {graph_path} needs TensorFlow (pip install 'tfprof-lite[tf]'); "
            "a saved profile with recorded XLA data needs none"
        ) from err


def _saved_report(spec: InputSpec, target: str | None, depth: int) -> XlaCompatReport:
    model = load_profiler(spec).model
    report = report_from_model(model, target, depth)
    if report is None:
        what = f" for {target}" if target else ""
        raise InvalidInputError(
            f"{spec.profile or spec.graph}: no XLA compatibility data{what} in this profile; "
            "record it while the graph is live with tfprof_lite.capture.xla_compat"
            ".annotate(profiler) (in a ProfileContext: annotate(pctx.profiler) after the "
            "first traced step; see docs/xla_compat.md), or check a GraphDef with --graph "
            "(needs TensorFlow)"
        )
    return report


@click.command(
    "xla-compat",
    cls=TfprofCommand,
    takes_query_options=False,
    short_help="Ops XLA cannot JIT-compile, per scope.",
)
@input_options
@click.option("--target", type=click.Choice(TARGETS), default=None, help="XLA device type.")
@click.option("--scope-depth", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--max-ops", type=click.IntRange(min=0), default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--strict", is_flag=True, help=f"Exit {STRICT_EXIT_CODE} if any op is incompatible.")
@click.pass_context
def xla_compat_command(
    ctx: click.Context,
    profile: tuple[str, ...],
    graph: str | None,
    run_meta: tuple[str, ...],
    op_log: str | None,
    target: str | None,
    scope_depth: int,
    max_ops: int,
    as_json: bool,
    strict: bool,
) -> None:
    """XLA JIT compatibility of a profiled graph (or of a GraphDef, with TensorFlow).

    \b
    Examples:
      tfprof-lite xla-compat tfprof_out/profile_4
      tfprof-lite xla-compat --graph graph.pbtxt --target XLA_GPU_JIT --json
    """
    spec = InputSpec.from_params(profile, graph, run_meta, op_log)
    if graph and not profile and not spec.run_meta:
        report = live_report(graph, target or TARGETS[0], scope_depth)
    else:
        report = _saved_report(spec, target, scope_depth)
    if as_json:
        write_stdout(json.dumps(report.to_dict(), indent=1) + "\n")
    else:
        write_stdout(report.to_text(max_ops))
    if strict and not report.fully_compatible:
        ctx.exit(STRICT_EXIT_CODE)


XLA_COMPAT_COMMANDS: dict[str, click.Command] = {"xla-compat": xla_compat_command}
