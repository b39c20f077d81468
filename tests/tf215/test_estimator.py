"""``tf.estimator.Estimator`` profiled by tfprof_lite under TensorFlow 2.15.

TensorFlow >= 2.16 has no ``tf.estimator``, so this module runs only in the
``.venv-tf215`` virtualenv (``make test215``; the conftest skips it elsewhere).
A real Estimator (``tf.compat.v1.layers.dense`` regression, ``tf.data`` input)
is trained with ``tfprof_lite.ProfilerHook`` in ``train(hooks=...)`` and inside
a ``tfprof_lite.ProfileContext``; the dumped ``profile_<step>`` files load with
``tfprof_lite.Profiler.load``, every view answers, and the op (and scope) view
of a dumped file equals TF 2.15's own tfprof loading the same file, text and
returned message. Each training run takes well under a second.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import tensorflow as tf
from tensorflow.python.client import session as tf_session

import tfprof_lite
from tests.tf215 import tfprof215
from tfprof_lite.proto import messages as pb

pytestmark = [
    pytest.mark.tf,
    pytest.mark.filterwarnings("ignore:`tf.layers.dense` is deprecated:UserWarning"),
]

tf1 = tf.compat.v1
BUILDER = tfprof_lite.ProfileOptionBuilder
QUIET = dict(BUILDER.time_and_memory(), output="none")
STEPS = 6


def input_fn() -> Any:
    """64 constant examples of 4 features, batches of 8, repeated forever."""
    features = tf.reshape(tf.range(256, dtype=tf.float32) / 256.0, (64, 4))
    labels = tf.reduce_sum(features, axis=1, keepdims=True)
    return tf.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(8)


def model_fn(features: Any, labels: Any, mode: str) -> Any:
    """One dense layer, mean squared error, SGD advancing the global step."""
    hidden = tf1.layers.dense(features, 3, activation=tf.nn.relu, name="hidden")
    predictions = tf1.layers.dense(hidden, 1, name="dense")
    loss = tf1.losses.mean_squared_error(labels, predictions)
    optimizer = tf1.train.GradientDescentOptimizer(0.01)
    train_op = optimizer.minimize(loss, global_step=tf1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def make_estimator(model_dir: Path) -> Any:
    return tf.estimator.Estimator(model_fn, model_dir=str(model_dir))


def op_rows(message: Any) -> list[str]:
    """Row names of an op-view MultiGraphNodeProto (tfprof nests them as a chain)."""
    names = []
    while message.children:
        (message,) = message.children
        names.append(message.name)
    return names


def patched_attributes() -> list[Any]:
    """The methods a ProfileContext replaces, as stored in the class dicts."""
    base = tf_session.BaseSession
    return [
        base.__dict__["run"],
        base.__dict__["_make_callable_from_options"],
        base._Callable.__dict__["__call__"],
    ]


@pytest.fixture(autouse=True)
def quiet_tensorflow() -> Any:
    """Estimator logs every checkpoint and step at INFO; keep failures readable."""
    verbosity = tf1.logging.get_verbosity()
    tf1.logging.set_verbosity(tf1.logging.ERROR)
    yield
    tf1.logging.set_verbosity(verbosity)


@pytest.fixture
def pristine() -> Any:
    """Asserts that the test leaves TensorFlow's session methods as it found them."""
    before = patched_attributes()
    yield before
    assert patched_attributes() == before


@pytest.fixture(scope="module")
def hook_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    """One ``train(steps=6)`` with a ProfilerHook tracing 2..4, dumping at 3 (and at end)."""
    root = tmp_path_factory.mktemp("hook")
    hook = tfprof_lite.ProfilerHook(root / "prof", trace_steps=[2, 3, 4], dump_steps=[3])
    hook.add_auto_profiling("scope", QUIET, [4])
    make_estimator(root / "model").train(input_fn, steps=STEPS, hooks=[hook])
    return hook, root


def test_profiler_hook_in_estimator_train(hook_run: tuple[Any, Path]) -> None:
    hook, root = hook_run
    assert isinstance(hook, tf1.train.SessionRunHook)
    assert hook.profiler is not None
    assert hook.profiler.model.sorted_steps() == [2, 3, 4]  # keyed by global step
    # dump_steps=[3]; step 4 was traced after it, so end() writes profile_6.
    assert hook.written_profiles == ["profile_3", "profile_6"]
    assert sorted(os.listdir(root / "prof")) == ["profile_3", "profile_6"]
    (scope,) = hook.get_profiles("scope").values()
    assert scope.total_exec_micros > 0
    assert {"hidden", "dense"} <= {child.name for child in scope.children}


def test_dumped_profiles_load_and_every_view_works(hook_run: tuple[Any, Path]) -> None:
    _, root = hook_run
    at_3 = tfprof_lite.Profiler.load(root / "prof" / "profile_3")
    at_6 = tfprof_lite.Profiler.load(root / "prof" / "profile_6")
    assert at_3.model.sorted_steps() == [2, 3]
    assert at_6.model.sorted_steps() == [2, 3, 4]
    assert {"hidden/kernel", "dense/MatMul", "GradientDescent"} <= set(at_6.model.names)
    scope = at_6.profile_name_scope(QUIET)
    graph = at_6.profile_graph(QUIET)
    ops = at_6.profile_operations(QUIET)
    code = at_6.profile_python(dict(QUIET, max_depth=4))
    assert isinstance(scope, pb.GraphNodeProto) and isinstance(graph, pb.GraphNodeProto)
    assert isinstance(ops, pb.MultiGraphNodeProto) and isinstance(code, pb.MultiGraphNodeProto)
    assert scope.total_exec_micros > 0 and ops.total_exec_micros > 0
    assert {"MatMul", "ResourceApplyGradientDescent"} <= set(op_rows(ops))
    params = at_6.profile_name_scope(dict(BUILDER.trainable_variables_parameter(), output="none"))
    assert params.total_parameters == 4 * 3 + 3 + 3 * 1 + 1


OPTIONS = {
    "time_and_memory": dict(BUILDER.time_and_memory(), min_micros=0, min_bytes=0),
    "builder_default": BUILDER().build(),
}


@pytest.mark.parametrize("cmd", ["op", "scope"])
@pytest.mark.parametrize("option_set", sorted(OPTIONS))
def test_dumped_profile_view_equals_tensorflow_2_15(
    hook_run: tuple[Any, Path], tmp_path: Path, cmd: str, option_set: str
) -> None:
    """TF 2.15's ``ProfilerFromFile`` on our file: same report text and message."""
    _, root = hook_run
    path = root / "prof" / "profile_6"
    options = OPTIONS[option_set]
    ours = tfprof_lite.Profiler.load(path)
    method = tfprof215.METHODS[cmd]
    mine = tmp_path / "ours.txt"
    message = getattr(ours, method)(dict(options, output=f"file:outfile={mine}"))
    text, raw = tfprof215.view_from_file(path, cmd, options, tmp_path / "tf.txt")
    assert text.startswith("\nDoc:\n")
    assert mine.read_text() == text
    cls = pb.MultiGraphNodeProto if cmd == "op" else pb.GraphNodeProto
    expected = cls.FromString(raw).SerializeToString(deterministic=True)
    assert message.SerializeToString(deterministic=True) == expected


def test_profiler_hook_continues_from_a_checkpoint(tmp_path: Path) -> None:
    """Later ``train`` calls restore the global step; hook and context continue it."""
    estimator = make_estimator(tmp_path / "model")
    estimator.train(input_fn, steps=3)
    hook = tfprof_lite.ProfilerHook(tmp_path / "prof", trace_steps=[2, 5], dump_steps=[5])
    estimator.train(input_fn, steps=3, hooks=[hook])
    assert hook.profiler is not None and hook.profiler.model.sorted_steps() == [5]
    assert os.listdir(tmp_path / "prof") == ["profile_5"]
    with tfprof_lite.ProfileContext(
        tmp_path / "ctx", trace_steps=[7], dump_steps=[7], step_source="global_step"
    ) as pctx:
        estimator.train(input_fn, steps=2)  # global steps 7, 8
    assert pctx.profiler is not None and pctx.profiler.model.sorted_steps() == [7]
    assert pctx.written_profiles == ["profile_7"]


def test_profile_context_around_estimator_train_global_step(tmp_path: Path, pristine: Any) -> None:
    estimator = make_estimator(tmp_path / "model")
    with tfprof_lite.ProfileContext(
        tmp_path / "prof", trace_steps=[2, 3], dump_steps=[3], step_source="global_step"
    ) as pctx:
        pctx.add_auto_profiling("op", QUIET, [3])
        estimator.train(input_fn, steps=STEPS)
    assert pctx.profiler is not None and pctx.profiler.model.sorted_steps() == [2, 3]
    assert pctx.written_profiles == ["profile_3"]
    assert os.listdir(tmp_path / "prof") == ["profile_3"]
    assert list(pctx.get_profiles("op")) == [3]
    loaded = tfprof_lite.Profiler.load(tmp_path / "prof" / "profile_3")
    assert loaded.model.sorted_steps() == [2, 3]
    assert "dense/MatMul" in loaded.model.names


def test_profile_context_around_estimator_train_run_count(tmp_path: Path, pristine: Any) -> None:
    """Default numbering: every ``Session.run`` of ``train`` is a step, its set-up too."""
    estimator = make_estimator(tmp_path / "model")
    with tfprof_lite.ProfileContext(
        tmp_path / "prof", trace_steps=range(100), dump_steps=[], dump_on_exit=True
    ) as pctx:
        estimator.train(input_fn, steps=3)
    assert pctx.profiler is not None
    steps = pctx.profiler.model.sorted_steps()
    # Initializers, the checkpoint saves and the global-step reads of Estimator's
    # own hooks run too: more runs than training steps, all traced from 0.
    assert steps == list(range(len(steps))) and len(steps) > 3
    assert pctx.written_profiles == [f"profile_{steps[-1]}"]
    loaded = tfprof_lite.Profiler.load(tmp_path / "prof" / pctx.written_profiles[0])
    ops = loaded.profile_operations(QUIET)
    assert {"MatMul", "ResourceApplyGradientDescent"} <= set(op_rows(ops))
