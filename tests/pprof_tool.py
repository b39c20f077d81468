"""The real ``pprof`` tool for the tests (``../shared/tools/install-pprof.sh``
builds it into ``.tools/pprof``; CI installs it): found, run, and its
``-traces`` output read back into frames."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

_LABEL = re.compile(r"^\s+\w+:\s")  # a sample's label line (op:, node:, device:)
_VALUE = re.compile(r"^[0-9][0-9.]*[a-zA-Zµ]*$")  # a sample's value (676us, 1.45ms, 3)


def pprof_tool() -> str:
    """The pprof binary (the test is skipped when it is not installed)."""
    here = Path(__file__).resolve().parents[1] / ".tools" / "pprof"
    found = shutil.which("pprof") or (str(here) if here.exists() else None)
    if found is None:
        pytest.skip("the pprof tool is not installed (run shared/tools/install-pprof.sh)")
    return found


def run_pprof(*args: str) -> str:
    """pprof's stdout for ``args`` (it must succeed)."""
    env = dict(os.environ, PPROF_TMPDIR=os.environ.get("TMPDIR", "/tmp"))
    done = subprocess.run(
        [pprof_tool(), *args], capture_output=True, text=True, check=True, env=env, timeout=120
    )
    return done.stdout


def traced_frames(path: Path) -> set[str]:
    """Every frame (function name) of every sample's stack, as ``pprof -traces``
    prints them."""
    frames: set[str] = set()
    for line in run_pprof("-traces", str(path)).splitlines():
        if not line.startswith(" ") or _LABEL.match(line):
            continue
        words = line.split()
        if len(words) > 1 and _VALUE.match(words[0]):
            words = words[1:]
        frames.add(" ".join(words))
    return frames
