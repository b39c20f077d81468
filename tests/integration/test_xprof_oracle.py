"""What XProf 2.24.2 finds on real XSpace files: the baseline for the agreement tests.

Every fact is read from XProf's real output (tests/xspace_oracle.py) on the TF 2.21
CPU captures made here (tests/integration/xspace_captures.py) and on the JAX H100
samples, and cross-checked against the file itself (read with TensorFlow's
``xplane_pb2``, tests/integration/xplane_tf.py) or against what the host measured.
docs/xspace_xprof.md ("How XProf reads these files") describes the same facts.
"""

from __future__ import annotations

import pytest

from tests import xspace_oracle as oracle
from tests.integration import xplane_tf
from tests.integration.xspace_captures import (
    INPUT_SLEEP_S,
    JAX_CASES,
    STEPS,
    XCapture,
    jax_sample,
    tf_capture,
)

pytestmark = pytest.mark.tf


@pytest.fixture(autouse=True)
def _xprof() -> None:
    """Skip (fail under CI=true) before any capture is made when XProf is missing."""
    oracle.require_xprof()


#: XProf's kernel-stats totals on the JAX samples: (rows, kernel launches).
JAX_KERNELS = {"jax_h100_mlp": (37, 304), "jax_h100_transformer_bf16": (96, 2952)}


def _overview(capture: XCapture) -> oracle.Overview:
    return oracle.overview(oracle.xprof_tool(capture.xplane, "overview_page"))


# ---------------------------------------------------------------- steps


@pytest.mark.parametrize("case", ["keras_fit", "session_plain"])
def test_no_step_found_without_root_markers(case: str) -> None:
    """Keras 3 fit and an unmarked Session loop: no steps, the "no step marker" warning."""
    capture = tf_capture(case)
    found = _overview(capture)
    assert len(capture.traced_steps) >= 5  # the host ran several steps under the profiler
    assert found.steps == ()
    assert not found.steps_found
    assert ("WARNING", found.diagnostics[0][1]) == found.diagnostics[0]
    assert oracle.NO_STEP_MARKER in found.diagnostics[0][1]
    assert found.input_conclusion.startswith("No step time measured")
    assert found.hardware_type == "CPU_ONLY"
    assert xplane_tf.step_markers(capture.xplane) == {}


def test_keras_batches_are_marked_without_root_stat() -> None:
    """Keras marks each profiled batch as "Profiled batch" with step_num but no ``_r``."""
    capture = tf_capture("keras_fit")
    batches = [
        e for e in xplane_tf.events(capture.xplane, "/host:CPU") if e.name == "Profiled batch"
    ]
    assert sorted(int(e.stats["step_num"]) for e in batches) == [
        s.step for s in capture.traced_steps
    ]
    assert all("_r" not in e.stats for e in batches)


@pytest.mark.parametrize("case", ["session_markers", "input_bound"])
def test_marked_tf_steps_lose_the_first_and_the_last(case: str) -> None:
    """With ``Trace("train", step_num=i, _r=1)``: steps 1..6 of 0..7, each the marker's duration."""
    capture = tf_capture(case)
    found = _overview(capture)
    markers = xplane_tf.step_markers(capture.xplane)
    assert sorted(markers) == [s.step for s in capture.traced_steps] == list(range(STEPS))
    assert found.steps_found
    assert found.diagnostics == ()
    assert [s.name for s in found.steps] == [f"train {i}" for i in range(1, STEPS - 1)]
    host = {s.step: s.wall_s * 1e6 for s in capture.steps}
    for step in found.steps:
        number = int(step.name.split()[1])
        assert step.micros == pytest.approx(markers[number].duration_ps / 1e6, abs=0.002)
        # the marker encloses the host's own timer: slightly longer, never shorter
        assert host[number] <= step.micros < host[number] + 5000


def test_input_bound_pipeline_is_reported_input_bound() -> None:
    """The sleeping tf.data pipeline: HIGHLY input-bound, input the largest part of each step."""
    found = _overview(tf_capture("input_bound"))
    assert "HIGHLY input-bound" in found.input_conclusion
    for step in found.steps:
        assert step.step_ms >= INPUT_SLEEP_S * 1000
        assert max(step.parts_ms, key=step.parts_ms.__getitem__) == "infeedTimeMs"
        assert step.parts_ms["infeedTimeMs"] > 0.5 * step.step_ms


@pytest.mark.parametrize("case", JAX_CASES)
def test_jax_six_of_eight_traced_steps(case: str) -> None:
    """JAX (StepTraceAnnotation): 8 traced steps, XProf shows 6 named "1".."6", the
    traced steps less the first and the last, timed close to the host's loop."""
    capture = jax_sample(case)
    found = _overview(capture)
    markers = xplane_tf.step_markers(capture.xplane)
    traced = [s.step for s in capture.traced_steps]
    assert sorted(markers) == traced and len(traced) == 8
    assert found.steps_found
    assert [s.name for s in found.steps] == [str(i) for i in range(1, 7)]
    host = [capture.steps[n].wall_s * 1e6 for n in traced[1:-1]]
    assert sum(s.micros for s in found.steps) == pytest.approx(sum(host), rel=0.03)
    for step, wall in zip(found.steps, host):
        assert step.micros == pytest.approx(wall, rel=0.1)
    # longer than the host marker, no longer than from this marker's start to the next's
    for step, number in zip(found.steps, traced[1:-1]):
        marker, following = markers[number], markers[number + 1]
        assert marker.duration_ps / 1e6 < step.micros
        assert step.micros <= (following.offset_ps - marker.offset_ps) / 1e6


# ---------------------------------------------------------------- kernels


@pytest.mark.parametrize("case", JAX_CASES)
def test_jax_kernel_rows_are_the_files_kernels(case: str) -> None:
    """One row per (kernel, grid, block, registers, shared memory); counts and totals
    equal the file's kernel events; every row's op is ``XlaModule``."""
    capture = jax_sample(case)
    rows = oracle.kernel_rows(oracle.xprof_tool(capture.xplane, "kernel_stats"))
    groups = xplane_tf.kernel_groups(capture.xplane)
    theirs = {
        (r.kernel, r.grid, r.block, r.registers_per_thread, r.shared_mem_bytes): r for r in rows
    }
    assert len(theirs) == len(rows)
    assert set(theirs) == set(groups)
    for key, (count, total_us) in groups.items():
        assert theirs[key].count == count
        assert theirs[key].total_us == pytest.approx(total_us, abs=0.01)
    assert (len(rows), sum(r.count for r in rows)) == JAX_KERNELS[case]
    assert {r.op_name for r in rows} == {"XlaModule"}


def test_no_kernel_rows_on_cpu() -> None:
    """A CPU-only TF capture has no kernel rows (the table is there, empty)."""
    capture = tf_capture("session_markers")
    assert oracle.kernel_rows(oracle.xprof_tool(capture.xplane, "kernel_stats")) == []


# ---------------------------------------------------------------- framework ops


@pytest.mark.parametrize("case", ["keras_fit", "session_markers", "session_plain", "input_bound"])
def test_tf_framework_ops_are_the_files_op_events(case: str) -> None:
    """Host rows = the host events named ``<op>:<type>`` (same counts, same total time,
    every traced step counted), plus ``Dataset`` rows for the tf.data iterators."""
    capture = tf_capture(case)
    rows = oracle.framework_op_rows(oracle.xprof_tool(capture.xplane, "framework_op_stats"))
    assert {r.host_or_device for r in rows} == {"Host"}
    ops = {(r.op_name, r.op_type): r for r in rows if r.op_type != "Dataset"}
    in_file = xplane_tf.tf_op_events(capture.xplane)
    assert set(ops) == set(in_file)
    for key, (count, total_us) in in_file.items():
        assert ops[key].count == count
        assert ops[key].total_us == pytest.approx(total_us, abs=0.01)
    datasets = [r.op_name for r in rows if r.op_type == "Dataset"]
    assert all(name.startswith("Iterator::") for name in datasets)
    assert bool(datasets) == (case in ("keras_fit", "input_bound"))


def test_session_ops_counted_in_every_traced_step() -> None:
    """The Session graph's ops run once a step: count = 8 traced steps, dropped ones too."""
    capture = tf_capture("session_markers")
    rows = oracle.framework_op_rows(oracle.xprof_tool(capture.xplane, "framework_op_stats"))
    assert {r.count for r in rows} == {STEPS}
    assert ("dense/MatMul", "_MklMatMul") in {(r.op_name, r.op_type) for r in rows}


@pytest.mark.parametrize("case", JAX_CASES)
def test_jax_framework_ops_leave_the_kernels_out(case: str) -> None:
    """On the JAX GPU runs the device rows hold only ``copy.1``: no ``XlaModule`` row,
    and the kernels' time (all under ``hlo_op=command_buffer_N``) is in no row."""
    capture = jax_sample(case)
    rows = oracle.framework_op_rows(oracle.xprof_tool(capture.xplane, "framework_op_stats"))
    device = [r for r in rows if r.host_or_device == "Device"]
    host = [r for r in rows if r.host_or_device == "Host"]
    assert [(r.op_type, r.op_name, r.count) for r in device] == [("Unknown", "copy.1", 16)]
    assert [(r.op_type, r.op_name) for r in host] == [
        ("GetEventForComputeStreamSyncPoint", "ThenExecuteCallback")
    ]
    kernel_us = sum(total for _, total in xplane_tf.kernel_groups(capture.xplane).values())
    assert sum(r.self_us for r in device) < 0.05 * kernel_us
    hlo_ops = {
        str(e.stats.get("hlo_op", ""))
        for e in xplane_tf.events(capture.xplane, "/device:GPU")
        if "kernel_details" in e.stats
    }
    assert hlo_ops and all(op.startswith("command_buffer") for op in hlo_ops)


# ---------------------------------------------------------------- memory and trace


@pytest.mark.parametrize("case", JAX_CASES)
def test_jax_memory_peaks_are_the_files(case: str) -> None:
    """Allocators and peaks equal the file's allocator events' largest values."""
    capture = jax_sample(case)
    profile = oracle.memory_profile(oracle.xprof_tool(capture.xplane, "memory_profile"))
    peaks = xplane_tf.memory_peaks(capture.xplane)
    assert set(profile) == set(peaks) == {"GPU_0_bfc", "xla_gpu_host_bfc"}
    for name, (allocated, in_use) in peaks.items():
        assert profile[name].peak_heap_bytes == allocated
        assert profile[name].peak_bytes_lifetime == in_use
        assert max(bytes_ for _, bytes_ in profile[name].timeline) <= allocated


def test_tf_cpu_capture_has_no_memory_profile() -> None:
    """TF 2.21 on CPU writes no allocator events: XProf's memory profile is empty."""
    capture = tf_capture("session_markers")
    assert oracle.memory_profile(oracle.xprof_tool(capture.xplane, "memory_profile")) == {}
    assert xplane_tf.memory_peaks(capture.xplane) == {}


def test_trace_viewer_shows_all_eight_marked_steps() -> None:
    """The trace viewer keeps every ``train`` marker, renamed ``train N``, the two
    steps the overview drops included."""
    capture = tf_capture("session_markers")
    trace = oracle.trace_events(oracle.xprof_tool(capture.xplane, "trace_viewer"))
    steps = sorted(e.args["step_num"] for e in trace if e.name.startswith("train "))
    assert steps == [str(i) for i in range(STEPS)]


@pytest.mark.parametrize("case", JAX_CASES)
def test_trace_viewer_keeps_every_gpu_event(case: str) -> None:
    """Every GPU event of the file is on a ``Stream #`` thread of the trace."""
    capture = jax_sample(case)
    trace = oracle.trace_events(oracle.xprof_tool(capture.xplane, "trace_viewer"))
    on_streams = [
        e for e in trace if e.process == "/device:GPU:0" and e.thread.startswith("Stream #")
    ]
    assert len(on_streams) == sum(1 for _ in xplane_tf.events(capture.xplane, "/device:GPU"))
