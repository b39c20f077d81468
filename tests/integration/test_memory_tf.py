"""Memory profile, MemoryChecker, kernel statistics and the report's memory
section on real TF 2.21 captures (CPU: no GPU here)."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest

import tfprof_lite
from tfprof_lite.analysis.kernels import kernel_stats
from tfprof_lite.analysis.memory import memory_profile
from tfprof_lite.report import render_html

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1

#: Layer widths of the dense model; the input batch is 512x512 float32.
WIDTHS = (1024, 2048, 256)
STEPS = 2


@functools.cache
def dense_metas() -> tuple[tf.Graph, list[tf1.RunMetadata]]:
    """Three dense layers (MatMul + bias + Relu) on a 512x512 batch, traced twice."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [512, 512], name="x")
        h = x
        for i, width in enumerate(WIDTHS):
            with tf1.variable_scope(f"dense{i}"):
                w = tf1.get_variable("w", [h.shape[1], width])
                b = tf1.get_variable("b", [width], initializer=tf1.zeros_initializer())
                h = tf.nn.relu(tf.matmul(h, w) + b)
        out = tf.reduce_sum(h, name="loss")
    feed = {x: np.ones((512, 512), np.float32)}
    metas = []
    with tf1.Session(graph=graph) as sess:
        sess.run(tf1.global_variables_initializer())
        sess.run(out, feed)  # warm-up, untraced
        for _step in range(STEPS):
            meta = tf1.RunMetadata()
            opts = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
            sess.run(out, feed, options=opts, run_metadata=meta)
            metas.append(meta)
    return graph, metas


@functools.cache
def dense_profile() -> tfprof_lite.Profiler:
    """:func:`dense_metas` in a profiler, one step per trace."""
    graph, metas = dense_metas()
    prof = tfprof_lite.Profiler(graph)
    for step, meta in enumerate(metas):
        prof.add_step(step, meta)
    return prof


def reported_in_use(meta: tf1.RunMetadata, allocator: str) -> int:
    """The largest ``allocator_bytes_in_use`` TF recorded for ``allocator`` in a step
    (0 unless the allocator keeps statistics, which depends on the process)."""
    return max(
        (
            memory.allocator_bytes_in_use
            for dev in meta.step_stats.dev_stats
            for node in dev.node_stats
            for memory in node.memory
            if memory.allocator_name == allocator
        ),
        default=0,
    )


def test_peak_timeline_and_live_set() -> None:
    report = memory_profile(dense_profile().model)
    assert [s.step for s in report.steps] == list(range(STEPS))
    assert report.notes == []
    _graph, metas = dense_metas()
    for step, meta in zip(report.steps, metas):
        assert step.source == "allocation records" and step.allocators
        for alloc in step.allocators:
            assert alloc.exact
            assert alloc.peak_bytes == max(b for _, b in alloc.timeline)
            assert (alloc.peak_micros, alloc.peak_bytes) in alloc.timeline
            # The live set explains the peak; the rest predates the step.
            assert alloc.live_bytes + alloc.before_step_bytes == alloc.peak_bytes
            assert 0 <= alloc.before_step_bytes <= alloc.baseline_bytes
        main = step.allocators[0]
        assert main.peak_bytes >= 4 * 512 * (WIDTHS[0] + WIDTHS[1])
        shapes = {tuple(t.shape or ()) for op in main.by_op for t in op.tensors}
        # The activations of the two wide layers are live together at the peak.
        assert {(512, WIDTHS[0]), (512, WIDTHS[1])} <= shapes
        big = next(op for op in main.by_op if any(t.shape == [512, WIDTHS[1]] for t in op.tensors))
        assert big.name.startswith("dense1/") and big.bytes == 4 * 512 * WIDTHS[1]
        assert main.by_scope[0].scope == "dense1"
        # What the allocator itself reported (its statistics are off in some processes).
        assert main.max_in_use_bytes == reported_in_use(meta, main.allocator)
        if main.max_in_use_bytes:
            assert main.max_in_use_bytes >= main.peak_bytes
    text = report.to_text()
    assert f"float32[512,{WIDTHS[1]}]" in text
    json.dumps(report.to_dict())


def test_memory_checker_in_default_advice(capsys: pytest.CaptureFixture[str]) -> None:
    advice = dense_profile().advise(dict(tfprof_lite.ALL_ADVICE))
    reports = list(advice.checkers["MemoryChecker"].reports)
    assert reports[0].startswith("step 0, ") and ": peak " in reports[0]
    assert any("live op dense1/" in r and f"[512,{WIDTHS[1]}]" in r for r in reports)
    assert any("live scope dense1 " in r for r in reports)
    assert "\nMemoryChecker:\nstep 0, " in capsys.readouterr().out


def test_saved_profile_degrades_with_a_note() -> None:
    saved = tfprof_lite.Profiler.load(dense_profile().serialize_to_string())
    report = memory_profile(saved.model)
    assert all(s.source == "per-op bytes" for s in report.steps)
    # One note for every step it applies to, naming them (not one copy per step).
    assert len(report.notes) == 1 and "ProfileProto" in report.notes[0]
    assert report.notes[0].startswith(f"steps {', '.join(map(str, range(STEPS)))}: ")
    alloc = report.steps[0].allocators[0]
    assert not alloc.exact and alloc.peak_bytes == max(b for _, b in alloc.timeline)
    assert alloc.live_bytes + alloc.before_step_bytes == alloc.peak_bytes


def test_cpu_profile_has_no_kernel_records() -> None:
    report = kernel_stats(dense_profile().model)
    assert report.kernels == [] and report.source == "none"
    assert report.to_text().startswith("no GPU kernel records")


def test_report_memory_section() -> None:
    page = render_html(dense_profile().model)
    section = page[page.index('<section id="memory">') :]
    section = section[: section.index("</section>")]
    assert '<svg class="chart memory"' in section
    assert f"float32[512,{WIDTHS[1]}]" in section
