"""Small command-line behaviours a new user meets: Ctrl-C (exit 130), a missing
script given to ``python -m tfprof_lite.run`` (one line, no traceback), option
suggestions in the spelling used, ``monitor --follow`` on a finished run saying
so, and the package's description of itself."""

from __future__ import annotations

import configparser
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.unit.cli.conftest import Runner
from tfprof_lite.cli import COMMANDS, INTERRUPTED_EXIT
from tfprof_lite.session import autostart

ROOT = Path(__file__).resolve().parents[3]
INTERRUPTED = "tfprof-lite: error: interrupted (Ctrl-C); nothing was left half-written"


# ------------------------------------------------------------------ Ctrl-C
def test_ctrl_c_exits_130_with_one_line(
    run: Runner, profile: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tfprof_lite.cli.overview as overview_cli

    def interrupted(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(overview_cli, "load_profiler", interrupted)
    result = run("overview", profile)
    assert INTERRUPTED_EXIT == 130
    assert result.code == 130
    assert result.err.strip() == INTERRUPTED and "Traceback" not in result.err


def test_sigint_of_a_running_command(profile: Path, tmp_path: Path) -> None:
    """A real SIGINT while a command works: exit 130 and one error line."""
    script = tmp_path / "slow.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys, time
            import tfprof_lite.cli.overview as overview_cli
            from tfprof_lite.cli import main

            def slow(*args, **kwargs):
                print("ready", flush=True)
                time.sleep(60)

            overview_cli.load_profiler = slow
            sys.exit(main(["overview", sys.argv[1]]))
            """
        )
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with subprocess.Popen(
        [sys.executable, str(script), str(profile)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "ready\n"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err.strip() == INTERRUPTED


# ------------------------------------------------- python -m tfprof_lite.run
def test_run_with_a_missing_script_is_one_line(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TFPROF_LITE_DIR="prof")
    proc = subprocess.run(
        [sys.executable, "-m", "tfprof_lite.run", "missing.py", "--epochs", "3"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr == (
        "tfprof_lite.run: missing.py: no such file (give a Python script, or -m module)\n"
    )
    assert not (tmp_path / "prof").exists()  # nothing ran, nothing was written


def test_run_with_a_missing_module_or_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert autostart.main(["-m", "no_such_package_here.train"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "tfprof_lite.run: no module named 'no_such_package_here.train' "
        "(-m takes an importable module)\n"
    )
    assert autostart.main([str(tmp_path)]) == 2
    assert "a directory without __main__.py" in capsys.readouterr().err


# ------------------------------------------------------- option suggestions
@pytest.mark.parametrize(
    ("typed", "suggested"),
    [
        ("--max-dpth", "--max-depth"),  # click style: the click-style spelling
        ("-max_dpth", "-max_depth"),  # tfprof style: tfprof's spelling
        ("--max_dpth", "--max-depth"),
        ("--ordr-by", "--order-by"),
        ("--grph", "--graph"),  # the command's own options as declared
        ("--by-nam", "--by-name"),
        ("--max-input-sze", "--max-input-size"),
    ],
)
def test_unknown_options_suggest_the_closest_in_the_spelling_used(
    run: Runner, profile: Path, typed: str, suggested: str
) -> None:
    result = run("scope", profile, typed, "3")
    assert result.code == 2
    assert (
        result.err == f"tfprof-lite: error: no such option: {typed} (did you mean {suggested}?)\n"
    )


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_suggests_its_input_limit_option(
    run: Runner, profile: Path, name: str
) -> None:
    result = run(name, profile, "--max-input-sise", "1GiB")
    assert result.code == 2
    assert "(did you mean --max-input-size?)" in result.err, result.err


# ------------------------------------------------------- monitor --follow
def _finished_run(directory: Path, ended: bool = True) -> None:
    from tests.unit.test_monitoring import record
    from tfprof_lite.analysis.monitoring import summarize

    windows = [record(0, [0.001] * 10), record(1, [0.001] * 10)]
    docs: list[dict[str, object]] = [
        {"event": "start", "run": "r1", "level": 1, "every": 10, "sample_every": 10}
    ]
    docs += [w.to_dict() for w in windows]
    if ended:
        docs.append({"event": "end", "run": "r1", "summary": summarize(windows).to_dict()})
    (directory / "monitor.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))


def test_follow_on_a_finished_run_says_so(run: Runner, tmp_path: Path) -> None:
    _finished_run(tmp_path)
    result = run("monitor", tmp_path, "--follow", "--idle-timeout", "1")
    assert result.code == 0
    assert result.out.splitlines()[-1].startswith("tfprof_lite monitor summary: runs=20 ")
    assert result.err == (
        f"tfprof-lite monitor: run r1 has finished (its end record is in "
        f"{tmp_path / 'monitor.jsonl'}); waiting for a new run to append to it: Ctrl-C "
        "stops (--until-end stops after a run's end, --idle-timeout SEC when idle)\n"
    )


def test_follow_says_so_after_an_earlier_run_that_stopped_abruptly(
    run: Runner, tmp_path: Path
) -> None:
    _finished_run(tmp_path, ended=False)
    crashed = (tmp_path / "monitor.jsonl").read_text().replace('"r1"', '"r0"')
    _finished_run(tmp_path)
    log = tmp_path / "monitor.jsonl"
    log.write_text(crashed + log.read_text())
    result = run("monitor", tmp_path, "--follow", "--idle-timeout", "1")
    assert result.code == 0 and result.err.startswith("tfprof-lite monitor: run r1 has finished")


def test_follow_on_a_running_run_says_nothing(run: Runner, tmp_path: Path) -> None:
    _finished_run(tmp_path, ended=False)
    result = run("monitor", tmp_path, "--follow", "--idle-timeout", "0.5")
    assert result.code == 0 and result.err == ""
    assert result.out.splitlines()[-1].startswith("tfprof_lite monitor: runs=10-19 ")


def test_follow_until_end_on_a_finished_run_stops_by_itself(run: Runner, tmp_path: Path) -> None:
    _finished_run(tmp_path)
    result = run("monitor", tmp_path, "--follow", "--until-end")
    assert result.code == 0 and result.err == ""
    assert "summary: runs=20 " in result.out


# ------------------------------------------------------------ description
def test_the_package_does_not_call_itself_pure_python() -> None:
    """The install builds C extensions: the README's opening and the package
    description say so instead of "pure-Python"."""
    assert "Extension(" in (ROOT / "setup.py").read_text()
    opening = (ROOT / "README.md").read_text().split("\n\n")[1]
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    description = config["metadata"]["description"]
    for text in (" ".join(opening.split()), description):
        assert "A pure-Python" not in text and "C extensions" in text, text


# ------------------------------------------------------------------ process end
def test_the_process_entry_hands_its_objects_to_the_exit(
    profile: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``main()`` as the script runs it (no argv) freezes what the command built,
    so that no full collection walks it at shutdown; ``main(argv)`` (a caller
    that goes on) leaves the collector alone."""
    import gc

    from tfprof_lite.cli import main

    frozen: list[bool] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(True))
    assert main(["overview", str(profile)]) == 0
    assert frozen == []
    monkeypatch.setattr(sys, "argv", ["tfprof-lite", "overview", str(profile)])
    assert main() == 0
    assert frozen == [True]
    assert capsys.readouterr().out.count("average step time") == 2
