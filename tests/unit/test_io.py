"""Atomic writes: whole files only, usual permissions, clear errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tfprof_lite.base.writing import write_atomic
from tfprof_lite.errors import TfprofLiteError
from tfprof_lite.outputs.trace_writer import TraceWriter


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_write_atomic_replaces_whole_file_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    write_atomic(target, "new text")
    assert target.read_text() == "new text"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_write_atomic_uses_umask_permissions_not_0600(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "a.bin", b"\x00\x01")
        with TraceWriter(tmp_path / "t.json") as writer:
            writer.write({"ph": "M", "name": "x"})
    finally:
        os.umask(old)
    assert (tmp_path / "a.bin").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "t.json").stat().st_mode & 0o777 == 0o640
    assert _umask() == old


def test_write_atomic_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "out.txt"
    with pytest.raises(TfprofLiteError, match="create the directory"):
        write_atomic(target, "x")
