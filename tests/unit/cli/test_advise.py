"""``tfprof-lite advise``, the shell's ``advise`` and the report's advisor section run
every registered checker; ``--tf-default`` runs TensorFlow's own set; ``--help`` names
every checker. The registry (:data:`tfprof_lite.advisor.CHECKERS`) is the reference."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest

from tests.unit.cli import profiles
from tests.unit.cli.conftest import Runner
from tfprof_lite import Profiler, advisor
from tfprof_lite.advisor import CHECKER_ORDER, CHECKERS, TF_DEFAULT_CHECKERS
from tfprof_lite.cli.common import cli_defaults
from tfprof_lite.cli.inputs import InputSpec, load_profiler
from tfprof_lite.cli.shell import TfprofShell
from tfprof_lite.report import advisor_section

#: TensorFlow 2.21's ``model_analyzer.ALL_ADVICE`` names, written out (not derived).
TF_ALL_ADVICE = (
    "ExpensiveOperationChecker",
    "AcceleratorUtilizationChecker",
    "JobChecker",
    "OperationChecker",
)
#: The sections TF prints for ALL_ADVICE on a single-task profile.
TF_SECTIONS = ["AcceleratorUtilizationChecker", "OperationChecker", "ExpensiveOperationChecker"]


def headers(out: str) -> list[str]:
    """The checker names of the printed ``\\n<Name>:\\n`` section headers, in order."""
    return re.findall(rf"^({'|'.join(CHECKERS)}):$", out, flags=re.MULTILINE)


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The checker names of every :func:`advisor.run_advisor` call and every
    :func:`advisor.run_checkers` call of the report (which still run)."""
    calls: list[list[str]] = []

    def spy_on(real: Any) -> Any:
        def spy(model: Any, options: Any) -> Any:
            calls.append(list(options))
            return real(model, options)

        return spy

    monkeypatch.setattr("tfprof_lite.cli.advise.run_advisor", spy_on(advisor.run_advisor))
    monkeypatch.setattr(advisor, "run_advisor", spy_on(advisor.run_advisor))
    monkeypatch.setattr(advisor, "run_checkers", spy_on(advisor.run_checkers))
    return calls


def test_tf_default_set_is_tfs_all_advice() -> None:
    assert set(TF_DEFAULT_CHECKERS) == set(TF_ALL_ADVICE)
    assert list(TF_DEFAULT_CHECKERS) == [n for n in CHECKER_ORDER if n in TF_ALL_ADVICE]


def test_advise_runs_every_registered_checker(
    run: Runner, profile: Path, asked: list[list[str]]
) -> None:
    result = run("advise", profile)
    assert result.code == 0, result.err
    assert asked == [list(CHECKER_ORDER)]
    expected = Profiler.load(profile).model
    every = advisor.run_advisor(expected, {name: {} for name in CHECKERS})
    assert result.out == every.text
    shown = headers(result.out)
    # every checker but JobChecker (single task: no entry) prints a section
    assert shown == [n for n in CHECKER_ORDER if n != "JobChecker"]
    assert {"StepTimeChecker", "InputPipelineChecker", "MemoryChecker"} <= set(shown)


def test_advise_help_names_every_checker(run: Runner) -> None:
    result = run("advise", "--help")
    assert result.code == 0
    text = " ".join(result.out.split())
    for name in CHECKERS:
        assert name in text
    assert "--tf-default" in text


def test_tf_default_gives_tfs_sections(
    run: Runner, profile: Path, asked: list[list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    result = run("advise", profile, "--tf-default")
    assert result.code == 0, result.err
    assert sorted(asked[0]) == sorted(TF_ALL_ADVICE)
    assert headers(result.out) == TF_SECTIONS
    # the same text as the drop-in API given TF's ALL_ADVICE
    capsys.readouterr()
    Profiler.load(profile).advise({name: {} for name in TF_ALL_ADVICE})
    assert result.out == capsys.readouterr().out


def test_checker_picks_one(run: Runner, profile: Path) -> None:
    result = run("advise", profile, "-c", "MemoryChecker", "-c", "OperationChecker")
    assert result.code == 0, result.err
    assert headers(result.out) == ["OperationChecker", "MemoryChecker"]


def test_checker_and_tf_default_conflict(run: Runner, profile: Path) -> None:
    result = run("advise", profile, "--tf-default", "-c", "MemoryChecker")
    assert result.code == 2
    assert result.out == ""
    assert result.err.count("\n") == 1
    assert "--checker and --tf-default cannot be combined" in result.err


def test_unknown_checker_fails_before_reading(run: Runner, tmp_path: Path) -> None:
    result = run("advise", tmp_path / "no_such_profile", "-c", "MemoryCheckr")
    assert result.code != 0
    assert result.err.count("\n") == 1
    assert "unknown advisor checker 'MemoryCheckr' (did you mean MemoryChecker?)" in result.err


def test_shell_advise_runs_every_checker(
    profile: Path, capsys: pytest.CaptureFixture[str], asked: list[list[str]]
) -> None:
    prof = load_profiler(InputSpec(profile=str(profile)))
    shell = TfprofShell(prof, cli_defaults(), stdin=io.StringIO("advise\n"), interactive=False)
    capsys.readouterr()
    shell.run()
    assert asked == [list(CHECKER_ORDER)]
    assert {"StepTimeChecker", "MemoryChecker"} <= set(headers(capsys.readouterr().out))


def test_report_runs_every_checker(asked: list[list[str]]) -> None:
    fragment = advisor_section(profiles.profiler().model)
    assert fragment is not None
    assert sorted(asked[0]) == sorted(CHECKERS)
    assert "<h3>StepTimeChecker</h3>" in fragment
    assert "<h3>MemoryChecker</h3>" in fragment
