"""Capture with real TensorFlow: ProfilerHook, tf_keras, TF's loader and autostart.

Covers ``MonitoredTrainingSession`` with and without the hook, ``tf_keras``'s
graph-mode ``K.function`` (with the caller's own RunOptions/RunMetadata) and
``Model.fit``, profile files read back by us and by TensorFlow's own loader, and
``python -m tfprof_lite.run`` on an unmodified script in a subprocess. The plain
``Session`` loop and failure handling are in ``test_capture.py``.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import numpy as np  # noqa: E402

import tfprof_lite  # noqa: E402
from tests.integration.capture_helpers import (  # noqa: E402
    BUILDER,
    QUIET,
    ROOT,
    _tf_text,
    build_model,
    session_loop,
    tf1,
)
from tfprof_lite.session.autostart import ENV_DIR  # noqa: E402
from tfprof_lite.session.profile_context import ProfileContext  # noqa: E402

pytestmark = pytest.mark.tf


# ------------------------------------------------------ MonitoredTrainingSession
def test_monitored_training_session_without_hook(tmp_path: Path, pristine: Any) -> None:
    """Run-count steps include MonitoredSession's own initialization runs."""
    model = build_model()
    with (
        ProfileContext(tmp_path, trace_steps=[], dump_steps=[]) as pctx,
        model.graph.as_default(),
        tf1.train.MonitoredTrainingSession() as sess,
    ):
        for _ in range(3):
            sess.run(model.train_op, feed_dict=model.feed())
        pctx.trace_next_step()
        pctx.dump_next_step()
        sess.run(model.train_op, feed_dict=model.feed())
    assert pctx.profiler is not None
    (step,) = pctx.profiler.model.sorted_steps()
    assert step > 3 and os.listdir(tmp_path) == [f"profile_{step}"]


def test_global_step_source(tmp_path: Path, pristine: Any) -> None:
    model = build_model()
    with (
        ProfileContext(
            tmp_path, trace_steps=[3, 5], dump_steps=[5], step_source="global_step"
        ) as pctx,
        model.graph.as_default(),
        tf1.train.MonitoredTrainingSession() as sess,
    ):
        for step in range(1, 8):
            sess.run(model.train_op, feed_dict=model.feed())
            if step == 4:
                sess.run(model.loss, feed_dict=model.feed())  # not a step: no increment
    assert pctx.profiler is not None and pctx.profiler.model.sorted_steps() == [3, 5]
    assert os.listdir(tmp_path) == ["profile_5"]


def test_profiler_hook(tmp_path: Path, pristine: Any) -> None:
    model = build_model()
    with model.graph.as_default():
        hook = tfprof_lite.ProfilerHook(tmp_path, trace_steps=[3, 5], dump_steps=[5])
        hook.add_auto_profiling("op", QUIET, [5])
        metas = [tf1.RunMetadata() for _ in range(7)]
        with tf1.train.MonitoredTrainingSession(hooks=[hook]) as sess:
            for meta in metas:
                sess.run(model.train_op, feed_dict=model.feed(), run_metadata=meta)
    assert isinstance(hook, tf1.train.SessionRunHook)
    assert hook.profiler is not None and hook.profiler.model.sorted_steps() == [3, 5]
    assert list(hook.get_profiles("op")) == [5]
    # The caller's RunMetadata of a traced step holds the trace.
    assert [i + 1 for i, meta in enumerate(metas) if meta.step_stats.dev_stats] == [3, 5]
    # Nothing traced after the dump at 5, so end() writes no profile_7.
    assert sorted(os.listdir(tmp_path)) == ["profile_5"]


def test_profiler_hook_failures_summarized_at_end(
    tmp_path: Path, pristine: Any, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("")
    model = build_model()
    with model.graph.as_default(), caplog.at_level(logging.WARNING, logger="tfprof_lite"):
        hook = tfprof_lite.ProfilerHook(blocker, trace_steps=[1, 2, 3], dump_steps=[1, 2, 3])
        with tf1.train.MonitoredTrainingSession(hooks=[hook]) as sess:
            for _ in range(4):
                sess.run(model.train_op, feed_dict=model.feed())
    assert hook.profiler is not None and hook.profiler.model.sorted_steps() == [1, 2, 3]
    messages = [r.getMessage() for r in caplog.records if r.name == "tfprof_lite"]
    assert len(messages) == 2 and "profiling failed" in messages[0]
    # dumps at 1, 2 and 3, then end()'s final dump (the traces are still unsaved)
    assert messages[1].startswith("tfprof_lite: 4 profiling failures in total")


def test_profiler_hook_dumps_at_end(tmp_path: Path, pristine: Any) -> None:
    model = build_model()
    with model.graph.as_default():
        hook = tfprof_lite.ProfilerHook(tmp_path, trace_steps=[2], dump_steps=[])
        with tf1.train.MonitoredTrainingSession(hooks=[hook]) as sess:
            for _ in range(4):
                sess.run(model.train_op, feed_dict=model.feed())
    assert os.listdir(tmp_path) == ["profile_4"]
    assert tfprof_lite.Profiler.load(tmp_path / "profile_4").model.sorted_steps() == [2]


# --------------------------------------------------------------------- tf_keras
def test_keras_function_in_graph_mode(tmp_path: Path, pristine: Any) -> None:
    pytest.importorskip("tf_keras")
    import tf_keras
    from tf_keras.api._v1.keras import backend as K  # tf.compat.v1.keras.backend

    with tf.Graph().as_default() as graph:
        sess = tf1.Session(graph=graph)
        K.set_session(sess)
        inputs = tf_keras.Input((4,))
        outputs = tf_keras.layers.Dense(2, name="dense")(inputs)
        run_options = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
        run_metadata = tf1.RunMetadata()
        traced_fn = K.function([inputs], [outputs], options=run_options, run_metadata=run_metadata)
        plain_fn = K.function([inputs], [outputs])
        batch = [np.ones((3, 4), np.float32)]
        with ProfileContext(tmp_path, trace_steps=[], dump_steps=[]) as pctx:
            traced_fn(batch)  # creates the session's callable; may run initializers first
            pctx.trace_next_step()
            traced_fn(batch)  # uses the caller's FULL_TRACE options and RunMetadata
            assert run_metadata.step_stats.dev_stats
            pctx.trace_next_step()
            plain_fn(batch)  # traced through a FULL_TRACE twin of the callable
            plain_fn(batch)
        sess.close()
    K.clear_session()
    assert pctx.profiler is not None
    first, second = pctx.profiler.model.sorted_steps()
    assert second == first + 1
    assert any(name.startswith("dense/") for name in pctx.profiler.model.names)


def test_callable_made_before_the_context_is_counted_not_traced(
    tmp_path: Path, pristine: Any, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("tf_keras")
    import tf_keras
    from tf_keras.api._v1.keras import backend as K

    with tf.Graph().as_default() as graph:
        sess = tf1.Session(graph=graph)
        K.set_session(sess)
        inputs = tf_keras.Input((4,))
        function = K.function([inputs], [tf_keras.layers.Dense(2)(inputs)])
        batch = [np.ones((3, 4), np.float32)]
        function(batch)  # the callable exists before the context
        with (
            caplog.at_level(logging.WARNING, logger="tfprof_lite"),
            ProfileContext(tmp_path, trace_steps=[0, 1], dump_steps=[]) as pctx,
        ):
            function(batch)
            function(batch)
        sess.close()
    K.clear_session()
    assert pctx.profiler is not None and pctx.profiler.model.sorted_steps() == []
    assert [r.getMessage() for r in caplog.records if "cannot be traced" in r.getMessage()]


def test_keras_model_fit_in_graph_mode(tmp_path: Path, pristine: Any) -> None:
    pytest.importorskip("tf_keras")
    import tf_keras
    from tf_keras.api._v1.keras import backend as K

    with tf.Graph().as_default() as graph:
        K.set_session(tf1.Session(graph=graph))
        model = tf_keras.Sequential([tf_keras.layers.Dense(3, input_shape=(4,))])
        model.compile("sgd", "mse")
        data = np.ones((32, 4), np.float32), np.ones((32, 3), np.float32)
        with ProfileContext(tmp_path, trace_steps=range(50), dump_steps=[]) as pctx:
            model.fit(*data, batch_size=8, epochs=2, verbose=0)
    K.clear_session()
    assert pctx.profiler is not None
    assert len(pctx.profiler.model.sorted_steps()) >= 8  # one step per batch


def test_dump_loads_in_tfprof_lite_and_tensorflow(tmp_path: Path, pristine: Any) -> None:
    model = build_model()
    with ProfileContext(tmp_path / "prof", trace_steps=[1, 2, 3], dump_steps=[3]):
        session_loop(model, 3)
    path = tmp_path / "prof" / "profile_3"
    ours = tfprof_lite.Profiler.load(path)
    options = dict(BUILDER.time_and_memory(), min_micros=0, min_bytes=0)
    for cmd, method in (("scope", "profile_name_scope"), ("op", "profile_operations")):
        mine = tmp_path / f"ours_{cmd}.txt"
        getattr(ours, method)(dict(options, output=f"file:outfile={mine}"))
        theirs = _tf_text(path, cmd, options, tmp_path / f"tf_{cmd}.txt")
        assert mine.read_text() == theirs


# -------------------------------------------------------- environment variable
SCRIPT = """
    import os, sys
    print("tf imported early:", "tensorflow" in sys.modules)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 4], name="x")
        w = tf1.get_variable("w", [4, 2])
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w)), name="loss")
        train = tf1.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf1.global_variables_initializer()
    with tf1.Session(graph=graph) as sess:
        sess.run(init)
        for _ in range(int(sys.argv[1])):
            sess.run(train, feed_dict={x: [[1.0, 2.0, 3.0, 4.0]]})
    print("trained", __name__)
    sys.exit(int(sys.argv[2]))
"""


def test_env_variable_activation_on_unmodified_script(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(ROOT))
    env.update({ENV_DIR: "out", "TFPROF_LITE_TRACE_STEPS": "2-4", "TFPROF_LITE_DUMP_STEPS": "3"})
    proc = subprocess.run(
        [sys.executable, "-m", "tfprof_lite.run", "train.py", "6", "3"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 3, proc.stderr  # the script's sys.exit status
    assert "tf imported early: False" in proc.stdout
    assert "trained __main__" in proc.stdout
    assert "tfprof_lite: profiles in out: profile_3, profile_6" in proc.stderr
    assert sorted(os.listdir(tmp_path / "out")) == ["profile_3", "profile_6"]
    assert tfprof_lite.Profiler.load(tmp_path / "out" / "profile_3").model.sorted_steps() == [2, 3]
    assert tfprof_lite.Profiler.load(tmp_path / "out" / "profile_6").model.sorted_steps() == [
        2,
        3,
        4,
    ]
