"""The HLO cost model against XLA's own numbers.

* JAX on CPU (``jax_cost_programs.py``, run once per session in a subprocess):
  for every program, ``program_cost`` of the HloProto JAX's profiler recorded in
  the XSpace's ``/host:metadata`` plane agrees with ``compiled.cost_analysis()``
  (FLOPs within 5 %, bytes accessed within 15 %, the acceptance bar; the
  comments in ``jax_cost_programs.py`` say which rules decide each program),
  and equals the cost of the compiled module proto itself.
* The H100 captures in ``shared/data/xspace``: every instruction of
  ``jit_train_step`` gets a cost, and the FLOPs of each matmul (cuBLAS custom
  calls and the dots of Triton GEMM fusions) equal 2 x output x contracted size
  read off the HLO text XLA dumped beside the capture.

Without JAX the JAX tests skip (fail under ``CI=true``), as they do without
the captures.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.integration import jax_cost_programs
from tests.integration.jax_cost_programs import PROGRAM_NAMES
from tests.stepcols import skip_or_fail
from tests.xspace_data import data_dir, jax_file
from tfprof_lite.formats.xspace.wire.decode import decode_xspace_file
from tfprof_lite.programs.cost import OpCost, instruction_cost, program_cost
from tfprof_lite.programs.hlo import Program
from tfprof_lite.proto.xla_program import HloProto, parse_program

FLOPS_TOLERANCE = 0.05
BYTES_TOLERANCE = 0.15


def xspace_programs(path: Path) -> dict[str, list[Program]]:
    """Module name (``jit_f``) -> its programs, from an XSpace's ``/host:metadata``."""
    columns = decode_xspace_file(path)
    planes = [i for i, name in enumerate(columns.plane_name) if name == "/host:metadata"]
    found: dict[str, list[Program]] = {}
    for meta in np.flatnonzero(np.isin(columns.meta_plane, planes)).tolist():
        stats = columns.meta_stat_dict(meta)
        if "Hlo Proto" in stats:
            name = re.sub(r"\(\d+\)$", "", columns.meta_name[meta])
            found.setdefault(name, []).append(Program(parse_program(stats["Hlo Proto"], name)))
    return found


class JaxRun:
    """The subprocess's outputs: XLA's costs and the profiled programs."""

    def __init__(self, outdir: Path) -> None:
        self.outdir = outdir
        self.costs: dict[str, dict[str, Any]] = json.loads((outdir / "costs.json").read_text())
        traces = sorted((outdir / "trace").glob("plugins/profile/*/*.xplane.pb"))
        assert len(traces) == 1, traces
        self.programs = {k: v[0] for k, v in xspace_programs(traces[0]).items()}

    def compiled_program(self, name: str) -> Program:
        """The compiled module proto of ``name``, wrapped as an HloProto."""
        proto = HloProto()
        proto.hlo_module.ParseFromString(
            (self.outdir / self.costs[name]["hlo_module"]).read_bytes()
        )
        return Program(proto)


@pytest.fixture(scope="session")
def jax_run(tmp_path_factory: pytest.TempPathFactory) -> JaxRun:
    """Compile, record and profile every program once (JAX in a subprocess)."""
    if importlib.util.find_spec("jax") is None:
        skip_or_fail("JAX is not installed (pip install 'jax[cpu]')")
    outdir = tmp_path_factory.mktemp("jax_costs")
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    done = subprocess.run(
        [sys.executable, jax_cost_programs.__file__, str(outdir)],
        capture_output=True, text=True, timeout=300, env=env, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.fail(f"the JAX programs failed:\n{done.stderr[-4000:]}")
    return JaxRun(outdir)


def relative(ours: float, theirs: float) -> float:
    """|ours - theirs| relative to theirs (0 when both are 0)."""
    if theirs == 0:
        return 0.0 if ours == 0 else math.inf
    return abs(ours - theirs) / abs(theirs)


@pytest.mark.parametrize("name", PROGRAM_NAMES)
def test_totals_agree_with_xla(jax_run: JaxRun, name: str) -> None:
    xla = jax_run.costs[name]
    program = jax_run.programs.get(xla["module"])
    assert program is not None, f"{xla['module']} not in the XSpace's /host:metadata"
    total = program_cost(program).total
    assert relative(total.flops, xla["flops"]) <= FLOPS_TOLERANCE, (total, xla)
    assert relative(total.transcendentals, xla["transcendentals"]) <= FLOPS_TOLERANCE
    assert relative(total.bytes_accessed, xla["bytes accessed"]) <= BYTES_TOLERANCE, (total, xla)


@pytest.mark.parametrize("name", PROGRAM_NAMES)
def test_xspace_program_is_the_compiled_one(jax_run: JaxRun, name: str) -> None:
    recorded = jax_run.programs[jax_run.costs[name]["module"]]
    assert program_cost(recorded).total == program_cost(jax_run.compiled_program(name)).total


def test_every_running_instruction_has_a_cost(jax_run: JaxRun) -> None:
    for name in PROGRAM_NAMES:
        program = jax_run.programs[jax_run.costs[name]["module"]]
        ops = program_cost(program).ops
        assert {i.name for i in program.entry.instructions} <= set(ops)
        for cost in ops.values():
            assert min(cost.flops, cost.transcendentals, cost.bytes_accessed) >= 0


def test_loop_body_listed_once_per_iteration(jax_run: JaxRun) -> None:
    program = jax_run.programs[jax_run.costs["fori_loop_sin"]["module"]]
    cost = program_cost(program)
    loops = [i for i in program.entry.instructions if i.opcode == "while"]
    assert len(loops) == 1
    # The body's sine runs on the 1000 elements once per iteration; the while
    # (and so the program) counts one iteration, as XLA does.
    assert cost.ops[loops[0].name].transcendentals == 1000.0
    assert cost.total.transcendentals == 1000.0


# --- The H100 captures ---------------------------------------------------------

_DEFINITION = re.compile(r"^\s*(?:ROOT )?%(\S+) = \(?\w+\[([\d,]*)\]")
_OPERANDS = re.compile(r"(?:dot|custom-call)\(%([^,\s)#]+)")
_DOT_DIMS = re.compile(r"lhs_contracting_dims=\{([\d,]*)\}")
_GEMM_DIMS = re.compile(r'"lhs_contracting_dimensions":\[([^\]]*)\]')


def _dims(text: str) -> list[int]:
    return [int(d) for d in re.findall(r"\d+", text)]


def text_matmul_flops(hlo_text: str) -> dict[str, float]:
    """Instruction name -> 2 x output elements x contracted size, for every dot
    and cuBLAS custom call of an HLO text dump."""
    shapes: dict[str, list[int]] = {}
    found: dict[str, float] = {}
    lines = hlo_text.splitlines()
    for line in lines:
        match = _DEFINITION.match(line)
        if match:
            shapes[match.group(1)] = _dims(match.group(2))
    for line in lines:
        match = _DEFINITION.match(line)
        is_dot = " dot(" in line
        is_gemm = "__cublas$" in line and " custom-call(" in line
        if not match or not (is_dot or is_gemm):
            continue
        lhs = shapes[_OPERANDS.search(line).group(1)]  # type: ignore[union-attr]
        dims_match = (_DOT_DIMS if is_dot else _GEMM_DIMS).search(line)
        contracted = math.prod(lhs[d] for d in _dims(dims_match.group(1)))  # type: ignore[union-attr]
        found[match.group(1)] = 2.0 * math.prod(shapes[match.group(1)]) * contracted
    return found


def h100_train_step(case: str) -> tuple[Program, str]:
    """The ``jit_train_step`` program of an H100 capture and its HLO text dump."""
    found = xspace_programs(jax_file(case)).get("jit_train_step", [])
    if len(found) != 1:
        pytest.fail(f"{case}: {len(found)} jit_train_step programs in /host:metadata, not 1")
    program = found[0]
    dumps = sorted((data_dir() / case / "hlo").glob("*after_optimizations.txt"))
    if len(dumps) != 1:
        skip_or_fail(f"{case}: expected one *after_optimizations.txt, found {len(dumps)}")
    return program, dumps[0].read_text()


@pytest.mark.parametrize("case", ["jax_h100_mlp", "jax_h100_transformer_bf16"])
def test_h100_every_instruction_costed(case: str) -> None:
    program, _ = h100_train_step(case)
    cost = program_cost(program)
    assert {i.name for i in program.entry.instructions} <= set(cost.ops)
    for op in cost.ops.values():
        values = (op.flops, op.transcendentals, op.bytes_accessed)
        assert all(math.isfinite(v) and v >= 0 for v in values)
    gemms = [i for i in program.entry.instructions if "__cublas$" in i.custom_call_target]
    assert gemms and all(cost.ops[i.name].flops > 0 for i in gemms)


@pytest.mark.parametrize("case", ["jax_h100_mlp", "jax_h100_transformer_bf16"])
def test_h100_matmul_flops_match_the_hlo_text(case: str) -> None:
    program, text = h100_train_step(case)
    expected = text_matmul_flops(text)
    assert len(expected) > 10
    for name, flops in expected.items():
        assert instruction_cost(program, program.by_name[name]).flops == flops, name


def test_h100_mlp_dense_layers_by_hand() -> None:
    program, _ = h100_train_step("jax_h100_mlp")

    def flops(name: str) -> float:
        return instruction_cost(program, program.by_name[name]).flops

    batch, layers = 512, [(784, 1024), (1024, 1024), (1024, 512), (512, 10)]
    # dense0 forward: cuBLAS, split over K into 2 x 392 and summed after.
    assert flops("custom-call.1") == 2 * batch * 784 * 1024
    # dense1 forward: a Triton GEMM fusion (split K 4 x 256) with the previous
    # layer's bias add and relu fused in (2 x 512*1024 elementwise flops).
    assert flops("gemm_fusion_dot.5") == 2 * batch * 1024 * 1024 + 2 * batch * 1024
    # dense1 weight gradient: [1024,512] x [512,1024] on cuBLAS.
    assert flops("custom-call.0") == 2 * 1024 * 1024 * batch
    # Every matmul of the step: forward, weight gradients, and the input
    # gradients of all layers but the first.
    forward = sum(2 * batch * k * n for k, n in layers)
    inputs = sum(2 * batch * k * n for k, n in layers[1:])
    matmuls = [i for i in program.instructions.values() if i.opcode == "dot"]
    matmuls += [i for i in program.entry.instructions if "__cublas$" in i.custom_call_target]
    assert sum(flops(i.name) for i in matmuls) == 2 * forward + inputs


def test_h100_cudnn_convolution_by_hand() -> None:
    programs = xspace_programs(jax_file("jax_h100_transformer_bf16"))
    convs = [
        (program, i)
        for program in programs.get("jit_conv_general_dilated", [])
        for i in program.entry.instructions
        if i.custom_call_target == "__cudnn$convForward"
    ]
    assert convs
    costs = [instruction_cost(p, i) for p, i in convs]
    # f32[128,16,16,64] * [3,3,64,128] SAME: 16*3 - 2 = 46 valid taps a row.
    assert OpCost(2.0 * 64 * 128 * 128 * 46 * 46, 0.0, 25460736.0) in costs
