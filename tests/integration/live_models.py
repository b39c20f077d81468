"""Small TF1-style models left exactly as a user builds them: unknown dimensions
everywhere they occur, shapes not refined before the profilers see the graph.

Unlike :mod:`tests.integration.tf_models` (whose captures pre-apply TensorFlow's
shape refinement so they are stable), each :class:`LiveModel` is a fresh graph and
session: the first profiler's ``add_step`` refines its shapes, which is the path
users take with ``Profiler(sess.graph)`` created before the steps.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

from tests.integration.tf_models import _GRUCell, _session_config

tf1 = tf.compat.v1

__all__ = ["LIVE_MODELS", "LiveModel"]


@dataclasses.dataclass(eq=False)
class LiveModel:
    """A graph, its session (variables initialised) and what one step runs."""

    name: str
    graph: tf.Graph
    session: Any
    fetches: Any
    feed: dict[Any, Any]

    def traced_step(self) -> bytes:
        """Run one FULL_TRACE step; its serialized RunMetadata."""
        meta = tf1.RunMetadata()
        options = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
        self.session.run(self.fetches, self.feed, options=options, run_metadata=meta)
        return bytes(meta.SerializeToString())

    def close(self) -> None:
        """Close the session."""
        self.session.close()


def _finish(name: str, graph: tf.Graph, fetches: Any, feed: dict[Any, Any]) -> LiveModel:
    with graph.as_default():
        init = tf1.global_variables_initializer()
    session = tf1.Session(graph=graph, config=_session_config())
    session.run(init)
    return LiveModel(name, graph, session, fetches, feed)


def _var(name: str, shape: list[int]) -> Any:
    return tf1.get_variable(name, shape, initializer=tf1.glorot_uniform_initializer())


def _mlp() -> LiveModel:
    """``x: [None, 96]``, two dense layers, softmax cross-entropy, GradientDescent."""
    rng = np.random.RandomState(11)
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 96], name="x")
        y = tf1.placeholder(tf.int64, [None], name="y")
        with tf1.variable_scope("hidden"):
            h = tf.nn.relu(tf.matmul(x, _var("w", [96, 32])) + _var("b", [32]))
        with tf1.variable_scope("logits"):
            logits = tf.matmul(h, _var("w", [32, 10])) + _var("b", [10])
        loss = tf1.losses.sparse_softmax_cross_entropy(y, logits)
        train = tf1.train.GradientDescentOptimizer(0.1).minimize(loss)
    feed = {x: rng.rand(16, 96).astype(np.float32), y: rng.randint(0, 10, 16)}
    return _finish("mlp", graph, train, feed)


def _cond() -> LiveModel:
    """``tf.cond`` choosing between two branches on a ``None``-batch input."""
    rng = np.random.RandomState(12)
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 24], name="x")
        wide = tf1.placeholder(tf.bool, [], name="wide")
        w1 = _var("w1", [24, 24])
        w2 = _var("w2", [24, 24])
        out = tf.cond(
            wide,
            lambda: tf.matmul(tf.matmul(x, w1), w2),
            lambda: tf.nn.relu(tf.matmul(x, w2)),
        )
        loss = tf.reduce_mean(tf.square(out), name="loss")
        train = tf1.train.GradientDescentOptimizer(0.01).minimize(loss)
    feed = {x: rng.rand(8, 24).astype(np.float32), wide: True}
    return _finish("cond", graph, train, feed)


def _batch_matmul() -> LiveModel:
    """``BatchMatMulV2`` on 3-D tensors with an unknown batch."""
    rng = np.random.RandomState(13)
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 6, 8], name="x")
        w = _var("w", [8, 5])
        proj = tf.matmul(x, w)  # [None, 6, 5] x [8, 5] broadcast
        scores = tf.matmul(proj, proj, transpose_b=True)  # [None, 6, 6]
        loss = tf.reduce_mean(tf.nn.softmax(scores), name="loss")
        train = tf1.train.AdamOptimizer(0.01).minimize(loss)
    feed = {x: rng.rand(4, 6, 8).astype(np.float32)}
    return _finish("batch_matmul", graph, train, feed)


def _rnn() -> LiveModel:
    """A GRU through ``dynamic_rnn`` (a while loop) with ``None`` batch and time."""
    rng = np.random.RandomState(14)
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, None, 3], name="seq")
        y = tf1.placeholder(tf.float32, [None, 1], name="target")
        with tf1.variable_scope("rnn_model"):
            cell = _GRUCell(6, 3)
            _, final = tf1.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        out = tf.matmul(final, _var("out_w", [6, 1]))
        loss = tf.reduce_mean(tf.square(out - y), name="loss")
        train = tf1.train.GradientDescentOptimizer(0.05).minimize(loss)
    feed = {x: rng.rand(4, 5, 3).astype(np.float32), y: rng.rand(4, 1).astype(np.float32)}
    return _finish("rnn", graph, train, feed)


def _keras() -> LiveModel:
    """A graph-mode Keras (tf_keras) functional model trained with a TF1 optimizer."""
    import tf_keras

    rng = np.random.RandomState(15)
    graph = tf.Graph()
    with graph.as_default():
        inputs = tf_keras.Input(shape=(20,), name="features")
        hidden = tf_keras.layers.Dense(16, activation="relu", name="dense_1")(inputs)
        outputs = tf_keras.layers.Dense(3, name="dense_2")(hidden)
        model = tf_keras.Model(inputs, outputs)
        labels = tf1.placeholder(tf.int64, [None], name="labels")
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=model.output)
        )
        train = tf1.train.GradientDescentOptimizer(0.1).minimize(
            loss, var_list=model.trainable_weights
        )
    feed = {inputs: rng.rand(8, 20).astype(np.float32), labels: rng.randint(0, 3, 8)}
    return _finish("keras", graph, train, feed)


def _conv() -> LiveModel:
    """Conv2D, pooling and a dense head on ``[None, 12, 12, 3]`` images."""
    rng = np.random.RandomState(16)
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 12, 12, 3], name="images")
        y = tf1.placeholder(tf.int64, [None], name="labels")
        with tf1.variable_scope("conv1"):
            conv = tf.nn.conv2d(x, _var("k", [3, 3, 3, 8]), strides=1, padding="SAME")
            act = tf.nn.relu(tf.nn.bias_add(conv, _var("b", [8])))
        pool = tf.nn.max_pool2d(act, 2, 2, "VALID")
        flat = tf.reshape(pool, [-1, 6 * 6 * 8])
        logits = tf.matmul(flat, _var("fc", [6 * 6 * 8, 4]))
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        train = tf1.train.MomentumOptimizer(0.01, 0.9).minimize(loss)
    feed = {x: rng.rand(4, 12, 12, 3).astype(np.float32), y: rng.randint(0, 4, 4)}
    return _finish("conv", graph, train, feed)


#: Model builders by name; each call returns a fresh, unrefined graph.
LIVE_MODELS: dict[str, Callable[[], LiveModel]] = {
    "mlp": _mlp,
    "cond": _cond,
    "batch_matmul": _batch_matmul,
    "rnn": _rnn,
    "keras": _keras,
    "conv": _conv,
}
