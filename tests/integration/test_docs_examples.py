"""Every ``console`` example in the docs runs, and prints what the page shows.

The profiles are made the way a user makes them: ``examples/quickstart.py`` (what
``make run`` runs) in a fresh working directory, which leaves ``tfprof_out/``. Each
page then gets its own copy of that directory and its commands run there one after
the other, through ``bash`` (pipes and redirections work as on a terminal), with
``tfprof-lite`` on ``PATH`` running this checkout and ``pprof`` from ``.tools/``.
The shown and real outputs are compared after :func:`tests.docs_examples.normalise`.

``TFPROF_LITE_REGEN_DOCS=1`` (``make docs``) rewrites the shown outputs from these
runs instead of failing, then checks the rewritten page.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs_examples import Block, check_page, parse_page, regenerate_page

pytestmark = pytest.mark.tf

if importlib.util.find_spec("tensorflow") is None:
    pytest.skip("TensorFlow is not installed", allow_module_level=True)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "quickstart.py"
REGEN = os.environ.get("TFPROF_LITE_REGEN_DOCS") == "1"


def _pages() -> list[Path]:
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    return [p for p in pages if parse_page(p.read_text(encoding="utf-8"))]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory where ``python examples/quickstart.py`` has run (``tfprof_out/``)."""
    cwd = tmp_path_factory.mktemp("project")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    for name in ("TF_XLA_FLAGS", "XLA_FLAGS"):
        env.pop(name, None)
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return cwd


@pytest.fixture(scope="module")
def shell_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of the commands: ``tfprof-lite`` (this checkout) and ``pprof``
    first on PATH, no colour, unbuffered output so stdout and stderr interleave as
    they are written."""
    bin_dir = tmp_path_factory.mktemp("bin")
    shim = bin_dir / "tfprof-lite"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m tfprof_lite "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    path = [str(bin_dir), str(REPO / ".tools"), os.environ.get("PATH", "")]
    env = dict(os.environ, PATH=os.pathsep.join(path), NO_COLOR="1", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.update(COLUMNS="100", TERM="dumb", TF_CPP_MIN_LOG_LEVEL="2")
    return env


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_page_examples(
    page: Path, project: Path, shell_env: dict[str, str], tmp_path: Path
) -> None:
    cwd = tmp_path / "work"
    shutil.copytree(project, cwd, symlinks=True)
    env = dict(shell_env)

    def missing_program(block: Block) -> bool:
        return any(shutil.which(program, path=env["PATH"]) is None for program in block.needs)

    def run(command: str) -> str:
        proc = subprocess.run(
            ["bash", "-c", command],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=300,
        )
        return proc.stdout.replace(f"{cwd}/", "").replace(str(cwd), ".")

    text = page.read_text(encoding="utf-8")
    if REGEN:
        new = regenerate_page(text, run, skip=missing_program)
        if new != text:
            page.write_text(new, encoding="utf-8")
        text = new
        shutil.rmtree(cwd)
        shutil.copytree(project, cwd, symlinks=True)
    problems = check_page(text, run, skip=missing_program)
    where = page.relative_to(REPO)
    assert not problems, (
        f"{where} no longer matches the real output (rewrite it with `make docs`):\n"
        + "\n".join(problems)
    )
