"""tfprof_lite's protobuf layer and reports under TensorFlow 2.15 / protobuf 4.25.

The main suite runs with TF 2.21 and protobuf 5+; here (``make test215``) the
package's message classes are built by protobuf 4.25 and fed with what a
TF 2.15 session produces. The report texts are compared byte for byte with
TF 2.15's own tfprof on the same graph and RunMetadata (file output).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from google.protobuf import __version__ as protobuf_version

import tfprof_lite
from tests.tf215 import tfprof215
from tfprof_lite.proto import messages as pb

pytestmark = pytest.mark.tf

tf1 = tf.compat.v1
BUILDER = tfprof_lite.ProfileOptionBuilder


@dataclasses.dataclass
class Capture:
    """A TF 2.15 graph and the RunMetadata of its traced training steps."""

    graph: Any
    run_metas: list[Any]


@pytest.fixture
def capture() -> Capture:
    """Dense + ReLU + Adam, 3 FULL_TRACE steps (a new graph per test: TF's
    ``add_step`` writes runtime shapes into the graph it is given)."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 4], name="x")
        with tf1.variable_scope("dense"):
            w = tf1.get_variable("w", [4, 2])
            b = tf1.get_variable("b", [2], initializer=tf1.zeros_initializer())
            y = tf.nn.relu(tf.matmul(x, w) + b)
        loss = tf.reduce_mean(tf.square(y), name="loss")
        train = tf1.train.AdamOptimizer(0.01).minimize(loss)
        init = tf1.global_variables_initializer()
    options = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
    metas = []
    with tf1.Session(graph=graph) as sess:
        sess.run(init)
        for _ in range(3):
            meta = tf1.RunMetadata()
            feed = {x: np.ones((8, 4), np.float32)}
            sess.run(train, feed, options=options, run_metadata=meta)
            metas.append(meta)
    return Capture(graph, metas)


def test_versions() -> None:
    assert tf.__version__.startswith("2.15.")
    assert protobuf_version.startswith("4.25.")


def test_messages_round_trip_tensorflow_2_15_bytes(capture: Capture) -> None:
    for meta in capture.run_metas:
        data = meta.SerializeToString(deterministic=True)
        ours = pb.RunMetadata.FromString(data)
        assert ours.step_stats.dev_stats
        assert ours.SerializeToString(deterministic=True) == data
        assert tf1.RunMetadata.FromString(ours.SerializeToString()) == meta
    graph_def = capture.graph.as_graph_def().SerializeToString(deterministic=True)
    assert pb.GraphDef.FromString(graph_def).SerializeToString(deterministic=True) == graph_def


OPTIONS = {
    "builder_default": BUILDER().build(),
    "trainable_variables_parameter": BUILDER.trainable_variables_parameter(),
    "time_and_memory": BUILDER.time_and_memory(),
}


@pytest.mark.parametrize("cmd", sorted(tfprof215.METHODS))
@pytest.mark.parametrize("option_set", sorted(OPTIONS))
def test_report_text_matches_tensorflow_2_15(
    capture: Capture, tmp_path: Path, cmd: str, option_set: str
) -> None:
    """Our ``Profiler`` and TF 2.15's on the same graph and steps: identical files."""
    options = OPTIONS[option_set]
    ours = tfprof_lite.Profiler(capture.graph)
    for step, meta in enumerate(capture.run_metas):
        ours.add_step(step, meta)
    method = tfprof215.METHODS[cmd]
    mine, theirs = tmp_path / "ours.txt", tmp_path / "tf.txt"
    getattr(ours, method)(dict(options, output=f"file:outfile={mine}"))
    with tfprof215.tf_profiler(capture.graph, capture.run_metas) as profiler:
        getattr(profiler, method)(dict(options, output=f"file:outfile={theirs}"))
    expected = tfprof215.read_text(theirs)
    assert expected.startswith("\nDoc:\n")
    assert tfprof215.read_text(mine) == expected
