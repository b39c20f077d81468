"""The XLA programs of an XSpace on the model: their ops' times over the whole window.

Hand-made XSpaces (host op events of an XLA program on a CPU, with a ``while``
that holds its body's ops, a run outside any step) and the H100 samples (GPU
kernels through command buffers): every event counts, nested events are not
counted twice, occurrences and runs are right, and a program's op time equals
the kernel time of its events in the file.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.xspace_files import SpaceBuilder, stat
from tests.xspace_kernels import JAX_CASES, jax_file
from tfprof_lite.formats.xspace.read.load import load_model, model_from_bytes
from tfprof_lite.formats.xspace.wire.decode import decode_xspace_file
from tfprof_lite.model.xla_programs import programs_of
from tfprof_lite.proto import xla_program as xp


def _module(name: str, ops: list[tuple[str, str]]) -> bytes:
    proto = xp.HloProto()
    module = proto.hlo_module
    module.name = name
    module.entry_computation_id = 1
    comp = module.computations.add(name="main", id=1)
    for at, (op, opcode) in enumerate(ops, start=1):
        instr = comp.instructions.add(name=op, opcode=opcode, id=at)
        instr.shape.element_type = 11
        instr.shape.dimensions.extend([4, 4])
        instr.metadata.op_name = f"jit(f)/layer/{op}"
    comp.root_id = len(ops)
    return bytes(proto.SerializeToString())


def _space(runs: list[int], step_runs: int) -> bytes:
    """A CPU run of program 7: ``dot`` then a ``while`` holding two ``add`` ops,
    once per entry of ``runs`` (its run_id), the first ``step_runs`` inside a
    step marker each."""
    b = SpaceBuilder()
    meta = b.space.planes.add(id=1, name="/host:metadata")
    meta.event_metadata[1].id = 1
    meta.event_metadata[1].name = "jit_f(7)"
    names: dict[str, int] = {}
    hlo = _module("jit_f", [("dot", "dot"), ("while", "while"), ("add", "add")])
    meta.event_metadata[1].stats.append(stat(meta, names, "Hlo Proto", bytes_value=hlo))
    meta.event_metadata[1].stats.append(stat(meta, names, "program_id", int64_value=7))
    python = b.line(b.host, 1, "python")
    worker = b.line(b.host, 2, "tf_XLAPjRtCpuClient/1")
    common = {"hlo_module": "jit_f", "program_id": 7}
    for i, run in enumerate(runs):
        t = 1000 + i * 1000
        if i < step_runs:
            b.event(b.host, python, "train", t - 10, 900, _r=1, step_num=i)
        b.event(b.host, worker, "dot", t, 100, hlo_op="dot", run_id=run, **common)
        b.event(b.host, worker, "while", t + 100, 300, hlo_op="while", run_id=run, **common)
        for k in range(2):
            b.event(b.host, worker, "add", t + 150 + 100 * k, 50, hlo_op="add", run_id=run,
                    **common)  # fmt: skip
    return b.bytes()


def _rows(xla: object) -> dict[str, tuple[int, int, int]]:
    assert xla is not None
    ops = xla.ops  # type: ignore[attr-defined]
    return {
        name: (int(ops.occurrences[i]), int(ops.time_ps[i]) // 1000, int(ops.self_ps[i]) // 1000)
        for i, name in enumerate(ops.name)
    }


def test_cpu_ops_count_every_event_once() -> None:
    model = model_from_bytes(_space([11, 12, 13], step_runs=2), "hand.xplane.pb")
    xla = programs_of(model)
    assert xla is not None
    assert [(p.program_id, p.module) for p in xla.programs] == [(7, "jit_f")]
    # the third run is outside any step and still counts; the while's body is
    # taken out of the while's self time
    assert _rows(xla) == {"dot": (3, 300, 300), "while": (3, 900, 600), "add": (6, 300, 300)}
    assert xla.runs.tolist() == [3]
    assert xla.program_time_ps().tolist() == [(300 + 600 + 300) * 1000]
    assert set(xla.ops.device.tolist()) == {-1}
    assert xla.devices == []


def test_runs_without_run_ids_are_the_usual_occurrence_count() -> None:
    # TensorFlow's XLA launches give run_id -1: not an id
    model = model_from_bytes(_space([-1, -1, -1, -1], step_runs=0), "hand.xplane.pb")
    xla = programs_of(model)
    assert xla is not None
    assert xla.runs.tolist() == [4]
    assert _rows(xla)["add"][0] == 8


def test_profile_without_programs_has_none() -> None:
    b = SpaceBuilder()
    b.event(b.host, b.line(b.host, 1, "python"), "train", 0, 100, _r=1, step_num=0)
    assert programs_of(model_from_bytes(b.bytes(), "plain.xplane.pb")) is None
    assert programs_of(object()) is None


@pytest.mark.parametrize("case", JAX_CASES)
def test_h100_program_time_is_its_kernel_time(case: str) -> None:
    path = str(jax_file(case))
    xla = programs_of(load_model(path))
    assert xla is not None
    cols = decode_xspace_file(path)
    gpu = [p for p, name in enumerate(cols.plane_name) if name.startswith("/device:GPU")]
    kernel_ps: dict[str, int] = {}
    for e in np.flatnonzero(np.isin(cols.event_plane(), gpu)).tolist():
        stats = cols.event_stat_dict(e)
        module = stats.get("hlo_module")
        if module:
            kernel_ps[module] = kernel_ps.get(module, 0) + int(cols.event_duration_ps[e])
    times = xla.program_time_ps()
    ours: dict[str, int] = {}
    for row, record in enumerate(xla.programs):
        ours[record.module] = ours.get(record.module, 0) + int(times[row])
    assert {m: t for m, t in ours.items() if t} == kernel_ps
    step = [r for r, p in enumerate(xla.programs) if p.module == "jit_train_step"]
    assert [int(xla.runs[r]) for r in step] == [8]
    (caps,) = xla.devices
    assert (caps.model, caps.cores, caps.cc_major) == ("NVIDIA H100 80GB HBM3", 132, 9)
    assert caps.clock_khz == 1_980_000 and caps.memory_bandwidth == 3_352_320_000_000


def test_h100_kernel_outside_steps_counts() -> None:
    """The mlp sample's gemm_fusion_dot.2 ran 8 times in the file (XProf's
    kernel_stats: 8 runs, 102.5 us), one of them outside the steps."""
    xla = programs_of(load_model(str(jax_file("jax_h100_mlp"))))
    assert xla is not None
    at = xla.ops.name.index("gemm_fusion_dot.2")
    assert int(xla.ops.occurrences[at]) == 8
    assert int(xla.ops.time_ps[at]) == pytest.approx(101.6e6, rel=0.01)
