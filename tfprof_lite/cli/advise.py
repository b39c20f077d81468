"""``tfprof-lite advise [PROFILE] [--checker NAME]...``: the advisor's findings.

Contract: runs :func:`tfprof_lite.advisor.run_advisor` with every checker (like TF's
``profiler advise``, which uses ``ALL_ADVICE``) or the ``--checker`` ones and
prints its text, ``\\n<Checker>:\\n`` and one line per report. The advisor is imported only
when needed, so the other commands work even where it cannot be imported; then
this command fails with one line (exit 1).
"""

from __future__ import annotations

from typing import Any

import click

from tfprof_lite.base.writing import write_stdout
from tfprof_lite.cli.common import TfprofCommand
from tfprof_lite.cli.inputs import InputSpec, input_options, load_profiler
from tfprof_lite.errors import TfprofLiteError
from tfprof_lite.model.profile import ProfileModel

__all__ = ["ADVISE_COMMANDS", "DEFAULT_CHECKERS", "advise"]

#: TF's ``ALL_ADVICE`` checkers (JobChecker reports only multi-task profiles).
DEFAULT_CHECKERS: tuple[str, ...] = (
    "AcceleratorUtilizationChecker",
    "OperationChecker",
    "ExpensiveOperationChecker",
    "JobChecker",
)


def advise(model: ProfileModel, checkers: tuple[str, ...] = DEFAULT_CHECKERS) -> Any:
    """Runs the advisor's ``checkers`` on ``model`` (printing them); returns the AdviceProto.

    Raises:
        TfprofLiteError: the advisor cannot be imported, or rejects a checker name.
    """
    try:
        from tfprof_lite.advisor import run_advisor
    except ImportError as err:  # pragma: no cover - only while the advisor is broken
        raise TfprofLiteError(f"the advisor is not available: {err}") from err
    result = run_advisor(model, {name: {} for name in checkers})
    if result.text:
        write_stdout(result.text)
    return result.advice


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
    help="Run only this checker (repeatable): " + ", ".join(DEFAULT_CHECKERS) + ".",
)
def advise_command(
    profile: tuple[str, ...],
    graph: str | None,
    run_meta: tuple[str, ...],
    op_log: str | None,
    checkers: tuple[str, ...],
) -> None:
    """Runs the advisor's checkers on a profile and prints their reports.

    \b
    Example:
      tfprof-lite advise tfprof_out/profile_4 --checker ExpensiveOperationChecker
    """
    spec = InputSpec.from_params(profile, graph, run_meta, op_log)
    advise(load_profiler(spec).model, checkers or DEFAULT_CHECKERS)


ADVISE_COMMANDS: dict[str, click.Command] = {"advise": advise_command}
