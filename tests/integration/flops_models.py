"""Real TF graphs of the FLOP tests (``test_flops.py``, ``test_flops_profiles.py``):
an MLP with batch ``None``, a CNN (conv/bias/batch norm/pooling + gradients),
attention (BatchMatMulV2, Einsum), control flow (``tf.while_loop``, ``tf.cond``, a
``tf.function`` call) and nested loops; each run once with FULL_TRACE (``_run``,
cached by ``_traced``), and the corrected FLOP table of one (``_table``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

pytest.importorskip("tensorflow")

import tensorflow as tf  # noqa: E402

from tfprof_lite.capture import flops as F  # noqa: E402

tf1 = tf.compat.v1

Model = tuple[tf.Graph, dict[str, Any], list[Any]]


# ------------------------------------------------------------------ models
def _var(name: str, shape: list[int]) -> Any:
    return tf1.get_variable(name, shape, initializer=tf1.glorot_uniform_initializer())


def _mlp() -> Model:
    """x [None, 8] -> 16 (bias, relu) -> 4 (bias) -> softmax; fed batch 3."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 8], name="x")
        h = tf.matmul(x, _var("w1", [8, 16]), name="mm1")
        h = tf.nn.relu(tf.nn.bias_add(h, _var("b1", [16]), name="bias1"), name="relu")
        o = tf.nn.bias_add(tf.matmul(h, _var("w2", [16, 4]), name="mm2"), _var("b2", [4]))
        y = tf.reduce_sum(tf.nn.softmax(o, name="softmax"), name="y")
    return graph, {"x:0": np.ones([3, 8], np.float32)}, [y]


def _cnn() -> Model:
    """NHWC conv 3x3x3x8 SAME + bias + batch norm (inference) + relu + 2x2 pools,
    gradients w.r.t. the filter; images [None, 12, 12, 3] fed batch 2."""
    graph = tf.Graph()
    with graph.as_default():
        images = tf1.placeholder(tf.float32, [None, 12, 12, 3], name="images")
        filt = _var("filter", [3, 3, 3, 8])
        conv = tf.nn.conv2d(images, filt, 1, "SAME", name="conv")
        conv = tf.nn.bias_add(conv, _var("bias", [8]), name="conv_bias")
        ones = tf.ones([8])
        bn, _, _ = tf1.nn.fused_batch_norm(
            conv, ones, ones, mean=ones, variance=ones, is_training=False, name="bn"
        )
        relu = tf.nn.relu(bn, name="relu")
        pool = tf.nn.max_pool2d(relu, 2, 2, "VALID", name="maxpool")
        avg = tf.nn.avg_pool2d(pool, 2, 2, "VALID", name="avgpool")
        loss = tf.reduce_mean(tf.square(avg), name="loss")
        grad = tf.gradients(loss, [filt])[0]
    return graph, {"images:0": np.ones([2, 12, 12, 3], np.float32)}, [loss, grad]


def _attention() -> Model:
    """q [None,4,8], k [None,6,8], v [None,6,5]; fed batch 2."""
    graph = tf.Graph()
    with graph.as_default():
        q = tf1.placeholder(tf.float32, [None, 4, 8], name="q")
        k = tf1.placeholder(tf.float32, [None, 6, 8], name="k")
        v = tf1.placeholder(tf.float32, [None, 6, 5], name="v")
        scores = tf.matmul(q, k, adjoint_b=True, name="scores")  # [B,4,6], k=8
        probs = tf.nn.softmax(scores, name="probs")
        ctx = tf.matmul(probs, v, name="context")  # [B,4,5], k=6
        kv = tf.matmul(k, v, adjoint_a=True, name="kv")  # [B,8,5], k=6
        proj = tf.einsum("bij,jk->bik", q, _var("wq", [8, 3]), name="proj")  # k=8
        total = tf.reduce_sum(ctx) + tf.reduce_sum(kv) + tf.reduce_sum(proj)
    feeds = {
        "q:0": np.ones([2, 4, 8], np.float32),
        "k:0": np.ones([2, 6, 8], np.float32),
        "v:0": np.ones([2, 6, 5], np.float32),
    }
    return graph, feeds, [total]


def _control_flow() -> Model:
    """A 5-iteration while loop with an [?,8]x[8,8] matmul, a tf.cond (then: matmul +
    relu; else: tanh) and a tf.function call; x [None, 8] fed batch 3, p = True."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 8], name="x")
        w = _var("w", [8, 8])

        def body(i: Any, a: Any) -> tuple[Any, Any]:
            return i + 1, tf.matmul(a, w, name="mm")

        _, out = tf.while_loop(lambda i, a: i < 5, body, [tf.constant(0), x], name="loop")
        p = tf1.placeholder(tf.bool, [], name="p")
        branch = tf.cond(
            p,
            lambda: tf.nn.relu(tf.matmul(out, w, name="tmm"), name="trelu"),
            lambda: tf.tanh(out, name="ftanh"),
            name="cnd",
        )

        @tf.function
        def call(t: Any) -> Any:
            return tf.exp(tf.matmul(t, tf.ones([4, 4])), name="fexp")

        called = call(tf.ones([2, 4]))
        y = tf.add(tf.reduce_sum(branch), tf.reduce_sum(called), name="y")
    return graph, {"x:0": np.ones([3, 8], np.float32), "p:0": True}, [y]


def _nested_loops() -> Model:
    """An outer loop of 5 iterations around an inner loop of 2 with a [3,8]x[8,8] matmul."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [3, 8], name="x")
        w = tf.ones([8, 8])

        def outer(i: Any, a: Any) -> tuple[Any, Any]:
            def inner(j: Any, b: Any) -> tuple[Any, Any]:
                return j + 1, tf.matmul(b, w, name="imm")

            _, a2 = tf.while_loop(lambda j, b: j < 2, inner, [tf.constant(0), a], name="inner")
            return i + 1, a2

        _, out = tf.while_loop(lambda i, a: i < 5, outer, [tf.constant(0), x], name="outer")
        y = tf.reduce_sum(out, name="y")
    return graph, {"x:0": np.ones([3, 8], np.float32)}, [y]


BUILDERS: dict[str, Callable[[], Model]] = {
    "mlp": _mlp,
    "cnn": _cnn,
    "attention": _attention,
    "control_flow": _control_flow,
}


def _run(model: Model) -> Any:
    """Run the fetches once with FULL_TRACE; the RunMetadata (TF's message)."""
    graph, feeds, fetches = model
    meta = tf1.RunMetadata()
    with tf1.Session(graph=graph) as sess:
        sess.run(tf1.variables_initializer(graph.get_collection("variables")))
        options = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
        sess.run(fetches, feeds, options=options, run_metadata=meta)
    return meta


_TRACED: dict[str, tuple[Model, Any]] = {}


def _traced(name: str) -> tuple[Model, Any]:
    """A built and run model with its RunMetadata (cached: the graph is TF's fill-free
    as long as only ``corrected_flops`` touches it)."""
    if name not in _TRACED:
        model = BUILDERS[name]() if name in BUILDERS else _nested_loops()
        _TRACED[name] = (model, _run(model))
    return _TRACED[name]


def _body_row(table: F.FlopTable, prefix: str, op: str) -> F.FlopRow:
    """The one row under ``prefix`` with op type ``op`` (function-body node names get
    TensorFlow's ``_0`` suffixes, e.g. ``loop/body/mm_0``)."""
    rows = [r for r in table if r.name.startswith(prefix) and r.op == op]
    assert len(rows) == 1, [r.name for r in rows]
    return rows[0]


def _table(name: str, with_meta: bool = True, **kwargs: Any) -> F.FlopTable:
    (graph, _, _), meta = _traced(name)
    return F.corrected_flops(graph, meta if with_meta else None, **kwargs)
