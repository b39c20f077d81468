"""Quickstart: profile a small TF1-style training loop with tfprof_lite.

Builds a two-layer classifier in graph mode, traces its plain ``Session`` loop with
a ``ProfileContext`` (``profile_<step>`` files in ``./tfprof_out/``), prints the scope
and op views exactly as ``tf.compat.v1.profiler`` would, and saves a text report.

Run: ``python examples/quickstart.py`` (``make run`` does this in a fresh venv).
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import tfprof_lite  # noqa: E402

tf1 = tf.compat.v1
OUT_DIR = os.path.join(os.getcwd(), "tfprof_out")
STEPS = 5
MONITORED_STEPS = 200


def build_model(graph: tf.Graph) -> tuple[tf.Tensor, tf.Tensor, tf.Operation]:
    """A 784-128-10 classifier with cross-entropy loss and plain SGD."""
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 784], name="x")
        y = tf1.placeholder(tf.int64, [None], name="y")
        with tf1.variable_scope("dense1"):
            w1 = tf1.get_variable("w", [784, 128])
            b1 = tf1.get_variable("b", [128], initializer=tf1.zeros_initializer())
            h = tf.nn.relu(tf.matmul(x, w1) + b1)
        with tf1.variable_scope("dense2"):
            w2 = tf1.get_variable("w", [128, 10])
            b2 = tf1.get_variable("b", [10], initializer=tf1.zeros_initializer())
            logits = tf.matmul(h, w2) + b2
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits), name="loss"
        )
        train_op = tf1.train.GradientDescentOptimizer(0.1).minimize(loss)
    return x, y, train_op


def main() -> None:
    """Train a few traced steps and print/save the profile."""
    os.makedirs(OUT_DIR, exist_ok=True)
    graph = tf.Graph()
    x, y, train_op = build_model(graph)
    rng = np.random.default_rng(0)
    with tf1.Session(graph=graph) as sess:
        sess.run(tf1.global_variables_initializer())
        # Each sess.run in the context is a step from 0; dump profile_2, profile_4.
        with tfprof_lite.ProfileContext(
            OUT_DIR, trace_steps=range(STEPS), dump_steps=[STEPS // 2, STEPS - 1]
        ) as pctx:
            for _ in range(STEPS):
                feed = {x: rng.random((64, 784), np.float32), y: rng.integers(0, 10, 64)}
                sess.run(train_op, feed_dict=feed)
        # Live monitoring (docs/monitoring.md): a line every 100 steps on stderr, the
        # same as JSON in tfprof_out/monitor.jsonl, and a summary line at the end.
        with tfprof_lite.Monitor(OUT_DIR, level=2, every=100):
            for _ in range(MONITORED_STEPS):
                feed = {x: rng.random((64, 784), np.float32), y: rng.integers(0, 10, 64)}
                sess.run(train_op, feed_dict=feed)
    profiler = pctx.profiler
    assert profiler is not None
    builder = tfprof_lite.ProfileOptionBuilder
    scope_opts = builder(builder.time_and_memory()).with_max_depth(4).build()
    profiler.profile_name_scope(scope_opts)
    op_opts = builder(builder.time_and_memory()).select(["micros", "bytes", "occurrence"]).build()
    profiler.profile_operations(op_opts)
    params = builder.trainable_variables_parameter()
    profiler.profile_name_scope(
        builder(params).with_file_output(os.path.join(OUT_DIR, "params.txt")).build()
    )
    saved = ", ".join(os.path.join(OUT_DIR, name) for name in pctx.written_profiles)
    print(f"\nSaved the profiles {saved} and the parameter report to {OUT_DIR}/params.txt")
    print(f"Monitoring log: {OUT_DIR}/monitor.jsonl (tfprof-lite monitor {OUT_DIR})")


if __name__ == "__main__":
    main()
