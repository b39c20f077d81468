"""The native step decoder on RunMetadata written by TensorFlow.

Every FULL_TRACE step of the real models of :mod:`tests.integration.tf_models`,
and of a small model traced here with partition graphs and a cost graph (the
top-level fields the decoder skips), must be decoded natively (TensorFlow's own
output is in the plain subset the decoder reads, or the fast path would never
run) into columns equal to the pure-Python walk of our parse and of TensorFlow's
own ``RunMetadata`` class. Then ``add_step`` on both paths builds byte-identical
profiles.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.stepcols import assert_same_columns, check_decoders, native_decode, require_native
from tfprof_lite import Profiler
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto import steps

pytestmark = pytest.mark.tf

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1


@pytest.fixture(autouse=True)
def _native_built() -> None:
    require_native()


def _tf_columns(data: bytes) -> steps.StepColumns:
    """The pure walk over TensorFlow's own parse of ``data``."""
    meta = tf1.RunMetadata()
    meta.ParseFromString(data)
    return steps.columns_from_message(meta)


def _check(data: bytes) -> steps.StepColumns:
    assert check_decoders(data) == "decoded"
    cols = native_decode(data)
    assert cols is not None
    assert_same_columns(cols, _tf_columns(data))
    return cols


def test_model_steps_decode_natively(capture: Any) -> None:
    rows = 0
    for _step, data in capture.run_metas:
        cols = _check(data)
        assert cols.has_step_stats and len(cols) > 0
        rows += len(cols.r_row)
    assert rows > 0  # memory records were compared too


def _traced_model() -> tuple[bytes, list[bytes]]:
    """A small model's GraphDef and three FULL_TRACE RunMetadata with partition
    graphs and a cost graph."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [4, 8], name="x")
        w = tf1.get_variable("w", [8, 3], initializer=tf1.ones_initializer())
        loss = tf.reduce_sum(tf.nn.relu(tf.matmul(x, w)), name="loss")
        train = tf1.train.GradientDescentOptimizer(0.01).minimize(loss)
        init = tf1.global_variables_initializer()
    options = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE, output_partition_graphs=True)
    config = tf1.ConfigProto(graph_options=tf1.GraphOptions(build_cost_model=1))
    metas = []
    with tf1.Session(graph=graph, config=config) as sess:
        sess.run(init)
        for step in range(3):
            meta = tf1.RunMetadata()
            feed = {x: [[float(step + i + j) for j in range(8)] for i in range(4)]}
            sess.run([train, loss], feed, options=options, run_metadata=meta)
            metas.append(meta.SerializeToString())
    return graph.as_graph_def(add_shapes=True).SerializeToString(), metas


@pytest.fixture(scope="module")
def traced() -> tuple[bytes, list[bytes]]:
    """The small model traced once per module."""
    return _traced_model()


def test_other_top_level_fields_are_skipped(traced: tuple[bytes, list[bytes]]) -> None:
    _graph, metas = traced
    for data in metas:
        meta = tf1.RunMetadata()
        meta.ParseFromString(data)
        assert len(meta.partition_graphs) > 0
        _check(data)
    assert any(tf1.RunMetadata.FromString(d).HasField("cost_graph") for d in metas)


def _profile(graph: bytes, metas: list[bytes], pure: bool) -> tuple[Any, str]:
    saved = os.environ.pop(steps.PURE_PYTHON_ENV, None)
    if pure:
        os.environ[steps.PURE_PYTHON_ENV] = "1"
    try:
        prof = Profiler(graph=graph)
        for step, data in enumerate(metas):
            prof.add_step(step, data)
        options = {**tf1.profiler.ProfileOptionBuilder.time_and_memory(), "output": "none"}
        text = str(prof.profile_name_scope(options))
        # As a message: the two paths' encoders may order map entries differently.
        return pb.ProfileProto.FromString(prof.serialize_to_string()), text
    finally:
        os.environ.pop(steps.PURE_PYTHON_ENV, None)
        if saved is not None:
            os.environ[steps.PURE_PYTHON_ENV] = saved


def test_model_profiles_equal_on_both_paths(capture: Any) -> None:
    """The same steps from the GraphDef on each path (the parity suites run live
    graphs, whose steps use the native decoder too, on both paths as well)."""
    graph = capture.graph.as_graph_def(add_shapes=True).SerializeToString()
    metas = [data for _step, data in capture.run_metas]
    assert _profile(graph, metas, pure=False) == _profile(graph, metas, pure=True)


def test_add_step_builds_the_same_profile_on_both_paths(
    traced: tuple[bytes, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    graph, metas = traced
    real = steps.native_columns
    decoded: list[bool] = []

    def counting(raw: Any) -> steps.StepColumns | None:
        cols = real(raw)
        decoded.append(cols is not None)
        return cols

    monkeypatch.setattr(steps, "native_columns", counting)
    native = _profile(graph, metas, pure=False)
    assert decoded == [True] * len(metas)  # add_step took the native path
    decoded.clear()
    assert native == _profile(graph, metas, pure=True)
    assert decoded == [False] * len(metas)
