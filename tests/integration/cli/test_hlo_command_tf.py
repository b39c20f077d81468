"""``tfprof-lite hlo`` on the HLO dumps of a real TF 2.21 JIT session, drawn by ``dot``.

The dumps come from the ``on1`` session of tests/integration/test_xla.py's JIT
script (a dense net trained with ``global_jit_level = ON_1``), run in a new
process so that ``TF_XLA_FLAGS``/``XLA_FLAGS`` apply. This process reads them
without TensorFlow.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.integration.cli.runner import fails, invoke
from tfprof_lite import xla

pytestmark = pytest.mark.tf
test_xla = pytest.importorskip("tests.integration.test_xla")

needs_dot = test_xla.needs_dot
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _on1_script() -> str:
    """The JIT script of test_xla, running only its ``on1`` session."""
    head = test_xla.JIT_SCRIPT.split("\non1()\n", 1)[0]
    return head + "\non1()\n"


@pytest.fixture(scope="module")
def dump_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hlo_cli")
    script = out / "on1.py"
    script.write_text(_on1_script(), encoding="utf-8")
    dumps = out / "dumps"
    env = dict(
        os.environ,
        TF_XLA_FLAGS="--tf_xla_cpu_global_jit",
        XLA_FLAGS=f"--xla_dump_to={dumps} --xla_dump_hlo_as_dot --xla_dump_hlo_as_text",
        TF_CPP_MIN_LOG_LEVEL="2",
        CUDA_VISIBLE_DEVICES="",
    )
    proc = subprocess.run(
        [sys.executable, str(script), str(out)],
        cwd=test_xla.REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dumps


def _train_module(dump_dir: Path) -> xla.HloModuleDump:
    """The optimized .dot dump of the training cluster (the biggest module)."""
    dumps = [d for d in xla.find_dumps(dump_dir, ("dot",)) if d.stage == xla.STAGE_AFTER]
    return max(dumps, key=lambda d: d.path.stat().st_size)


def _svg_nodes(path: Path) -> list[str]:
    ns = {"svg": "http://www.w3.org/2000/svg"}
    root = ET.parse(path).getroot()
    groups = root.findall(".//svg:g[@class='node']", ns)
    return [g.findtext("svg:title", default="", namespaces=ns) for g in groups]


def test_lists_every_module(dump_dir: Path) -> None:
    out = invoke("hlo", dump_dir).output
    lines = out.splitlines()
    assert lines[0].split() == ["module", "cluster", "stages", "formats", "name"]
    modules = {d.module_id: d for d in xla.find_dumps(dump_dir)}
    assert len(lines) == 1 + len(modules)
    for line, (module_id, dump) in zip(lines[1:], sorted(modules.items())):
        assert line.startswith(f"module_{module_id:04d}  {dump.cluster} ")
        assert "before_optimizations, cpu_after_optimizations" in line
        assert line.endswith(dump.module_name)


@needs_dot
def test_renders_a_module_to_svg(dump_dir: Path, tmp_path: Path) -> None:
    module = _train_module(dump_dir)
    target = tmp_path / "train.svg"
    out = invoke("hlo", dump_dir, "--module", module.cluster, "-o", target).output
    assert out == (
        f"Wrote {target} (module_{module.module_id:04d} {module.cluster}, "
        "cpu_after_optimizations)\n"
    )
    nodes = _svg_nodes(target)
    assert len(nodes) > 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.svg"]  # no temp files


@needs_dot
def test_png_into_a_directory_and_node_cap(dump_dir: Path, tmp_path: Path) -> None:
    module = _train_module(dump_dir)
    name = f"module_{module.module_id:04d}"
    invoke("hlo", dump_dir, "-m", name, "--format", "png", "-o", tmp_path)
    png = tmp_path / f"{xla.output_stem(module)}.png"
    assert png.read_bytes().startswith(PNG_SIGNATURE)
    capped = tmp_path / "capped.svg"
    invoke("hlo", dump_dir, "-m", name, "--stage", "before", "--max-nodes", 8, "-o", capped)
    nodes = _svg_nodes(capped)
    assert len(nodes) == 9 and "tfprof_lite_note" in nodes  # 8 kept + the note


@needs_dot
def test_focus_on_an_instruction(dump_dir: Path, tmp_path: Path) -> None:
    module = _train_module(dump_dir)
    names = invoke("hlo", dump_dir, "-m", module.cluster, "--list-instructions").output.splitlines()
    assert names == xla.list_instructions(module)
    focus = next(n for n in names if n.startswith("MatMul") or n.startswith("dot"))
    target = tmp_path / "focus.svg"
    invoke("hlo", dump_dir, "-m", module.cluster, "--focus", focus, "--radius", 1, "-o", target)
    full = tmp_path / "full.svg"
    invoke("hlo", dump_dir, "-m", module.cluster, "--all-nodes", "--expand-fusions", "-o", full)
    assert 1 < len(_svg_nodes(target)) < len(_svg_nodes(full))


def test_dot_text_needs_no_graphviz(dump_dir: Path, tmp_path: Path) -> None:
    module = _train_module(dump_dir)
    target = tmp_path / "m.dot"
    invoke("hlo", dump_dir, "-m", module.cluster, "--format", "dot", "-o", target)
    assert target.read_text(encoding="utf-8") == xla.prepare_dot(module)


def test_errors_are_one_line(
    dump_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = fails(capsys, "hlo", dump_dir, "--module", "cluster_99")
    assert err.startswith(f"tfprof-lite: error: {dump_dir}: no HLO module 'cluster_99' (modules: ")
    err = fails(capsys, "hlo", tmp_path / "missing")
    assert "cannot list the dump directory" in err and "--xla_dump_to=" in err
    err = fails(capsys, "hlo", tmp_path)
    assert "no HLO module dumps in this directory" in err
    module = _train_module(dump_dir)
    err = fails(capsys, "hlo", dump_dir, "-m", module.cluster, "--focus", "no_such_instruction")
    assert "no_such_instruction" in err


def test_missing_dot_names_the_fix(dump_dir: Path, tmp_path: Path) -> None:
    if shutil.which("dot") is None:
        pytest.skip("dot is missing anyway")
    env = dict(os.environ, PATH=str(tmp_path))  # no dot on PATH
    module = _train_module(dump_dir)
    proc = subprocess.run(
        [sys.executable, "-m", "tfprof_lite", "hlo", str(dump_dir), "-m", module.cluster],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stderr == (
        "tfprof-lite: error: Graphviz's dot program is not on PATH; "
        "install Graphviz (Debian/Ubuntu: apt-get install graphviz)\n"
    )
    assert list(tmp_path.iterdir()) == []
