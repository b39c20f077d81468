"""Temporary files of atomic writes: removed on every failure, stale ones swept later."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.unit.cli import profiles
from tfprof_lite.base import writing as tio
from tfprof_lite.cli import main
from tfprof_lite.errors import TfprofLiteError
from tfprof_lite.outputs.trace_writer import TraceWriter


def _temps(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(tio.TEMP_PREFIX))


def test_temp_names_carry_the_pid(tmp_path: Path) -> None:
    fd, tmp = tio.create_temp_sibling(str(tmp_path / "x"))
    os.close(fd)
    assert os.path.basename(tmp).startswith(f"{tio.TEMP_PREFIX}{os.getpid()}-")


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_write_atomic_removes_its_temp_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    def fail(*args: object) -> None:
        raise error

    monkeypatch.setattr(os, "replace", fail)
    target = tmp_path / "out.txt"
    expected = TfprofLiteError if isinstance(error, OSError) else KeyboardInterrupt
    with pytest.raises(expected) as info:
        tio.write_atomic(target, "data")
    if isinstance(error, OSError):
        assert str(info.value) == f"cannot write {target}: No space left on device"
    assert list(tmp_path.iterdir()) == []


def test_existing_directory_is_refused_as_a_destination(tmp_path: Path) -> None:
    with pytest.raises(TfprofLiteError, match=f"cannot write {tmp_path}: it is a directory"):
        tio.write_atomic(tmp_path, "x")
    with pytest.raises(TfprofLiteError, match=f"cannot write {tmp_path}: it is a directory"):
        TraceWriter(tmp_path)
    assert _temps(tmp_path) == []


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_trace_writer_close_failure_removes_temp_and_names_destination(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    target = tmp_path / f"trace{suffix}"
    writer = TraceWriter(target)
    writer.write({"ph": "M", "name": "x"})
    target.mkdir()  # the rename now fails: a directory is in the way
    with pytest.raises(TfprofLiteError) as info:
        writer.close()
    assert str(info.value).startswith(f"cannot write {target}: ")
    assert tio.TEMP_PREFIX not in str(info.value)
    assert _temps(tmp_path) == []


def test_trace_writer_interrupted_removes_temp(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), TraceWriter(tmp_path / "t.json") as writer:
        writer.write({"ph": "M"})
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_timeline_into_an_existing_directory_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = tmp_path / "profile_2"
    profiles.write_profile(profile)
    out = tmp_path / "out"
    out.mkdir()
    capsys.readouterr()
    assert main(["timeline", str(profile), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err == f"tfprof-lite: error: cannot write {out}: it is a directory; give a file name\n"
    assert _temps(tmp_path) == [] and list(out.iterdir()) == []


def _make_stale(directory: Path, name: str, age: float = 120.0) -> Path:
    path = directory / name
    path.write_bytes(b"partial")
    old = time.time() - age
    os.utime(path, (old, old))
    return path


def _dead_pid() -> int:
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(proc.stdout)


def test_stale_temps_of_dead_writers_are_removed(tmp_path: Path) -> None:
    dead = _dead_pid()
    stale = _make_stale(tmp_path, f".tfprof_lite-{dead}-abc123")
    stale_tagged = _make_stale(tmp_path, f".tfprof_lite-hlo-{dead}-abc123")
    keep = [
        _make_stale(tmp_path, f".tfprof_lite-{dead}-young", age=1.0),  # may still be written
        _make_stale(tmp_path, f".tfprof_lite-{os.getppid()}-alive"),  # its writer lives
        _make_stale(tmp_path, f".tfprof_lite-{os.getpid()}-mine"),  # ours
        _make_stale(tmp_path, ".tfprof_lite-legacy1"),  # no pid: not ours to judge
        _make_stale(tmp_path, f"other-{dead}-x"),  # another pattern
    ]
    (tmp_path / f".tfprof_lite-{dead}-dir").mkdir()  # not a file
    tio.write_atomic(tmp_path / "out.txt", "x")
    assert not stale.exists() and not stale_tagged.exists()
    assert all(path.exists() for path in keep)
    assert (tmp_path / f".tfprof_lite-{dead}-dir").is_dir()


_SLOW_WRITE = """
import os, sys, time
from tfprof_lite.base import writing as tio
real_replace = os.replace
def slow_replace(src, dst):
    print("writing", flush=True)
    time.sleep(60)
    real_replace(src, dst)
tio.os.replace = slow_replace
"""


def _start(code: str, cwd: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "writing"  # the temp file exists now
    return proc


def test_sigterm_mid_write_in_the_cli_leaves_no_temp(tmp_path: Path) -> None:
    profile = tmp_path / "profile_2"
    profiles.write_profile(profile)
    out = tmp_path / "out"
    out.mkdir()
    code = _SLOW_WRITE + (
        "from tfprof_lite.cli import main\n"
        f"sys.exit(main(['pprof', {str(profile)!r}, '-o', {str(out / 'p.pb.gz')!r}]))\n"
    )
    proc = _start(code, tmp_path)
    assert len(_temps(out)) == 1
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143
    assert err.startswith("tfprof-lite: error: terminated (SIGTERM)") and err.count("\n") == 1
    assert "Traceback" not in err
    assert list(out.iterdir()) == []


def test_sigkill_mid_write_is_cleaned_by_the_next_write(tmp_path: Path) -> None:
    code = _SLOW_WRITE + "tio.write_atomic('out.txt', 'x' * 100000)\n"
    proc = _start(code, tmp_path)
    (left,) = _temps(tmp_path)
    assert left.startswith(f".tfprof_lite-{proc.pid}-")
    proc.kill()
    proc.communicate(timeout=30)
    old = time.time() - 2 * tio.STALE_TEMP_AGE
    os.utime(tmp_path / left, (old, old))
    tio.write_atomic(tmp_path / "other.txt", "y")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.txt"]
