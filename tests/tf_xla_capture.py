"""TensorFlow runs with XLA profiled on the CPU: ``jit_compile=True`` and auto-clustering.

Run as ``python tests/tf_xla_capture.py OUT KIND`` (a child process of the
tests: TensorFlow and XLA's flags stay out of the test process). ``KIND``:

* ``jit_compile``: a TF2 ``tf.function(jit_compile=True)`` (one dense layer
  under ``tf.name_scope("dense")``: tanh of a 64x256 by 256x512 product,
  summed), called :data:`STEPS` times inside ``tf.profiler.experimental``'s
  trace, each call in a ``Trace("train", step_num=i)``;
* ``autoclustering``: the same layer in a TF1 graph run by a ``Session`` with
  ``global_jit_level=ON_1`` and ``--tf_xla_cpu_global_jit`` (XLA compiles the
  cluster it forms), :data:`STEPS` runs traced the same way.

Writes ``OUT/capture.json``: ``{"xspace": path, "steps": STEPS, "flops": the
layer's matmul FLOPs}``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

#: Calls (runs) traced.
STEPS = 4
BATCH, WIDTH, UNITS = 64, 256, 512


def _jit_compile(trace: str) -> None:
    import tensorflow as tf

    @tf.function(jit_compile=True)
    def step(w: tf.Tensor, x: tf.Tensor) -> tf.Tensor:
        with tf.name_scope("dense"):
            y = tf.tanh(tf.matmul(x, w))
        return tf.reduce_sum(y)

    w, x = tf.random.normal((WIDTH, UNITS)), tf.random.normal((BATCH, WIDTH))
    step(w, x)
    tf.profiler.experimental.start(trace)
    for i in range(STEPS):
        with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
            step(w, x)
    tf.profiler.experimental.stop()


def _autoclustering(trace: str) -> None:
    import numpy as np
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    x = tf.compat.v1.placeholder(tf.float32, (BATCH, WIDTH))
    w = tf.Variable(tf.random.normal((WIDTH, UNITS)))
    with tf.name_scope("dense"):
        y = tf.reduce_sum(tf.tanh(tf.matmul(x, w)))
    config = tf.compat.v1.ConfigProto()
    config.graph_options.optimizer_options.global_jit_level = tf.compat.v1.OptimizerOptions.ON_1
    feed = {x: np.ones((BATCH, WIDTH), np.float32)}
    with tf.compat.v1.Session(config=config) as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        sess.run(y, feed)
        tf.profiler.experimental.start(trace)
        for i in range(STEPS):
            with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
                sess.run(y, feed)
        tf.profiler.experimental.stop()


def main(out: Path, kind: str) -> None:
    """Profile the ``kind`` run into ``out/trace``; write ``out/capture.json``."""
    if kind == "autoclustering":
        os.environ["TF_XLA_FLAGS"] = "--tf_xla_cpu_global_jit"
    (_autoclustering if kind == "autoclustering" else _jit_compile)(str(out / "trace"))
    (xspace,) = sorted((out / "trace").glob("plugins/profile/*/*.xplane.pb"))
    summary = {"xspace": str(xspace), "steps": STEPS, "flops": 2 * BATCH * WIDTH * UNITS}
    (out / "capture.json").write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve(), sys.argv[2])
