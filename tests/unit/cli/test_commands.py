"""Option syntax, help, exit codes, colour and progress of the ``tfprof-lite`` CLI."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

from tests.unit.cli.conftest import Runner
from tfprof_lite.cli import COMMANDS, cli
from tfprof_lite.cli.common import split_tfprof_args
from tfprof_lite.cli.progress import Spinner
from tfprof_lite.errors import UsageError

#: Every command, in the order ``--help`` lists them.
EXPECTED_COMMANDS = [
    "scope",
    "graph",
    "op",
    "code",
    "advise",
    "shell",
    "report",
    "diff",
    "monitor",
    "xla-compat",
    "overview",
    "memory",
    "kernels",
    "timeline",
    "xspace",
    "pprof",
    "hlo",
    "op-profile",
    "roofline",
    "op-stats",
    "memory-viewer",
    "help",
    "cluster",
]


def test_registry_lists_every_command() -> None:
    assert list(COMMANDS) == EXPECTED_COMMANDS
    assert cli.list_commands(click.Context(cli)) == sorted(COMMANDS)


@pytest.mark.parametrize("command", EXPECTED_COMMANDS)
def test_every_command_has_help_with_an_example(run: Runner, command: str) -> None:
    result = run(command, "--help")
    assert result.code == 0
    assert "Example" in result.out
    assert f"tfprof-lite {command} " in result.out
    assert result.err == ""


def test_group_help_and_version(run: Runner) -> None:
    result = run("-h")
    assert result.code == 0
    for command in COMMANDS:
        assert command in result.out
    assert run("--version").code == 0


@pytest.mark.parametrize(
    "options",
    [
        ["-max_depth", "2", "-select", "micros,bytes", "-order_by", "micros"],
        ["--max-depth", "2", "--select", "micros,bytes", "--order-by", "micros"],
        ["--max_depth=2", "--select=bytes,micros", "--order_by=micros"],
        ["-max_depth=2", "-select", "bytes,micros", "--order-by=micros"],
    ],
)
def test_tfprof_and_click_style_options_agree(
    run: Runner, profile: Path, options: list[str]
) -> None:
    expected = run(
        "scope", profile, "-max_depth", 2, "-select", "bytes,micros", "-order_by", "micros"
    )
    result = run("scope", *options, profile)
    assert result.code == 0, result.err
    assert result.out == expected.out
    assert "requested bytes | total execution time" in result.out


def test_account_displayed_op_only_takes_an_optional_bool(run: Runner, profile: Path) -> None:
    with_value = run("op", profile, "-account_displayed_op_only", "true", "-max_depth", 3)
    without = run("op", "-account_displayed_op_only", profile, "-max_depth", 3)
    assert with_value.code == without.code == 0
    assert with_value.out == without.out


def test_split_tfprof_args() -> None:
    tf, rest = split_tfprof_args(
        ["p", "-max_depth", "3", "--op-log", "x", "-step=-1", "--", "-select"],
        {"op_log": "--op-log"},
    )
    assert tf == ["-max_depth", "3", "-step=-1"]
    assert rest == ["p", "--op-log", "x", "--", "-select"]
    tf, rest = split_tfprof_args(
        ["-output", "r.html", "-o", "x"], {"output": "--output"}, frozenset("o")
    )
    assert tf == [] and rest == ["--output", "r.html", "-o", "x"]
    with pytest.raises(
        UsageError, match=r"no such option: -max_dept \(did you mean -max_depth\?\)"
    ):
        split_tfprof_args(["-max_dept", "3"])


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--foo"], 2, "no such option: --foo"),
        (["-foo", "3"], 2, "no such option: -foo"),
        (["-max_dept", "3"], 2, "did you mean -max_depth?"),
        (["-max_depth", "x"], 2, "Invalid option '-max_depth' value: 'x'"),
        (["-order_by", "fast"], 2, "Invalid option '-order_by' value: 'fast'"),
        (["-select", "micro"], 2, "Invalid option '-select' value: 'micro'"),
        (["-output", "file"], 2, "Missing required output_options for file"),
        (["-show_name_regexes", "("], 2, "invalid regular expression"),
        (["-max_depth"], 2, "Invalid option '-max_depth' value: ''"),
    ],
)
def test_option_errors(
    run: Runner, profile: Path, args: list[str], code: int, message: str
) -> None:
    result = run("scope", profile, *args)
    assert result.code == code
    assert result.out == ""
    assert result.err.startswith("tfprof-lite: error: ")
    assert result.err.count("\n") == 1
    assert message in result.err


def test_unknown_command_and_missing_argument(run: Runner) -> None:
    result = run("frobnicate")
    assert result.code == 2 and result.err.count("\n") == 1
    result = run("diff")
    assert result.code == 2 and "Missing argument" in result.err


def test_advise_rejects_query_options(run: Runner, profile: Path) -> None:
    result = run("advise", profile, "-max_depth", 3)
    assert result.code == 2
    assert "takes no tfprof query options" in result.err


def test_file_and_table_outputs(run: Runner, profile: Path, tmp_path: Path) -> None:
    text = tmp_path / "scope.txt"
    result = run("scope", profile, "-output", f"file:outfile={text}")
    assert result.code == 0 and result.out == ""
    assert text.read_text() == run("scope", profile).out
    table = tmp_path / "op.json"
    assert run("op", profile, "--output", f"json:outfile={table}").code == 0
    doc = json.loads(table.read_text())
    assert doc["view"] == "op" and {r["name"] for r in doc["rows"]} >= {"MatMul", "Relu"}


def test_unwritable_output_is_one_line(run: Runner, profile: Path, tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "dir" / "x.txt"
    result = run("scope", profile, "-output", f"file:outfile={target}")
    assert result.code == 1
    assert result.err.count("\n") == 1 and str(target) in result.err


def test_code_view_without_traces_warns(
    run: Runner, data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    raw = data_dir / "raw"
    result = run("code", "--graph", raw / "graph.pb", "--run-meta", raw / "run_meta_0.pb")
    assert result.code == 0
    assert result.out == ""
    assert "No code trace information" in caplog.text


def test_advise_prints_the_checkers(run: Runner, profile: Path) -> None:
    result = run("advise", profile, "--checker", "ExpensiveOperationChecker")
    if result.code == 1 and "advisor" in result.err:
        pytest.skip(f"advisor unavailable: {result.err}")
    assert result.code == 0, result.err
    assert "ExpensiveOperationChecker:" in result.out
    assert "MatMul" in result.out


# --------------------------------------------------------------------------- colour


def test_plain_when_piped(run: Runner, profile: Path) -> None:
    result = run("scope", profile)
    assert "\x1b[" not in result.out
    bad = run("scope", profile, "-foo")
    assert "\x1b[" not in bad.err


def test_color_forced(run: Runner, profile: Path) -> None:
    result = run("--color", "scope", profile)
    assert "\x1b[1m\x1b[34mnode name |" in result.out or "\x1b[34m\x1b[1mnode name" in result.out
    assert "\x1b[" in run("--color", "scope", profile, "-foo").err
    assert "\x1b[" not in run("--no-color", "scope", profile).out


def test_no_color_env(run: Runner, profile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in run("scope", profile).out


def test_pipe_to_closed_reader_is_quiet(profile: Path) -> None:
    script = (
        f"import sys; sys.argv=['tfprof-lite','scope','{profile}','-max_depth','100'];"
        "from tfprof_lite.cli import main; sys.exit(main())"
    )
    with subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.read(10)
        proc.stdout.close()
        err = proc.stderr.read().decode()
        assert proc.wait() == 0
    assert "Traceback" not in err


# --------------------------------------------------------------------------- progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_spinner_draws_only_on_a_terminal_and_after_the_delay() -> None:
    tty = _Tty()
    with Spinner("loading x", stream=tty, delay=0.0, interval=0.01) as spin:
        time.sleep(0.1)
        spin.update("reading y")
        time.sleep(0.1)
    text = tty.getvalue()
    assert "loading x" in text and "reading y" in text
    assert text.endswith("\r")
    quick = _Tty()
    with Spinner("fast", stream=quick, delay=5.0):
        pass
    assert quick.getvalue() == ""
    piped = io.StringIO()
    with Spinner("piped", stream=piped, delay=0.0, interval=0.01):
        time.sleep(0.05)
    assert piped.getvalue() == ""


def test_main_module_runs(profile: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tfprof_lite", "op", str(profile), "-max_depth", "1"],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": ""},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "MatMul" in proc.stdout
