"""The XLA program tools on TensorFlow's XLA clusters: ``jit_compile=True`` and
auto-clustering (a TF1 ``Session`` with ``global_jit_level=ON_1``), profiled on
the CPU in a child process (``tests/tf_xla_capture.py``).

The compiled cluster's HLO is in the profile; its ops are named by the TF op
they came from (``dense/MatMul``), run once per traced run, and their FLOPs are
the layer's; the memory viewer reads its buffer assignment; the op view shows
the cluster's ops, not one node.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tfprof_lite import Profiler
from tfprof_lite.model.xla_programs import programs_of
from tfprof_lite.programs.buffers import program_memory
from tfprof_lite.programs.hlo import Program
from tfprof_lite.programs.op_profile import op_profile
from tfprof_lite.proto.xla_program import parse_program

SCRIPT = Path(__file__).resolve().parents[1] / "tf_xla_capture.py"

pytestmark = pytest.mark.tf


@pytest.fixture(scope="module", params=["jit_compile", "autoclustering"])
def tf_xla(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    pytest.importorskip("tensorflow")
    out = tmp_path_factory.mktemp(request.param)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(out), request.param],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((out / "capture.json").read_text())


def test_cluster_ops_costs_and_runs(tf_xla: dict[str, Any]) -> None:
    model = Profiler.load(tf_xla["xspace"]).model
    xla = programs_of(model)
    assert xla is not None
    profile = op_profile(xla, len(model.steps))
    (program,) = [p for p in profile.programs if p.time_ps > 0]
    assert program.runs == tf_xla["steps"]
    assert program.flops_per_run == pytest.approx(tf_xla["flops"], rel=0.02)
    (matmul,) = [o for o in profile.ops if o.category == "matmul"]
    assert matmul.scope == "dense/MatMul" and matmul.op_type == "MatMul"
    assert matmul.occurrences == tf_xla["steps"]
    assert matmul.flops == tf_xla["flops"] * tf_xla["steps"]
    kinds = {model.ops[model.index[name]] for name in model.index if name.startswith("dense/")}
    assert "MatMul (matmul)" in kinds


def test_cluster_memory(tf_xla: dict[str, Any]) -> None:
    xla = programs_of(Profiler.load(tf_xla["xspace"]).model)
    assert xla is not None
    (record,) = [r for r in xla.programs if r.hlo]
    memory = program_memory(Program(parse_program(record.hlo)), record.program_id, record.module)
    weights = 256 * 512 * 4
    assert memory.total_bytes >= weights and 0 < memory.peak_bytes <= memory.total_bytes
