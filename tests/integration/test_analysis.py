"""Step-time, input-pipeline and overview analyses on real TF sessions."""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
import pytest

import tfprof_lite
from tfprof_lite.analysis.input_pipeline import input_pipeline
from tfprof_lite.analysis.overview import overview
from tfprof_lite.analysis.steptime import percentile, step_times

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1


def _trace(graph: Any, fetch: Any, steps: int = 5, warmup: int = 1) -> tfprof_lite.Profiler:
    prof = tfprof_lite.Profiler(graph)
    with tf1.Session(graph=graph) as sess:
        sess.run(tf1.global_variables_initializer())
        for _ in range(warmup):
            sess.run(fetch)  # warm-up, untraced
        for step in range(steps):
            meta = tf1.RunMetadata()
            opts = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
            sess.run(fetch, options=opts, run_metadata=meta)
            prof.add_step(step, meta)
    return prof


def _slow_read(x: Any) -> Any:
    time.sleep(0.03)
    return x


def input_bound_profile() -> tfprof_lite.Profiler:
    graph = tf.Graph()
    with graph.as_default():
        data = tf.data.Dataset.range(1000).map(lambda x: tf.py_function(_slow_read, [x], tf.int64))
        # No read-ahead: autotuning and tf.data's default optimizations (an
        # injected prefetch among them) let the pipeline fill between steps,
        # and a step could find its element half ready.
        options = tf.data.Options()
        options.autotune.enabled = False
        options.experimental_optimization.apply_default_optimizations = False
        options.experimental_optimization.inject_prefetch = False
        data = data.batch(1).with_options(options)
        batch = tf1.data.make_one_shot_iterator(data).get_next()
        out = tf.reduce_sum(tf.cast(batch, tf.float32) * 2.0)
    return _trace(graph, out)


def compute_bound_profile() -> tfprof_lite.Profiler:
    # Heavy enough (about 2 GFLOP a step) that scheduling jitter of the prefetch
    # thread on a loaded machine stays a small share of the step.
    graph = tf.Graph()
    with graph.as_default():
        data = tf.data.Dataset.from_tensors(np.ones((512, 512), np.float32)).repeat()
        x = tf1.data.make_one_shot_iterator(data.prefetch(4)).get_next()
        w = tf1.get_variable("w", [512, 512], initializer=tf1.random_normal_initializer(0, 0.01))
        for i in range(8):
            x = tf.tanh(tf.matmul(x, w), name=f"layer{i}")
        out = tf.reduce_sum(x)
    return _trace(graph, out, warmup=3)


def test_input_bound_pipeline_is_flagged() -> None:
    prof = input_bound_profile()
    report = input_pipeline(prof.model)
    assert report.input_bound, report.to_text()
    assert report.verdict == "input-bound"
    assert report.top_ops[0][1].startswith("IteratorGetNext")
    assert any("prefetch" in s for s in report.suggestions)
    assert all(s.input_micros >= 20_000 for s in report.steps)
    view = overview(prof.model)
    assert "input-bound" in view.recommendation
    json.dumps(view.to_dict())


def test_compute_bound_model_is_not_flagged() -> None:
    prof = compute_bound_profile()
    report = input_pipeline(prof.model)
    assert not report.input_bound and report.verdict == "not input-bound", report.to_text()
    assert report.suggestions == []
    view = overview(prof.model)
    assert view.top_ops[0].op in ("MatMul", "Tanh", "_FusedMatMul")
    assert view.recommendation.startswith("compute-bound")
    assert view.steps == 5 and view.avg_step_micros > 0
    assert view.hosts == ["/job:localhost/replica:0/task:0"]
    assert 0.0 <= view.host_idle < 1.0 and view.device_idle is None
    matmul = next(op for op in view.top_ops if op.op == "MatMul")
    assert matmul.float_ops == 8 * 2 * 512**3 and matmul.flops_per_sec > 0
    assert "recommendation:" in view.to_text()


def test_step_times_statistics() -> None:
    prof = compute_bound_profile()
    report = step_times(prof.model)
    walls = [s.wall_micros for s in report.steps]
    assert len(walls) == 5
    assert report.min_micros == min(walls) and report.max_micros == max(walls)
    assert report.p50_micros == percentile(walls, 50)
    assert abs(report.mean_micros - sum(walls) / 5) < 1e-6
    for s in report.steps:
        assert s.busy_micros <= s.wall_micros and s.op_micros >= s.busy_micros
        assert s.parallelism >= 1.0
    assert "wall time over 5 steps" in report.to_text()


def test_new_checkers_in_default_advice(capsys: pytest.CaptureFixture[str]) -> None:
    bound = input_bound_profile()
    advice = bound.advise(dict(tfprof_lite.ALL_ADVICE))
    reports = list(advice.checkers["InputPipelineChecker"].reports)
    assert reports[0].startswith("input-bound: ")
    assert any(r.startswith("fix: add .prefetch") for r in reports)
    assert any(r.startswith("top input op: ") for r in reports)
    steps = list(advice.checkers["StepTimeChecker"].reports)
    assert steps[0].startswith("steps: 5, wall time mean ")
    out = capsys.readouterr().out
    assert "\nInputPipelineChecker:\ninput-bound: " in out
    free = compute_bound_profile().advise({"InputPipelineChecker": {"top": "1"}})
    free_reports = list(free.checkers["InputPipelineChecker"].reports)
    assert free_reports[0].startswith("not input-bound")
    assert not [r for r in free_reports if r.startswith("fix:")]
