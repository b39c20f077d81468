"""The overview's top op types count accelerator time (tfprof's exec time).

An op whose only records are the GPU tracer's (every XLA kernel of a JAX XSpace
capture, a kernel launched outside any op annotation in a TF 2.21 GPU
RunMetadata) has no CPU record, so tfprof's run_count stays 0; its kernels'
time still belongs to its self time, and the overview ranks it by it.
"""

from __future__ import annotations

import pytest

import tfprof_lite
from tests.gpu_tf221 import CUB, KERNELS, REDZONE, tf221_gpu_meta, tf221_graph
from tests.xspace_data import JAX_CASES, jax_file
from tfprof_lite.analysis.overview import TOP_OPS_TITLE, Overview, TopOp, overview, recommend
from tfprof_lite.formats.xspace.read.load import load_model
from tfprof_lite.model.execs import KIND_ACCELERATOR
from tfprof_lite.model.profile import ProfileModel

ALL = 10_000  # every op type


def _mean_device_micros(model: ProfileModel) -> float:
    """The accelerator records' time of a step, averaged over the steps."""
    steps = model.sorted_steps()
    total = 0
    for step in steps:
        execs = model.steps[step]
        total += sum(d for k, d in zip(execs.t_kind, execs.t_dur) if k == KIND_ACCELERATOR)
    return total / len(steps)


@pytest.fixture(scope="module", params=JAX_CASES)
def jax_model(request: pytest.FixtureRequest) -> ProfileModel:
    return load_model(str(jax_file(request.param)))


def test_jax_device_op_types_ranked_by_their_kernels(jax_model: ProfileModel) -> None:
    ops = overview(jax_model, top=ALL).top_ops
    device = [op for op in ops if op.accelerator_micros]
    assert device, "no op type has accelerator time"
    # The op type whose kernels take longest is the matmul, ranked by that time.
    assert device[0].op == "dot_general (matmul)"
    assert device[0].self_micros >= device[0].accelerator_micros > 0
    assert device[0].nodes_run == device[0].nodes
    # The host-side program execution ranks by its CPU time; it runs no kernel.
    (module,) = [op for op in ops if op.op == "XlaModule"]
    assert module.accelerator_micros == 0 and module.self_micros > 0
    # Ranked by self time (CPU + accelerator), most first.
    assert [op.self_micros for op in ops] == sorted((op.self_micros for op in ops), reverse=True)


def test_jax_op_types_hold_every_kernel(jax_model: ProfileModel) -> None:
    ops = overview(jax_model, top=ALL).top_ops
    summed = sum(op.accelerator_micros for op in ops)
    per_step = _mean_device_micros(jax_model)
    nodes = int((jax_model.stats(-1).accelerator_exec_micros > 0).sum())
    # Each node's per-step mean is truncated to whole microseconds (< 1us each).
    assert per_step - nodes <= summed <= per_step
    assert summed > 0.9 * per_step


def test_jax_text_names_the_ranked_time(jax_model: ProfileModel) -> None:
    text = overview(jax_model).to_text()
    table = text.split(TOP_OPS_TITLE + "\n", 1)[1].splitlines()
    assert "CPU + accelerator" in TOP_OPS_TITLE
    assert table[0].split()[:5] == ["op", "type", "self", "time", "accelerator"]
    matmul = next(line for line in table if line.lstrip().startswith("dot_general (matmul)"))
    assert " 0us " not in matmul


def _tf221_ops() -> dict[str, TopOp]:
    prof = tfprof_lite.Profiler(graph=tf221_graph())
    for step in range(2):
        prof.add_step(step, tf221_gpu_meta(step))
    return {op.op: op for op in overview(prof.model, top=ALL).top_ops}


def test_tf_gpu_run_metadata_same_rule() -> None:
    ops = _tf221_ops()
    # Kernels launched outside any op annotation are nodes with kernel records only.
    for kernel in (CUB, REDZONE):
        (op,) = [o for o in ops.values() if kernel.startswith(o.op)]
        dur = next(k.dur for k in KERNELS if k.kernel == kernel)
        assert (op.self_micros, op.accelerator_micros, op.nodes_run) == (dur, dur, 1)
    # A GPU op: its host record (2us per node) plus its kernels.
    matmul = ops["MatMul"]
    kernels = sum(k.dur for k in KERNELS if k.op.endswith(":MatMul"))
    assert (matmul.accelerator_micros, matmul.self_micros) == (kernels, kernels + 2 * 2)
    assert sum(o.accelerator_micros for o in ops.values()) == sum(k.dur for k in KERNELS)


def test_jax_transformer_recommendation_names_the_host_dispatch() -> None:
    # The transformer's accelerator idles two thirds of the step while the host
    # runs the XLA program (XlaModule, no kernel of its own): host-bound, not
    # "compute-bound: XlaModule".
    view = overview(load_model(str(jax_file("jax_h100_transformer_bf16"))))
    assert view.top_ops[0].op == "XlaModule"
    assert view.device_idle is not None and view.device_idle > 0.5
    assert view.recommendation.startswith("host-bound: the accelerator is idle")
    assert "XlaModule" in view.recommendation and "compute-bound" not in view.recommendation


def _page(top: list[TopOp], device_idle: float | None) -> Overview:
    """An overview of one step with the given top ops (no input wait, no idle host)."""
    return Overview(steps=1, avg_step_micros=100.0, device_idle=device_idle, top_ops=top)


def _op(name: str, micros: int, share: float, accel: int = 0) -> TopOp:
    return TopOp(name, micros, share, 0, 0.0, 1, 1, accel)


def test_busy_accelerator_names_the_first_op_that_is_not_the_dispatch() -> None:
    top = [_op("XlaModule", 60, 0.6), _op("dot_general (matmul)", 30, 0.3, accel=30)]
    text = recommend(_page(top, device_idle=0.2))
    assert text.startswith("compute-bound: dot_general (matmul) takes 30.0%")


def test_dispatch_alone_or_without_an_accelerator_stays_compute_bound() -> None:
    only = [_op("XlaModule", 60, 1.0)]
    assert recommend(_page(only, device_idle=0.2)).startswith("compute-bound: XlaModule")
    # No accelerator (a CPU-only XLA program): the host work is the compute.
    assert recommend(_page(only, device_idle=None)).startswith("compute-bound: XlaModule")
