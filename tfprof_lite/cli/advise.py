"""``tfprof-lite advise [PROFILE] [--checker NAME]... [--tf-default]``: the advisor's findings.

Contract: runs :func:`tfprof_lite.advisor.run_advisor` with every registered
checker (:data:`tfprof_lite.advisor.CHECKERS`, in its order) by default, the
``--checker`` ones, or with ``--tf-default`` TensorFlow's own default set
(:data:`tfprof_lite.advisor.TF_DEFAULT_CHECKERS`, the names of TF's
``ALL_ADVICE``; giving both is a usage error, exit 2), and prints its text,
``\\n<Checker>:\\n`` and one line per report. The option help lists the checkers
from the registry, so it names every one. The drop-in ``advise()`` API and
``Profiler.advise`` do not use this default: they run what their options name.
"""

from __future__ import annotations

from typing import Any

import click

from tfprof_lite.advisor import CHECKER_ORDER, TF_DEFAULT_CHECKERS, advisor_options, run_advisor
from tfprof_lite.base.writing import write_stdout
from tfprof_lite.cli.common import TfprofCommand
from tfprof_lite.cli.inputs import InputSpec, input_options, load_profiler
from tfprof_lite.errors import UsageError
from tfprof_lite.model.profile import ProfileModel

__all__ = ["ADVISE_COMMANDS", "advise", "checkers_to_run"]


def advise(
    model: ProfileModel, checkers: tuple[str, ...] = CHECKER_ORDER, per_step: bool = False
) -> Any:
    """Runs the advisor's ``checkers`` (default: every one) on ``model``, printing
    their text; returns the AdviceProto. ``per_step``: every per-step line.

    Raises:
        InvalidOptionError: an unknown checker name.
    """
    options: dict[str, dict[str, str]] = {name: {} for name in checkers}
    result = run_advisor(model, options, per_step=True) if per_step else run_advisor(model, options)
    if result.text:
        write_stdout(result.text)
    return result.advice


def checkers_to_run(checkers: tuple[str, ...], tf_default: bool) -> tuple[str, ...]:
    """The checkers ``advise`` runs: the named ones, TF's default set, or every one.

    Raises:
        UsageError: both ``--checker`` and ``--tf-default`` were given.
        InvalidOptionError: an unknown checker name (checked before any input is read).
    """
    if checkers and tf_default:
        raise UsageError("--checker and --tf-default cannot be combined; give one of them")
    if tf_default:
        return TF_DEFAULT_CHECKERS
    advisor_options({name: {} for name in checkers})
    return checkers or CHECKER_ORDER


@click.command(
    "advise",
    cls=TfprofCommand,
    takes_query_options=False,
    short_help="Advice: expensive ops, accelerator use, op choices.",
)
@input_options
@click.option(
    "--checker",
    "-c",
    "checkers",
    multiple=True,
    metavar="NAME",
    help="Run only this checker (repeatable). Default: every checker: "
    + ", ".join(CHECKER_ORDER)
    + ".",
)
@click.option(
    "--tf-default",
    is_flag=True,
    help="Run TensorFlow's default set only (its ALL_ADVICE): "
    + ", ".join(TF_DEFAULT_CHECKERS)
    + ".",
)
@click.option(
    "--per-step",
    is_flag=True,
    help="Print every per-step finding (default: identical ones as step ranges, long lists cut).",
)
def advise_command(
    profile: tuple[str, ...],
    graph: str | None,
    run_meta: tuple[str, ...],
    op_log: str | None,
    checkers: tuple[str, ...],
    tf_default: bool,
    per_step: bool,
) -> None:
    """Runs the advisor's checkers on a profile (every checker unless told
    otherwise) and prints their reports.

    \b
    Examples:
      tfprof-lite advise tfprof_out/profile_4
      tfprof-lite advise tfprof_out/profile_4 --checker ExpensiveOperationChecker
      tfprof-lite advise tfprof_out/profile_4 --tf-default
    """
    to_run = checkers_to_run(checkers, tf_default)
    spec = InputSpec.from_params(profile, graph, run_meta, op_log)
    advise(load_profiler(spec).model, to_run, per_step)


ADVISE_COMMANDS: dict[str, click.Command] = {"advise": advise_command}
