"""Memory from allocator events and Python call stacks on real XSpace captures.

The JAX H100 samples (``shared/data/xspace``) and a TensorFlow 2.21 CPU capture
made here with the BFC host allocator (``TF_CPU_ALLOCATOR_USE_BFC=true``: the
default CPU allocator writes no allocator events), checked against XProf's
``memory_profile`` (:mod:`tests.xspace_oracle`): per allocator the peak bytes in
use and the number of timeline snapshots (XProf keeps at most
:data:`XPROF_MAX_SNAPSHOTS`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests import xspace_oracle as oracle
from tests.integration.cli.runner import invoke
from tests.integration.xspace_captures import JAX_CASES, REPO_ROOT, jax_sample
from tfprof_lite.analysis.memory import MemoryReport, memory_profile
from tfprof_lite.formats.xspace.read.load import load_model
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.options.options import Options
from tfprof_lite.options.user_code import UserCode
from tfprof_lite.views.query import run_view
from tfprof_lite.views.stats import ACC, CPU

#: XProf samples an allocator's timeline down to this many snapshots.
XPROF_MAX_SNAPSHOTS = 1000

_TF_PROGRAM = textwrap.dedent(
    """
    import os, sys
    os.environ["TF_CPU_ALLOCATOR_USE_BFC"] = "true"
    import tensorflow as tf

    w = tf.Variable(tf.ones([128, 64]))

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))
        w.assign_sub(0.01 * tape.gradient(loss, w))
        return loss

    x = tf.ones([64, 128])
    step(x)
    tf.profiler.experimental.start(sys.argv[1])
    for i in range(4):
        with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
            step(x)
            tf.reduce_sum(tf.nn.relu(tf.matmul(x, w)))
    tf.profiler.experimental.stop()
    """
)


@pytest.fixture(scope="module")
def tf_memory_capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A TF 2.21 CPU capture whose allocator writes memory events."""
    pytest.importorskip("tensorflow")
    root = tmp_path_factory.mktemp("tf_memory")
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run(
        [sys.executable, "-c", _TF_PROGRAM, str(root / "logdir")],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (found,) = sorted(root.glob("logdir/plugins/profile/*/*.xplane.pb"))
    return found


def _per_allocator(report: MemoryReport) -> dict[str, tuple[int, int]]:
    """Allocator -> (highest bytes in use it reported, allocation and free records)."""
    out: dict[str, tuple[int, int]] = {}
    for step in report.steps:
        for alloc in step.allocators:
            peak, count = out.get(alloc.allocator, (0, 0))
            out[alloc.allocator] = (
                max(peak, alloc.max_in_use_bytes),
                count + alloc.allocations + alloc.frees,
            )
    return out


def _agree_with_xprof(path: Path, report: MemoryReport) -> None:
    xprof = oracle.memory_profile(oracle.xprof_tool(path, "memory_profile"))
    ours = _per_allocator(report)
    assert sorted(ours) == sorted(xprof)
    for name, theirs in xprof.items():
        peak, count = ours[name]
        assert peak == theirs.peak_heap_bytes, name
        assert len(theirs.timeline) == min(count, XPROF_MAX_SNAPSHOTS), name


def _code(model: ProfileModel, user_code: UserCode | None = None) -> Any:
    every = (".*",)
    options = Options(
        max_depth=100, select=("accelerator_micros",), order_by="accelerator_micros",
        account_type_regexes=every, start_name_regexes=every, show_name_regexes=every,
        user_code=user_code,
    )  # fmt: skip
    return run_view(model, "code", options)


def _walk(node: Any) -> list[Any]:
    return [node] + [n for child in node.children for n in _walk(child)]


@pytest.mark.parametrize("case", JAX_CASES)
def test_jax_code_view_shows_the_training_script_with_device_time(case: str) -> None:
    model = load_model(str(jax_sample(case).xplane))
    assert model.has_trace
    view = _code(model)
    script = [n for n in _walk(view.root) if n.name.startswith("capture_jax.py:")]
    assert script and script[0].name == "capture_jax.py:126:<module>"
    assert script[0].total[ACC] > 0
    library = [n.name for n in _walk(view.root) if n.name.startswith(("linear.py:", "_combining"))]
    assert library  # flax / optax frames in the full stacks
    user = _walk(_code(model, UserCode()).root)
    assert not [n for n in user if n.name.startswith(("linear.py:", "_combining"))]
    user_script = [n for n in user if n.name.startswith("capture_jax.py:126:<module>")]
    assert user_script[0].total[ACC] == script[0].total[ACC]
    # the program's host execution (dispatch) hangs on the line that calls it
    (site,) = model.traces[model.index["jit_train_step"]] or []
    assert (site.file.rsplit("/", 1)[-1], site.lineno, site.function) == (
        "capture_jax.py",
        126,
        "<module>",
    )
    assert script[0].self_[CPU] > 0


@pytest.mark.parametrize("case", JAX_CASES)
def test_jax_memory_from_allocator_events(case: str) -> None:
    report = memory_profile(load_model(str(jax_sample(case).xplane)))
    assert len(report.steps) == 8
    for step in report.steps:
        assert step.source == "allocation records"
        gpu = {a.allocator: a for a in step.allocators}["GPU_0_bfc"]
        assert gpu.exact and gpu.allocations and gpu.frees
        assert gpu.by_op and gpu.by_op[0].name == "jit_train_step"
        assert gpu.live_bytes + gpu.before_step_bytes == gpu.peak_bytes


@pytest.mark.tf
@pytest.mark.parametrize("case", JAX_CASES)
def test_jax_memory_agrees_with_xprof(case: str) -> None:
    oracle.require_xprof()
    path = jax_sample(case).xplane
    _agree_with_xprof(path, memory_profile(load_model(str(path))))


@pytest.mark.tf
def test_tf_memory_by_op_and_shapes(tf_memory_capture: Path) -> None:
    report = memory_profile(load_model(str(tf_memory_capture)))
    assert len(report.steps) == 4
    allocators = {a.allocator for s in report.steps for a in s.allocators}
    assert allocators == {"bfc_cpu_allocator_for_gpu"}
    ops = {op.name: op for s in report.steps for a in s.allocators for op in a.by_op}
    shapes = {tuple(t.shape or ()) for op in ops.values() for t in op.tensors}
    assert (64, 64) in shapes or (128, 64) in shapes
    assert all(t.dtype == "float32" for op in ops.values() for t in op.tensors)


@pytest.mark.tf
def test_tf_memory_agrees_with_xprof(tf_memory_capture: Path) -> None:
    oracle.require_xprof()
    _agree_with_xprof(tf_memory_capture, memory_profile(load_model(str(tf_memory_capture))))


def test_memory_command_on_an_xspace() -> None:
    path = jax_sample("jax_h100_mlp").xplane
    doc = json.loads(invoke("memory", str(path), "--all-steps", "--json").output)
    steps = doc["steps"]
    assert len(steps) == 8
    names = {a["allocator"] for s in steps for a in s["allocators"]}
    assert names == {"GPU_0_bfc", "xla_gpu_host_bfc"}


def test_report_memory_section_and_memory_checker_read_allocator_events() -> None:
    from tfprof_lite.advisor.memory import MemoryChecker
    from tfprof_lite.report.memory import memory_fragment

    model = load_model(str(jax_sample("jax_h100_mlp").xplane))
    html = memory_fragment(model)
    assert html is not None and "GPU_0_bfc" in html and "jit_train_step" in html
    assert "<svg" in html and "No memory records" not in html
    checker = MemoryChecker()
    checker.configure({})
    summary = checker.check(model) or []  # 8 steps: the summary, steps as ranges
    assert any(line.startswith("GPU_0_bfc: highest peak 68.54MB") for line in summary)
    checker.configure({"per_step": "true"})
    lines = checker.check(model) or []
    assert any(line.startswith("step 22, GPU_0_bfc: peak 68.54MB") for line in lines)
    assert any("live op jit_train_step (XlaModule)" in line for line in lines)


@pytest.mark.tf
def test_tf_capture_without_allocator_events_has_no_memory_in_either_tool() -> None:
    from tests.integration.xspace_captures import tf_capture
    from tfprof_lite.analysis.memory import NO_XSPACE_MEMORY

    oracle.require_xprof()
    path = tf_capture("keras_fit").xplane
    assert oracle.memory_profile(oracle.xprof_tool(path, "memory_profile")) == {}
    report = memory_profile(load_model(str(path)))
    assert not any(step.allocators for step in report.steps)
    assert report.notes == [NO_XSPACE_MEMORY]
