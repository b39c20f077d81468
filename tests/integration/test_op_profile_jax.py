"""``op-profile`` and ``roofline`` on real captures, against what ran.

A JAX CPU training loop profiled in a child process (the ``jax_train``
fixture, ``tests/jax_train_capture.py``:
XLA's own ``cost_analysis()`` and the number of steps recorded beside the
XSpace) and the H100 samples: the program's FLOPs and bytes per run are XLA's
(5% / 15%), its runs are the steps that ran, its ops' FLOPs add up to the
program's, scopes come from ``jax.named_scope``, peaks come from the GPU
plane, and XProf's op profile agrees where it answers (the H100 copies: on
command buffers it has nothing else). The CLI prints the documented JSON, the
SVG parses, and a profile without programs is one error line.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.stepcols import skip_or_fail
from tests.xspace_files import SpaceBuilder
from tests.xspace_kernels import jax_file
from tfprof_lite.cli import cli
from tfprof_lite.formats.xspace.read.load import load_model
from tfprof_lite.model.xla_programs import programs_of
from tfprof_lite.programs.op_profile import op_profile
from tfprof_lite.programs.peaks import gpu_peaks


def _main(*args: str) -> subprocess.CompletedProcess[str]:
    """``tfprof-lite ARGS`` in a child process (errors become one line and an exit code)."""
    return subprocess.run(
        [sys.executable, "-m", "tfprof_lite", *args], capture_output=True, text=True, check=False
    )


def _run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_program_cost_and_runs_are_what_ran(jax_train: dict[str, Any]) -> None:
    xla = programs_of(load_model(jax_train["xspace"]))
    assert xla is not None
    profile = op_profile(xla, jax_train["steps"])
    (step,) = [p for p in profile.programs if p.program == jax_train["module"]]
    assert step.runs == jax_train["steps"]
    assert step.flops_per_run == pytest.approx(jax_train["cost"]["flops"], rel=0.05)
    moved = jax_train["cost"]["bytes accessed"]
    assert step.bytes_accessed_per_run == pytest.approx(moved, rel=0.15)
    ops = [o for o in profile.ops if o.program == jax_train["module"]]
    # every instruction ran once per step: the ops' FLOPs are the program's
    assert sum(o.flops for o in ops) == pytest.approx(step.flops_per_run * step.runs, rel=0.01)
    assert {o.occurrences for o in ops if o.flops} == {jax_train["steps"]}
    assert step.time_ps == sum(o.self_ps for o in ops) > 0
    # the two dense layers' products, by their jax.named_scope
    dense0 = [o for o in ops if "(mlp)/dense0/" in o.scope and o.category == "matmul"]
    batch, width, hidden, _ = 64, 256, 512, 10
    steps = jax_train["steps"]
    assert dense0 and max(o.flops for o in dense0) == 2 * batch * width * hidden * steps
    # a fusion without op_name metadata anywhere inside is shown by its module
    assert all(o.scope.startswith(("jit(train_step)/", "jit_train_step/")) for o in ops)
    assert sum(o.flops for o in ops if o.scope.startswith("jit(")) > 0.99 * step.flops_per_run
    # a CPU has no peaks: nothing is said to bound the ops
    assert profile.peaks.flops == {} and {o.bound_by for o in ops} == {"unknown"}


def test_cli_json_and_given_peaks(jax_train: dict[str, Any]) -> None:
    result = _run("op-profile", jax_train["xspace"], "--json", "--peak-flops", "100G",
                  "--peak-bandwidth", "10G")  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert set(doc["device"]) >= {"name", "peak_flops_per_sec", "peak_bytes_per_sec"}
    assert doc["device"]["peak_flops_per_sec"] == 100e9
    program_keys = {"program", "program_id", "runs", "flops_per_run", "bytes_accessed_per_run",
                    "time_micros"}  # fmt: skip
    assert all(program_keys <= set(p) for p in doc["programs"])
    op_keys = {"program", "program_id", "name", "category", "scope", "occurrences",
               "time_micros", "flops", "bytes_accessed", "flop_rate", "bandwidth",
               "intensity", "bound_by", "peak_fraction"}  # fmt: skip
    assert doc["ops"] and all(op_keys <= set(o) for o in doc["ops"])
    for op in doc["ops"]:
        if op["intensity"] is None or not op["self_time_micros"]:
            continue
        ridge = 100e9 / 10e9
        assert op["bound_by"] == ("compute" if op["intensity"] >= ridge else "memory")
        rate = op["flop_rate"] if op["bound_by"] == "compute" else op["bandwidth"]
        assert op["peak_fraction"] == pytest.approx(rate / (100e9 if ridge <= op["intensity"]
                                                              else 10e9))  # fmt: skip


@pytest.mark.parametrize("by", ["program", "category", "scope"])
def test_cli_text_groupings(jax_train: dict[str, Any], by: str) -> None:
    result = _run("op-profile", jax_train["xspace"], "--by", by)
    assert result.exit_code == 0, result.output
    assert "peaks unknown" in result.output
    assert ("dense0" in result.output) and (f"By {by}:" in result.output)


def test_roofline_outputs(jax_train: dict[str, Any], tmp_path: Path) -> None:
    svg = tmp_path / "roof.svg"
    result = _run("roofline", jax_train["xspace"], "-o", str(svg), "--peak-flops", "1T",
                  "--peak-bandwidth", "20G")  # fmt: skip
    assert result.exit_code == 0, result.output
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg") and root.findall(".//{http://www.w3.org/2000/svg}circle")
    page = tmp_path / "roof.html"
    assert _run("roofline", jax_train["xspace"], "-o", str(page)).exit_code == 0
    assert "<svg" in page.read_text()
    doc = json.loads(_run("roofline", jax_train["xspace"], "--json").output)
    assert {"program", "name", "intensity", "flop_rate", "bound_by"} <= set(doc["points"][0])
    done = _main("roofline", jax_train["xspace"], "-o", str(tmp_path / "x.png"))
    assert done.returncode == 2 and "name a .svg or .html file" in done.stderr


def test_profile_without_programs_is_one_error_line(tmp_path: Path) -> None:
    b = SpaceBuilder()
    b.event(b.host, b.line(b.host, 1, "python"), "train", 0, 100, _r=1, step_num=0)
    path = tmp_path / "plain.xplane.pb"
    path.write_bytes(b.bytes())
    done = _main("op-profile", str(path))
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "holds no compiled XLA programs" in done.stderr
    assert "Traceback" not in done.stderr


def test_h100_peaks_and_matmul_flops() -> None:
    xla = programs_of(load_model(str(jax_file("jax_h100_mlp"))))
    assert xla is not None
    peaks = gpu_peaks(xla.devices[0])
    assert peaks.flops["bf16"] == 132 * 1.98e9 * 4096
    assert peaks.flops["fp32"] == 132 * 1.98e9 * 256
    assert peaks.bytes_per_sec == 3_352_320_000_000
    profile = op_profile(xla, len(load_model(str(jax_file("jax_h100_mlp"))).steps))
    ops = {o.name: o for o in profile.ops if o.program == "jit_train_step"}
    # dense1 forward: [512,1024] x [1024,1024], split four ways (f32[4,512,1024])
    # (and the elementwise work fused with it)
    assert ops["gemm_fusion_dot.5"].flops == pytest.approx(2 * 512 * 1024 * 1024 * 8, rel=0.01)
    assert ops["gemm_fusion_dot.5"].unit == "tf32" and ops["gemm_fusion_dot.5"].occurrences == 8
    assert ops["custom-call.1"].category == "matmul"  # cuBLAS, dense0 forward
    assert ops["custom-call.1"].flops == pytest.approx(2 * 512 * 784 * 1024 * 8, rel=0.01)
    assert all(o.bound_by in ("compute", "memory") for o in ops.values() if o.flops)
    assert profile.steps == 8 and profile.by_headroom()


def test_h100_copies_agree_with_xprof(tmp_path: Path) -> None:
    """XProf's op profile on a command-buffer capture holds the copies only."""
    try:
        from xprof.convert import raw_to_tool_data
    except ImportError:
        skip_or_fail("xprof is not installed (pip install xprof)")
    copy = tmp_path / "vm.xplane.pb"
    shutil.copy(jax_file("jax_h100_mlp"), copy)
    data, _ = raw_to_tool_data.xspace_to_tool_data(
        [str(copy)], "op_profile", {"use_saved_result": False}
    )
    theirs: dict[str, float] = {}

    def walk(node: dict[str, Any]) -> None:
        for child in node.get("children", []):
            name, metrics = child.get("name", ""), child.get("metrics", {})
            if not child.get("children") and name not in ("IDLE", ""):
                theirs[name] = theirs.get(name, 0.0) + float(metrics.get("rawTime", 0)) / 1e6
            walk(child)

    walk(json.loads(data)["byProgram"])
    xla = programs_of(load_model(str(copy)))
    assert xla is not None
    ours: dict[str, float] = {}
    for op in op_profile(xla).ops:
        ours[op.name] = ours.get(op.name, 0.0) + op.self_ps / 1e6
    assert theirs and set(theirs) <= set(ours)
    for name, micros in theirs.items():
        assert ours[name] == pytest.approx(micros, rel=0.01)


def _xprof_hlo_stats(path: Path) -> list[dict[str, Any]]:
    """XProf's hlo_stats rows (after its tool listing, which extracts the HLO)."""
    try:
        from xprof.convert import raw_to_tool_data
    except ImportError:
        skip_or_fail("xprof is not installed (pip install xprof)")
    raw_to_tool_data.xspace_to_tool_names([str(path)])
    data, _ = raw_to_tool_data.xspace_to_tool_data(
        [str(path)], "hlo_stats", {"use_saved_result": False}
    )
    table = json.loads(data)
    names = [c["id"] for c in table["cols"]]
    return [dict(zip(names, [c.get("v") for c in row["c"]], strict=False)) for row in table["rows"]]


def test_xprof_hlo_stats_second_opinion(jax_train: dict[str, Any], tmp_path: Path) -> None:
    """Where XProf's hlo_stats has rows (the H100 copies) they agree with ours;
    on a JAX CPU capture it has none, and ours has every op."""
    gpu = tmp_path / "gpu" / "vm.xplane.pb"
    gpu.parent.mkdir()
    shutil.copy(jax_file("jax_h100_transformer_bf16"), gpu)
    rows = _xprof_hlo_stats(gpu)
    xla = programs_of(load_model(str(gpu)))
    assert xla is not None and rows
    ours = op_profile(xla)
    module = {str(p.program_id): p.program for p in ours.programs}
    for row in rows:
        # XProf counts programs of one module name (two jit_stage here) as one
        mine = [o for o in ours.ops if o.name == row["hlo_op_name"]
                and o.program == module[str(row["program_id"])]]  # fmt: skip
        assert sum(o.occurrences for o in mine) == row["occurrences"]
        micros = sum(o.self_ps for o in mine) / 1e6
        assert micros == pytest.approx(row["total_self_time"], rel=0.01)
    cpu = tmp_path / "cpu" / "host.xplane.pb"
    cpu.parent.mkdir()
    shutil.copy(jax_train["xspace"], cpu)
    assert _xprof_hlo_stats(cpu) == []
    xla = programs_of(load_model(str(cpu)))
    assert xla is not None and len(op_profile(xla).ops) > 10
