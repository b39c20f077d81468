"""The bounded reader of user files: regular files only, a size limit, one copy in memory."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import threading
import types
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.unit.cli import profiles
from tfprof_lite import Profiler, xla
from tfprof_lite.analysis.monitor_log import follow, read_runs
from tfprof_lite.base import reading as tio
from tfprof_lite.base import units
from tfprof_lite.errors import InvalidInputError, InvalidOptionError

GIB = 1024**3


def _no_hang(func: Callable[[], object], seconds: float = 10.0) -> BaseException | None:
    """Runs ``func`` in a thread; fails the test if it blocks; returns what it raised."""
    raised: list[BaseException] = []

    def target() -> None:
        try:
            func()
        except BaseException as err:  # noqa: BLE001 - handed to the test
            raised.append(err)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the read blocked"
    return raised[0] if raised else None


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("8GiB", 8 * GIB),
        ("8G", 8 * GIB),
        ("8gb", 8 * GIB),
        ("512MiB", 512 * 1024**2),
        ("1.5k", 1536),
        ("1000000", 1_000_000),
        (" 2 GiB ", 2 * GIB),
        (3, 3),
    ],
)
def test_parse_size(text: str | int, size: int) -> None:
    assert units.parse_size(text) == size


@pytest.mark.parametrize("text", ["", "abc", "GiB", "8 XB", "-1", "0", "8iB", 0])
def test_parse_size_rejects(text: str | int) -> None:
    with pytest.raises(InvalidOptionError):
        units.parse_size(text)


def test_limit_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(tio.MAX_INPUT_SIZE_ENV, raising=False)
    assert tio.max_input_size() == tio.DEFAULT_MAX_INPUT_SIZE == 2 * GIB
    monkeypatch.setenv(tio.MAX_INPUT_SIZE_ENV, "3GiB")
    assert tio.max_input_size() == 3 * GIB
    with tio.input_size_limit("4GiB") as limit:
        assert limit == tio.max_input_size() == 4 * GIB
        assert tio.max_input_size("5GiB") == 5 * GIB
    assert tio.max_input_size() == 3 * GIB
    monkeypatch.setenv(tio.MAX_INPUT_SIZE_ENV, "lots")
    with pytest.raises(InvalidOptionError, match="TFPROF_LITE_MAX_INPUT_SIZE=lots"):
        tio.max_input_size()


def test_reads_a_regular_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    data = os.urandom(300_000)
    path.write_bytes(data)
    got = tio.read_input(path, "a test file")
    assert isinstance(got, bytes) and got == data and len(got) == len(data)
    (tmp_path / "empty").write_bytes(b"")
    assert tio.read_input(tmp_path / "empty") == b""


class _Trickle(io.FileIO):
    """A file whose reads return at most 4,096 bytes (as a pipe-backed or
    network file system may)."""

    def read(self, size: int = -1) -> bytes:
        return super().read(min(size, 4096))


def test_reads_a_file_that_arrives_in_pieces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "f.bin"
    data = os.urandom(50_000)
    path.write_bytes(data)
    monkeypatch.setattr(tio, "io", types.SimpleNamespace(FileIO=_Trickle))
    assert tio.read_input(path, "a test file") == data


def _fifo(directory: Path) -> Path:
    os.mkfifo(directory / "fifo")
    return directory / "fifo"


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda d: d, "is a directory"),
        (_fifo, "is a FIFO (named pipe)"),
        (lambda d: Path("/dev/zero"), "is a character device"),
        (lambda d: d / "missing", "cannot read (No such file or directory)"),
    ],
)
def test_refuses_non_regular_files_without_blocking(
    tmp_path: Path, make: Callable[[Path], Path], problem: str
) -> None:
    path = make(tmp_path)
    err = _no_hang(lambda: tio.read_input(path, "a saved profile"))
    assert isinstance(err, InvalidInputError)
    assert str(err).startswith(f"{path}: {problem}") and "\n" not in str(err)


def test_refuses_a_socket(tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        with pytest.raises(InvalidInputError, match="is a socket, expected a profile"):
            tio.read_input(path, "a profile")


def test_fifo_swapped_in_after_the_stat_is_caught_on_the_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    monkeypatch.setattr(tio, "require_regular_file", lambda path, what: None)  # the race
    err = _no_hang(lambda: tio.read_input(fifo))
    assert isinstance(err, InvalidInputError) and "is a FIFO" in str(err)


def test_over_the_limit_names_size_limit_and_how_to_raise_it(tmp_path: Path) -> None:
    sparse = tmp_path / "sparse"
    with open(sparse, "wb") as handle:
        handle.truncate(4 * GIB)  # sparse: no disk space, no memory
    with pytest.raises(InvalidInputError) as info:
        tio.read_input(sparse, "a saved profile")
    message = str(info.value)
    assert message.startswith(f"{sparse}: 4 GiB, over the 2 GiB input limit for a saved profile")
    assert "--max-input-size 8GiB" in message and "TFPROF_LITE_MAX_INPUT_SIZE=8GiB" in message
    small = tmp_path / "small"
    small.write_bytes(b"x" * 2000)
    with pytest.raises(InvalidInputError, match="2 KiB, over the 1000 B input .*-size 4KiB"):
        tio.read_input(small, limit=1000)
    assert len(tio.read_input(small, limit="2k")) == 2000


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "secret"
    path.write_bytes(b"x")

    def refuse(*args: object) -> int:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(InvalidInputError, match=r"secret: cannot read \(Permission denied\)"):
        tio.read_input(path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_for_real(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_bytes(b"x")
    path.chmod(0)
    with pytest.raises(InvalidInputError, match="Permission denied"):
        tio.read_input(path)


def test_profiler_load_uses_the_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "profile_2"
    profiles.write_profile(path)
    assert len(Profiler.load(path).model) > 0
    size = path.stat().st_size
    with pytest.raises(InvalidInputError, match="input limit for a saved profile"):
        Profiler.load(path, max_input_size=size - 1)
    assert len(Profiler.load(path, max_input_size=size).model) > 0
    monkeypatch.setenv(tio.MAX_INPUT_SIZE_ENV, str(size - 1))
    with pytest.raises(InvalidInputError, match="over the"):
        Profiler.load(str(path))
    with pytest.raises(InvalidOptionError):
        Profiler.load(path, max_input_size="big")
    err = _no_hang(lambda: Profiler.load("/dev/zero"))
    assert isinstance(err, InvalidInputError) and "character device" in str(err)
    (tmp_path / "empty").write_bytes(b"")
    with pytest.raises(InvalidInputError, match="empty, expected a ProfileProto"):
        Profiler.load(tmp_path / "empty")


def test_hlo_dumps_and_monitor_logs_use_the_reader(tmp_path: Path) -> None:
    fifo = tmp_path / "module_0001.cluster_1__X_.2.cpu_after_optimizations.dot"
    os.mkfifo(fifo)
    err = _no_hang(lambda: xla.prepare_dot(fifo))
    assert isinstance(err, xla.HloDumpError) and "is a FIFO" in str(err)
    log = tmp_path / "monitor.jsonl"
    os.mkfifo(log)
    err = _no_hang(lambda: read_runs(tmp_path))
    assert isinstance(err, InvalidInputError) and "is a FIFO" in str(err)
    err = _no_hang(lambda: list(follow(log, idle_timeout=0.1, poll=0.01)))
    assert isinstance(err, InvalidInputError) and "is a FIFO" in str(err)
    text = tmp_path / "m.jsonl"
    text.write_bytes(b'{"event": "start", "run": "r"}\n\xff\xfe not utf-8\n')
    assert read_runs(text).skipped == 1


def _peak_rss_kib(code: str) -> int:
    """The peak RSS (KiB) of a fresh interpreter running ``code``, minus its baseline."""
    script = (
        "import resource, tfprof_lite, tfprof_lite.cli, tfprof_lite.base.reading\n"
        "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        f"{code}\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    return int(out.stdout.split()[-1])


def test_peak_memory_is_one_copy_of_the_file(tmp_path: Path) -> None:
    size = 64 * 1024**2
    path = tmp_path / "random.bin"
    with open(path, "wb") as handle:
        for _ in range(size // 1024**2):
            handle.write(os.urandom(1024**2))
    read = _peak_rss_kib(f"data = tfprof_lite.base.reading.read_input({str(path)!r})")
    assert read * 1024 < 1.3 * size, read
    cli = _peak_rss_kib(
        f"import contextlib, io\nwith contextlib.redirect_stderr(io.StringIO()):\n"
        f"    assert tfprof_lite.cli.main(['scope', {str(path)!r}]) == 1"
    )
    assert cli * 1024 < 2.5 * size, cli
