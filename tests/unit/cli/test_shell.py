"""``tfprof-lite shell``: the command language, completion, and a real terminal session."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

from tests.unit.cli.conftest import Run, Runner
from tfprof_lite.cli.common import cli_defaults
from tfprof_lite.cli.inputs import InputSpec, load_profiler
from tfprof_lite.cli.shell import TfprofShell, complete_line, help_text, history_path


def run_shell(run: Runner, profile: Path, script: str) -> Run:
    """``tfprof-lite shell PROFILE`` with ``script`` on its (non-terminal) stdin."""
    old = sys.stdin
    sys.stdin = io.StringIO(script)
    try:
        return run("shell", profile)
    finally:
        sys.stdin = old


def _session(profile: Path, script: str, capsys: pytest.CaptureFixture[str]) -> str:
    prof = load_profiler(InputSpec(profile=str(profile)))
    shell = TfprofShell(prof, cli_defaults(), stdin=io.StringIO(script), interactive=False)
    capsys.readouterr()
    shell.run()
    return capsys.readouterr().out


def test_commands_set_and_empty_line(profile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _session(
        profile,
        "scope -max_depth 1\nset -select micros,bytes -max_depth 2\n\nop -max_depth 0\n",
        capsys,
    )
    assert "_TFProfRoot (--/113us, --/0us, --/113us)" in out
    assert "-select                     bytes,micros\n" in out
    assert "-max_depth                  2\n" in out
    assert "node name | requested bytes | total execution time" in out
    assert "tfprof>" not in out


def test_per_command_options_do_not_stick(
    profile: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _session(profile, "scope -max_depth 1 -select params\n\n", capsys)
    assert "-max_depth                  10\n" in out
    assert "-select                     micros\n" in out


def test_errors_keep_the_shell_going(profile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prof = load_profiler(InputSpec(profile=str(profile)))
    script = "bogus\nscope -max_depth x\nop -order_by fast\nscope -output file\nop -max_depth 0\n"
    shell = TfprofShell(prof, cli_defaults(), stdin=io.StringIO(script), interactive=False)
    capsys.readouterr()
    shell.run()
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        "tfprof-lite: error: No such command 'bogus'. (see 'help')",
        "tfprof-lite: error: Invalid option '-max_depth' value: 'x'",
        "tfprof-lite: error: Invalid option '-order_by' value: 'fast'",
        "tfprof-lite: error: Missing required output_options for file; "
        "E.g. -output file:outfile=...",
    ]
    assert "node name | total execution time" in out and "error" not in out
    assert shell.exit_code == 2  # the last failed line's


# The same mistakes on the command line and in the shell: the same line, the same
# exit code (the shell's at the end of a script).
SAME_ERRORS = [
    ("-order_by bogus", 2, "Invalid option '-order_by' value: 'bogus'"),
    ("--order-by bogus", 2, "Invalid option '--order-by' value: 'bogus'"),
    ("-select micros,nope", 2, "Invalid option '-select' value: 'micros,nope'"),
    ("-max_depth x", 2, "Invalid option '-max_depth' value: 'x'"),
    ("-min_micros", 2, "Invalid option '-min_micros' value: ''"),
    ("-hide_name_regexes ((", 2, "Option 'hide_name_regexes' has an invalid regular expression"),
    ("-output foo", 2, "E.g. Unknown output type: foo"),
    ("-max_depth 1 -foo 3", 2, "no such option: -foo"),
    ("-max_depht 3", 2, "no such option: -max_depht (did you mean -max_depth?)"),
    ("--user-code", 2, "no such option: --user-code"),  # a code-view flag
    ("--max-dpth 3", 2, "no such option: --max-dpth (did you mean --max-depth?)"),
    ("-step 9", 1, "PROFILE: no step 9 in this profile (steps: 0, 1, 2)"),
    ("-output file:outfile=/nonexistent/dir/x", 1, "cannot write /nonexistent/dir/x"),
]


@pytest.mark.parametrize(("args", "code", "message"), SAME_ERRORS)
def test_shell_and_cli_agree_on_errors(
    run: Runner, profile: Path, args: str, code: int, message: str
) -> None:
    cli = run("scope", profile, *args.split())
    shell = run_shell(run, profile, f"scope {args}\n")
    assert cli.code == shell.code == code
    assert cli.err.count("\n") == shell.err.count("\n") == 1
    assert cli.err.startswith(f"tfprof-lite: error: {message.replace('PROFILE', str(profile))}")
    shell_line = shell.err.rstrip("\n")
    assert cli.err.rstrip("\n").startswith(shell_line)  # the CLI may add "(see ... --help)"
    assert "Traceback" not in cli.err + shell.err


def test_extra_word_is_a_profile_on_the_command_line_only(run: Runner, profile: Path) -> None:
    """The command line takes several PROFILEs (one per task of a distributed run),
    so a stray word is read as a missing profile; the shell's commands take none."""
    cli = run("scope", profile, "-max_depth", "1", "extra")
    shell = run_shell(run, profile, "scope -max_depth 1 extra\n")
    assert (cli.code, cli.err) == (1, "tfprof-lite: error: extra: no such file or directory\n")
    assert shell.code == 2
    assert shell.err == "tfprof-lite: error: Got unexpected extra argument (extra)\n"


def test_unknown_order_by_is_refused_like_tfprof(run: Runner, profile: Path) -> None:
    """TF's tfprof command language refuses an unknown -order_by (INVALID_ARGUMENT,
    nothing shown); the command line and the shell both do, for views and set."""
    for command in ("scope", "op", "code", "graph"):
        assert run(command, profile, "-order_by", "fastest").code == 2
    shell = run_shell(run, profile, "set -order_by fastest\n\nop -order_by fastest\n")
    assert shell.code == 2
    assert shell.err.count("Invalid option '-order_by' value: 'fastest'") == 2
    assert "-order_by                   name\n" in shell.out  # set changed nothing
    assert "node name" not in shell.out


def test_shell_exit_code_is_the_last_failure(run: Runner, profile: Path) -> None:
    assert run_shell(run, profile, "scope -max_depth 1\n").code == 0
    assert run_shell(run, profile, "scope -max_depth x\nscope -max_depth 1\n").code == 2
    bad_file = "scope -output file:outfile=/nonexistent/d/x\n"
    assert run_shell(run, profile, "scope -max_depth x\n" + bad_file).code == 1


def test_quit_stops_reading(profile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _session(profile, "quit\nscope\n", capsys)
    assert out == ""
    assert _session(profile, "exit\nscope\n", capsys) == ""


def test_help(profile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _session(profile, "help\nhelp set\nhelp nope\n", capsys)
    assert out.startswith(help_text())
    assert "set: Make the given options the defaults of later commands.\n" in out
    assert "No help for 'nope'" in out
    assert "-account_type_regexes" in help_text() and "one of: name, bytes" in help_text()


def test_advise_command(profile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _session(profile, "advise\n", capsys)
    assert "ExpensiveOperationChecker:" in out


def test_cli_reads_commands_from_a_pipe(
    run: Runner, profile: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("op -max_depth 0\n"))
    result = run("shell", profile, "-select", "bytes")
    assert result.code == 0, result.err
    assert "node name | requested bytes\n" in result.out


@pytest.mark.parametrize(
    ("text", "before", "expected"),
    [
        ("sc", "", ["scope "]),
        (
            "",
            "",
            ["scope ", "graph ", "op ", "code ", "advise ", "set ", "help ", "quit ", "exit "],
        ),
        ("-max_d", "scope ", ["-max_depth "]),
        ("-min_a", "set -max_depth 3 ", ["-min_accelerator_micros "]),
        ("mi", "op -order_by ", ["micros "]),
        ("micros,b", "scope -select ", ["micros,bytes"]),
        ("bytes,mic", "scope -select ", ["bytes,micros"]),
        ("ti", "scope -output ", ["timeline:outfile="]),
        ("t", "scope -account_displayed_op_only ", ["true "]),
        ("sc", "help ", ["scope "]),
        ("x", "bogus ", []),
    ],
)
def test_completion(text: str, before: str, expected: list[str]) -> None:
    assert complete_line(text, before) == expected


def test_history_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TFPROF_LITE_HISTORY", str(tmp_path / "h"))
    assert history_path() == str(tmp_path / "h")
    monkeypatch.setenv("TFPROF_LITE_HISTORY", "")
    assert history_path() is None
    monkeypatch.delenv("TFPROF_LITE_HISTORY")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert history_path() == str(tmp_path / ".tfprof_lite_history")


# --------------------------------------------------------------------------- a real terminal


def _spawn(profile: Path, history: Path) -> object:
    pexpect = pytest.importorskip("pexpect")
    env = {**os.environ, "TERM": "xterm", "TFPROF_LITE_HISTORY": str(history), "NO_COLOR": "1"}
    child = pexpect.spawn(
        sys.executable,
        ["-m", "tfprof_lite", "shell", str(profile)],
        env=env,
        encoding="utf-8",
        timeout=20,
        dimensions=(50, 200),
    )
    child.expect_exact("tfprof> ")
    return child


def test_terminal_session(profile: Path, tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    history = tmp_path / "history"
    child: pexpect.spawn = _spawn(profile, history)  # type: ignore[assignment]
    assert "Type 'help'" in (child.before or "")
    child.send("sco\t")  # command completion
    child.expect_exact("scope ")
    child.send("-max_d\t")  # option completion
    child.expect_exact("-max_depth ")
    child.send("1 -order_by mi\t")  # value completion
    child.expect_exact("micros ")
    child.sendline("")
    child.expect_exact("_TFProfRoot (--/113us")
    child.expect_exact("tfprof> ")
    child.sendline("set -select bytes")
    child.expect_exact("tfprof> ")
    child.sendline("")  # empty line: the current options
    child.expect(r"-select\s+bytes")
    child.expect_exact("tfprof> ")
    child.sendline("nonsense")
    child.expect_exact("tfprof-lite: error: No such command 'nonsense'. (see 'help')")
    child.expect_exact("tfprof> ")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert history.read_text().splitlines() == [
        "scope -max_depth 1 -order_by micros ",
        "set -select bytes",
        "nonsense",
    ]


def test_terminal_history_is_reloaded_and_quit(profile: Path, tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    history = tmp_path / "history"
    history.write_text("op -max_depth 0\n")
    child: pexpect.spawn = _spawn(profile, history)  # type: ignore[assignment]
    child.send("\x1b[A")  # up arrow recalls the last line
    child.expect_exact("op -max_depth 0")
    child.send("\r")
    child.expect_exact("node name | total execution time")
    child.expect_exact("tfprof> ")
    child.sendline("quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    lines = history.read_text().splitlines()
    assert lines[0] == "op -max_depth 0" and lines[-1] == "quit"
    assert set(lines) == {"op -max_depth 0", "quit"}
