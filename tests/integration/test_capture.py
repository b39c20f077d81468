"""Capture with real TensorFlow: ProfileContext, ProfilerHook and autostart.

Covers a plain ``Session`` loop, ``MonitoredTrainingSession`` with and without
the hook, ``tf_keras``'s graph-mode ``K.function`` (with the caller's own
RunOptions/RunMetadata) and ``Model.fit``, exact restoration of the patched
methods (also after exceptions), profile files read back by us and by
TensorFlow's own loader, and ``python -m tfprof_lite.run`` on an unmodified
script in a subprocess. Every model is tiny; the module runs in ~15 s.
"""

from __future__ import annotations

import dataclasses
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
from tensorflow.python.client import session as tf_session  # noqa: E402
from tensorflow.python.profiler import model_analyzer  # noqa: E402

import tfprof_lite  # noqa: E402
from tfprof_lite.session.autostart import ENV_DIR  # noqa: E402
from tfprof_lite.session.profile_context import ProfileContext  # noqa: E402

pytestmark = pytest.mark.tf

tf1 = tf.compat.v1
ROOT = Path(__file__).resolve().parents[2]
BUILDER = tfprof_lite.ProfileOptionBuilder
QUIET = dict(BUILDER.time_and_memory(), output="none")


@dataclasses.dataclass
class Model:
    """A tiny TF1 regression model with a global step."""

    graph: Any
    x: Any
    loss: Any
    train_op: Any
    init: Any

    def feed(self) -> dict[Any, Any]:
        return {self.x: np.ones((8, 4), np.float32)}


def build_model() -> Model:
    """Global step, one dense layer, squared loss, SGD that increments the step."""
    graph = tf.Graph()
    with graph.as_default():
        global_step = tf1.train.get_or_create_global_step()
        x = tf1.placeholder(tf.float32, [None, 4], name="x")
        with tf1.variable_scope("dense"):
            w = tf1.get_variable("w", [4, 2])
            y = tf.matmul(x, w)
        loss = tf.reduce_mean(tf.square(y), name="loss")
        train_op = tf1.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=global_step)
        init = tf1.global_variables_initializer()
    return Model(graph, x, loss, train_op, init)


def patched_attributes() -> list[Any]:
    """The methods a ProfileContext replaces, as stored in the class dicts."""
    base = tf_session.BaseSession
    return [
        base.__dict__["run"],
        base.__dict__["_make_callable_from_options"],
        base._Callable.__dict__["__call__"],
    ]


@pytest.fixture
def pristine() -> Any:
    """Asserts that every test leaves TensorFlow's session methods as it found them."""
    before = patched_attributes()
    yield before
    assert patched_attributes() == before


def session_loop(model: Model, steps: int, **kwargs: Any) -> None:
    """Step 0 is the initializer, steps 1..steps train."""
    with tf1.Session(graph=model.graph) as sess:
        sess.run(model.init)
        for _ in range(steps):
            sess.run(model.train_op, feed_dict=model.feed(), **kwargs)


# ----------------------------------------------------------------- Session loop
def test_session_loop_traces_dumps_and_profiles(tmp_path: Path, pristine: Any) -> None:
    model = build_model()
    with ProfileContext(tmp_path, trace_steps=[1, 2, 3], dump_steps=[3]) as pctx:
        assert patched_attributes() != pristine
        pctx.add_auto_profiling("scope", QUIET, [3])
        pctx.add_auto_profiling("op", QUIET, [2, 3])
        session_loop(model, 6)
    assert pctx.profiler is not None
    assert pctx.profiler.model.sorted_steps() == [1, 2, 3]
    assert sorted(os.listdir(tmp_path)) == ["profile_3"]
    assert pctx.written_profiles == ["profile_3"]
    scope = pctx.get_profiles("scope")
    assert list(scope) == [3] and scope[3].total_exec_micros > 0
    assert sorted(pctx.get_profiles("op")) == [2, 3]
    with pytest.raises(ValueError, match="No autoprofiler for command: code"):
        pctx.get_profiles("code")
    loaded = tfprof_lite.Profiler.load(tmp_path / "profile_3")
    assert loaded.model.sorted_steps() == [1, 2, 3]
    assert "dense/MatMul" in loaded.model.names or "dense/w" in loaded.model.names


def test_auto_tracing_is_tensorflow_sampling(tmp_path: Path, pristine: Any) -> None:
    """No tracing during warm-up; new fetches are traced at once; reproducible."""
    traced = []
    for _ in range(2):
        model = build_model()
        with ProfileContext(tmp_path, dump_steps=[]) as pctx, tf1.Session(graph=model.graph) as s:
            s.run(model.init)
            for step in range(1, 40):
                fetch = model.loss if step == 25 else model.train_op
                s.run(fetch, feed_dict=model.feed())
        assert pctx.profiler is not None
        traced.append(pctx.profiler.model.sorted_steps())
    assert traced[0] == traced[1]
    assert traced[0][0] == 11  # first step after WARMUP_STEPS; train_op never seen
    assert 25 in traced[0]  # the loss fetch is new


def test_trace_next_and_dump_next_step(tmp_path: Path, pristine: Any) -> None:
    model = build_model()
    with (
        ProfileContext(tmp_path, trace_steps=[], dump_steps=[]) as pctx,
        tf1.Session(graph=model.graph) as sess,
    ):
        sess.run(model.init)
        sess.run(model.train_op, feed_dict=model.feed())
        pctx.trace_next_step()
        pctx.dump_next_step()
        sess.run(model.train_op, feed_dict=model.feed())  # step 2
        sess.run(model.train_op, feed_dict=model.feed())
    assert pctx.profiler is not None
    assert pctx.profiler.model.sorted_steps() == [2]
    assert os.listdir(tmp_path) == ["profile_2"]


def test_caller_options_and_run_metadata_are_honoured(tmp_path: Path, pristine: Any) -> None:
    model = build_model()
    options = tf1.RunOptions(output_partition_graphs=True)
    metas = []
    with (
        ProfileContext(tmp_path, trace_steps=[2], dump_steps=[]) as pctx,
        tf1.Session(graph=model.graph) as sess,
    ):
        sess.run(model.init)
        for _ in range(3):
            metas.append(tf1.RunMetadata())
            sess.run(model.train_op, model.feed(), options=options, run_metadata=metas[-1])
    assert options.trace_level == tf1.RunOptions.NO_TRACE  # the caller's object is untouched
    assert all(meta.partition_graphs for meta in metas)  # filled on every step
    assert [bool(meta.step_stats.dev_stats) for meta in metas] == [False, True, False]
    assert pctx.profiler is not None and pctx.profiler.model.sorted_steps() == [2]


def test_debug_mode_writes_run_metadata(
    tmp_path: Path, pristine: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    model = build_model()
    with ProfileContext(tmp_path, trace_steps=[1], dump_steps=[1], debug=True):
        session_loop(model, 2)
    assert sorted(os.listdir(tmp_path)) == ["profile_1", "run_meta_1"]
    assert "step_stats" in (tmp_path / "run_meta_1").read_text()
    err = capsys.readouterr().err
    assert "debug: tracing step: 1\n" in err and "debug: dumping file at step: 1\n" in err


def test_decorator_and_disabled(tmp_path: Path, pristine: Any) -> None:
    model = build_model()
    pctx = ProfileContext(tmp_path, trace_steps=[1, 4], dump_steps=[4])

    @pctx
    def train() -> None:
        session_loop(model, 2)

    train()  # steps 0..2
    train()  # steps 3..5: the count continues
    assert pctx.profiler is not None and pctx.profiler.model.sorted_steps() == [1, 4]
    assert os.listdir(tmp_path) == ["profile_4"]
    off = ProfileContext(tmp_path / "off", enabled=False)
    with off:
        assert patched_attributes() == pristine
        session_loop(model, 1)
    assert off.profiler is None and not (tmp_path / "off").exists()


# ------------------------------------------------------------ failure handling
def test_exceptions_restore_session_run(tmp_path: Path, pristine: Any) -> None:
    model = build_model()
    with pytest.raises(RuntimeError, match="boom"), ProfileContext(tmp_path):
        raise RuntimeError("boom")
    assert patched_attributes() == pristine
    with (
        ProfileContext(tmp_path, trace_steps=[1, 2], dump_steps=[]) as pctx,
        tf1.Session(graph=model.graph) as sess,
    ):
        sess.run(model.init)
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(model.train_op)  # step 1: x not fed; the run's error passes through
        sess.run(model.train_op, feed_dict=model.feed())  # step 2
    assert pctx.profiler is not None and pctx.profiler.model.sorted_steps() == [2]


def test_failing_untraced_step_is_counted(tmp_path: Path, pristine: Any) -> None:
    """An untraced step (the wrapper's short path) that raises still counts as a
    step and leaves the context usable: the step after next is traced."""
    model = build_model()
    with (
        ProfileContext(tmp_path, trace_steps=[3], dump_steps=[]) as pctx,
        tf1.Session(graph=model.graph) as sess,
    ):
        sess.run(model.init)  # step 0
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(model.train_op)  # step 1: x not fed
        sess.run(model.train_op, feed_dict=model.feed())  # step 2
        sess.run(model.train_op, feed_dict=model.feed())  # step 3: traced
        sess.run(model.train_op, feed_dict=model.feed())  # step 4
    assert pctx.profiler is not None and pctx.profiler.model.sorted_steps() == [3]
    assert patched_attributes() == pristine


def test_nesting_is_refused(tmp_path: Path, pristine: Any) -> None:
    with ProfileContext(tmp_path):
        inner = ProfileContext(tmp_path / "inner")
        with pytest.raises(RuntimeError, match="cannot be nested"), inner:
            pass
    assert patched_attributes() == pristine


def test_profiling_errors_never_break_the_loop(
    tmp_path: Path, pristine: Any, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("")
    model = build_model()
    with (
        caplog.at_level(logging.WARNING, logger="tfprof_lite"),
        ProfileContext(blocker, trace_steps=[1], dump_steps=[1, 2]) as pctx,
    ):
        session_loop(model, 3)
    assert pctx.profiler is not None and pctx.profiler.model.sorted_steps() == [1]
    messages = [r.getMessage() for r in caplog.records if r.name == "tfprof_lite"]
    assert messages == [
        "tfprof_lite: profiling failed (training continues) while writing a profile_<step> "
        f"file: profile_dir {blocker} is not a directory; pass a directory path "
        "[repeats of this failure are counted, not logged]",
        "tfprof_lite: 2 profiling failures in total, training was not affected: "
        "writing a profile_<step> file (TfprofLiteError): 2",
    ]


def test_repeated_failures_are_logged_once_per_kind(
    tmp_path: Path, pristine: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """30 traced steps whose debug file cannot be written and 6 failing dumps:
    one warning per kind, one summary with the counts at exit; every trace kept."""
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("")
    model = build_model()
    with (
        caplog.at_level(logging.WARNING, logger="tfprof_lite"),
        ProfileContext(
            blocker / "sub", trace_steps=range(1, 31), dump_steps=range(1, 7), debug=True
        ) as pctx,
    ):
        session_loop(model, 35)
    assert pctx.profiler is not None and pctx.profiler.model.sorted_steps() == list(range(1, 31))
    messages = [r.getMessage() for r in caplog.records if r.name == "tfprof_lite"]
    assert len(messages) == 3, messages
    assert "while writing a run_meta_<step> file: cannot create profile_dir" in messages[0]
    assert "while writing a profile_<step> file: cannot create profile_dir" in messages[1]
    assert messages[2] == (
        "tfprof_lite: 36 profiling failures in total, training was not affected: "
        "writing a run_meta_<step> file (TfprofLiteError): 30, "
        "writing a profile_<step> file (TfprofLiteError): 6"
    )


def test_failure_summary_per_block_kinds_logged_once(
    tmp_path: Path, pristine: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """As a decorator: each call that failed ends with its own summary; a kind
    already described is not described again."""
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("")
    model = build_model()
    pctx = ProfileContext(blocker, trace_steps=[1, 4], dump_steps=[1, 2, 4])
    train = pctx(lambda: session_loop(model, 2))
    with caplog.at_level(logging.WARNING, logger="tfprof_lite"):
        train()  # steps 0..2: dumps at 1 and 2 fail
        train()  # steps 3..5: the dump at 4 fails
    messages = [r.getMessage() for r in caplog.records if r.name == "tfprof_lite"]
    assert [m.split(":")[1].strip() for m in messages] == [
        "profiling failed (training continues) while writing a profile_<step> file",
        "2 profiling failures in total, training was not affected",
        "1 profiling failure in total, training was not affected",
    ]
    assert pctx.profiler is not None and pctx.profiler.model.sorted_steps() == [1, 4]


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


# ------------------------------------------------------ files and TF's loader
def _tf_text(path: Path, cmd: str, options: dict[str, Any], out: Path) -> str:
    """TensorFlow's tfprof loaded from ``path`` (ProfilerFromFile), one view as text."""
    from tests.integration import tf_oracle

    tf_oracle.close_current()
    try:
        tf_oracle._pywrap.ProfilerFromFile(str(path))
        opts = model_analyzer._build_options(dict(options, output=f"file:outfile={out}"))
        raw = tf_oracle._pywrap.Profile(cmd.encode(), opts.SerializeToString())
        assert raw
    finally:
        tf_oracle.close_current()
    return out.read_text()


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
