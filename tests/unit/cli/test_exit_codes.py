"""The exit-code contract of every command: 0 ok, 1 bad input, 2 usage error, one line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.unit.cli.conftest import Run, Runner
from tfprof_lite.cli import COMMANDS
from tfprof_lite.cli.common import TfprofCommand

#: Commands whose input is not a profile: their missing-file invocation.
_MISSING = {
    "diff": lambda missing, profile: ["diff", missing, profile],
    "hlo": lambda missing, profile: ["hlo", missing],
    "monitor": lambda missing, profile: ["monitor", missing],
    "xspace": lambda missing, profile: ["xspace", missing, "-o", profile.parent / "xspace_out"],
}
QUERY_COMMANDS = [
    name
    for name, command in COMMANDS.items()
    if isinstance(command, TfprofCommand) and command.takes_query_options
]


def _one_line(result: Run, code: int) -> None:
    assert result.code == code, result.err
    assert result.err.startswith("tfprof-lite: error: "), result.err
    assert result.err.count("\n") == 1, result.err
    assert "Traceback" not in result.err + result.out


def _args(name: str, missing: Path, profile: Path) -> list[object]:
    return list(_MISSING.get(name, lambda m, p: [name, m])(missing, profile))


@pytest.mark.parametrize("name", list(COMMANDS))
def test_unknown_option_is_a_usage_error(run: Runner, profile: Path, name: str) -> None:
    for option in ("--no-such-option", "-no_such_option"):
        result = run(name, profile, option, "3")
        _one_line(result, 2)
        assert "no_such_option" in result.err.replace("-", "_")


@pytest.mark.parametrize("name", list(COMMANDS))
def test_bad_option_value_is_a_usage_error(run: Runner, profile: Path, name: str) -> None:
    result = run(name, profile, "--max-input-size", "lots")
    _one_line(result, 2)
    assert "'lots' is not a size" in result.err


@pytest.mark.parametrize("name", QUERY_COMMANDS)
@pytest.mark.parametrize(
    "option",
    [
        ["-max_depth", "abc"],
        ["--max-depth", "abc"],
        ["--max_depth=abc"],
        ["-order_by", "fast"],
        ["-select", "micro"],
        ["-min_bytes", "-"],
    ],
)
def test_bad_tfprof_option_value_is_a_usage_error_in_either_syntax(
    run: Runner, profile: Path, name: str, option: list[str]
) -> None:
    args = [name, profile, *option] + ([profile] if name == "diff" else [])
    result = run(*args)
    _one_line(result, 2)
    assert "Invalid" in result.err


@pytest.mark.parametrize(
    "name", [n for n in COMMANDS if n not in QUERY_COMMANDS and n not in ("hlo", "monitor")]
)
def test_query_option_where_none_is_taken_is_a_usage_error(
    run: Runner, profile: Path, name: str
) -> None:
    _one_line(run(name, profile, "-max_depth", "3"), 2)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_missing_file_is_bad_input(run: Runner, profile: Path, tmp_path: Path, name: str) -> None:
    missing = tmp_path / "no_such_profile"
    result = run(*_args(name, missing, profile))
    _one_line(result, 1)
    assert str(missing) in result.err


@pytest.mark.parametrize("name", [n for n in COMMANDS if n not in ("hlo", "monitor", "help")])
@pytest.mark.parametrize("kind", ["fifo", "device", "huge", "empty", "truncated"])
def test_unusable_profile_is_one_line(
    run: Runner, profile: Path, tmp_path: Path, name: str, kind: str
) -> None:
    path = tmp_path / kind
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path = Path("/dev/zero")
    elif kind == "huge":
        with open(path, "wb") as handle:
            handle.truncate(4 * 1024**3)
    elif kind == "empty":
        path.write_bytes(b"")
    else:
        path.write_bytes(profile.read_bytes()[:300])
    result = run(*_args(name, path, profile))
    _one_line(result, 1)
    assert result.err.startswith(f"tfprof-lite: error: {path}: ")


def test_max_input_size_raises_the_limit(run: Runner, profile: Path) -> None:
    size = profile.stat().st_size
    small = run("scope", profile, "--max-input-size", size - 1)
    _one_line(small, 1)
    assert "input limit" in small.err
    assert run("scope", profile, "--max-input-size", size).code == 0
    assert run("scope", profile, "-max_input_size", size).code == 0
