"""The CLI works where TensorFlow is not installed.

Builds a throwaway venv (once per session) with ``pip install`` of this project
(its ``setup.py``, ``setup.cfg``, ``pyproject.toml``, ``README.md``, ``docs/`` and
``tfprof_lite/`` copied
to a temporary directory, so the work tree gets no ``build/`` files), checks that
TensorFlow cannot be imported there, and runs ``tfprof-lite scope/op/report/diff``,
``overview``, ``timeline``, ``pprof``, ``hlo`` (drawing with ``dot`` and no
``graphviz`` package) and ``help`` (the pages installed with the package) on saved
synthetic profiles and a hand-made HLO dump. Slow (it downloads or reuses pip's cache of protobuf,
numpy and click) but run by default; skipped where venvs cannot be created or the
package index cannot be reached.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.cli import profiles
from tests.unit.test_xla_dot import XLA_STYLE

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
_NETWORK_ERRORS = (
    "Could not find a version",
    "No matching distribution",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Network is unreachable",
)


def _copy_project(target: Path) -> Path:
    target.mkdir()
    for name in ("setup.py", "setup.cfg", "pyproject.toml", "README.md", "MANIFEST.in"):
        shutil.copy2(ROOT / name, target / name)
    for name in ("tfprof_lite", "docs"):
        shutil.copytree(
            ROOT / name,
            target / name,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "_docs"),
        )
    return target


@pytest.fixture(scope="session")
def venv_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` directory of a fresh venv with tfprof-lite and without TensorFlow."""
    root = tmp_path_factory.mktemp("no_tf")
    made = subprocess.run(
        [sys.executable, "-m", "venv", str(root / "venv")], capture_output=True, text=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot create a venv here: {made.stderr.strip()[-300:]}")
    bin_dir = root / "venv" / "bin"
    source = _copy_project(root / "src")
    pip = subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "-q", str(source)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if pip.returncode != 0 and any(e in pip.stderr for e in _NETWORK_ERRORS):
        pytest.skip(f"the package index is unreachable: {pip.stderr.strip()[-300:]}")
    assert pip.returncode == 0, pip.stderr[-2000:]
    return bin_dir


@pytest.fixture(scope="session")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("no_tf_profiles")
    (root / "b").mkdir()
    return (
        profiles.write_profile(root / "profile_2"),
        profiles.write_profile(root / "b" / "profile_2", variant="b"),
    )


def _cli(venv_bin: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv_bin / "tfprof-lite"), *args], capture_output=True, text=True, timeout=120
    )


def test_tensorflow_is_absent(venv_bin: Path) -> None:
    probe = subprocess.run(
        [
            str(venv_bin / "python"),
            "-c",
            "import sys, importlib.util, tfprof_lite.cli;"
            "print(importlib.util.find_spec('tensorflow') is None, 'tensorflow' in sys.modules)",
        ],
        capture_output=True,
        text=True,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == ["True", "False"]


def test_views(venv_bin: Path, saved: tuple[Path, Path]) -> None:
    scope = _cli(venv_bin, "scope", str(saved[0]), "-max_depth", "2", "-select", "micros,bytes")
    assert scope.returncode == 0, scope.stderr
    assert "_TFProfRoot (--/3.46KB, --/113us, --/0us, --/113us)" in scope.stdout
    op = _cli(venv_bin, "op", str(saved[0].parent), "--order-by", "micros")
    assert op.returncode == 0, op.stderr
    rows = [line.split()[0] for line in op.stdout.splitlines() if line[:1].isupper()]
    assert rows.index("MatMul") < rows.index("Relu") < rows.index("Placeholder")


def test_report(venv_bin: Path, saved: tuple[Path, Path], tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    result = _cli(venv_bin, "report", str(saved[0]), "-o", str(target))
    assert result.returncode == 0, result.stderr
    page = target.read_text()
    assert 'id="t-op"' in page and profiles.SCRIPT_NAME not in page


def test_diff(venv_bin: Path, saved: tuple[Path, Path]) -> None:
    result = _cli(venv_bin, "diff", str(saved[0]), str(saved[1]), "--json")
    assert result.returncode == 0, result.stderr
    assert '"status": "added"' in result.stdout


def test_errors(venv_bin: Path, tmp_path: Path) -> None:
    result = _cli(venv_bin, "scope", str(tmp_path / "missing"))
    assert result.returncode == 1
    assert result.stderr.startswith("tfprof-lite: error: ")
    assert "Traceback" not in result.stderr


def test_overview(venv_bin: Path, saved: tuple[Path, Path]) -> None:
    result = _cli(venv_bin, "overview", str(saved[0]), "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["steps"] == 3 and doc["top_ops"][0]["op"] == "MatMul"


def test_memory_and_kernels(venv_bin: Path, saved: tuple[Path, Path]) -> None:
    memory = _cli(venv_bin, "memory", str(saved[0]), "--json")
    assert memory.returncode == 0, memory.stderr
    assert [s["step"] for s in json.loads(memory.stdout)["steps"]] == [0, 1, 2]
    kernels = _cli(venv_bin, "kernels", str(saved[0]))
    assert kernels.returncode == 0, kernels.stderr
    assert kernels.stdout.startswith("no GPU kernel records")


def test_timeline(venv_bin: Path, saved: tuple[Path, Path], tmp_path: Path) -> None:
    target = tmp_path / "steps.json.gz"
    result = _cli(venv_bin, "timeline", str(saved[0]), "-o", str(target))
    assert result.returncode == 0, result.stderr
    events = json.loads(gzip.decompress(target.read_bytes()))["traceEvents"]
    assert {e["args"]["step"] for e in events if e.get("cat") == "Step"} == {0, 1, 2}


def test_pprof(venv_bin: Path, saved: tuple[Path, Path], tmp_path: Path) -> None:
    for view in ("code", "scope"):
        target = tmp_path / f"{view}.pb.gz"
        result = _cli(venv_bin, "pprof", str(saved[0]), "--view", view, "-o", str(target))
        assert result.returncode == 0, result.stderr
        assert gzip.decompress(target.read_bytes())


def test_hlo(venv_bin: Path, tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    (dumps / "module_0001.cluster_1__X_.2.cpu_after_optimizations.dot").write_text(XLA_STYLE)
    listed = _cli(venv_bin, "hlo", str(dumps))
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[1].startswith("module_0001  cluster_1  ")
    target = tmp_path / "m.dot"
    drawn = _cli(venv_bin, "hlo", str(dumps), "-m", "1", "--format", "dot", "-o", str(target))
    assert drawn.returncode == 0, drawn.stderr
    assert target.read_text().startswith("digraph")
    # No graphviz Python package in this venv: svg needs only the dot program.
    svg = _cli(venv_bin, "hlo", str(dumps), "-m", "cluster_1", "-o", str(tmp_path / "m.svg"))
    if shutil.which("dot") is None:
        assert svg.returncode == 1
        assert svg.stderr.count("\n") == 1 and "apt-get install graphviz" in svg.stderr
    else:
        assert svg.returncode == 0, svg.stderr
        assert "</svg>" in (tmp_path / "m.svg").read_text(encoding="utf-8")


def test_help_pages_are_installed(venv_bin: Path, tmp_path: Path) -> None:
    page = _cli(venv_bin, "help", "options")
    assert page.returncode == 0, page.stderr
    assert page.stdout == (ROOT / "docs" / "options.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("command", ["overview", "memory", "kernels", "timeline", "pprof"])
def test_new_commands_fail_in_one_line(venv_bin: Path, tmp_path: Path, command: str) -> None:
    result = _cli(venv_bin, command, str(tmp_path / "missing"))
    assert result.returncode == 1
    assert result.stderr.startswith("tfprof-lite: error: ") and result.stderr.count("\n") == 1
