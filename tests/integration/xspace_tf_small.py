"""Small TF 2.21 CPU profiles (``*.xplane.pb``) made in a child process.

``python -m tests.integration.xspace_tf_small LOGDIR MODE`` profiles a few
training steps under ``tf.profiler.experimental`` and writes
``LOGDIR/plugins/profile/<run>/<host>.xplane.pb``. Modes: ``markers`` (a
``tf.function`` step inside ``tf.profiler.experimental.Trace("train",
step_num=i, _r=1)``), ``plain`` (the same without markers), ``keras`` (one
epoch of Keras ``fit``, :data:`KERAS_STEPS` batches) and ``session`` (a TF1
graph run by ``Session.run``, :data:`STEPS` times). :func:`capture` runs it
and returns the file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

STEPS = 4
KERAS_STEPS = 8


def capture(logdir: Path, mode: str = "markers") -> Path:
    """Run the capture into ``logdir`` (once) and return its ``*.xplane.pb``."""
    found = sorted(logdir.glob("plugins/profile/*/*.xplane.pb"))
    if not found:
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
        args = [sys.executable, "-m", "tests.integration.xspace_tf_small", str(logdir)]
        subprocess.run([*args, mode], check=True, env=env)
        found = sorted(logdir.glob("plugins/profile/*/*.xplane.pb"))
    assert found, logdir
    return found[0]


def _keras(logdir: str) -> None:
    import keras
    import numpy as np
    import tensorflow as tf

    x = np.random.rand(64 * KERAS_STEPS, 20).astype("float32")
    y = np.random.randint(0, 3, len(x))
    model = keras.Sequential(
        [keras.Input((20,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(3)]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=64, epochs=1, verbose=0)
    tf.profiler.experimental.start(logdir)
    model.fit(x, y, batch_size=64, epochs=1, verbose=0)
    tf.profiler.experimental.stop()


def _session(logdir: str) -> None:
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.random.normal((64, 128))
        w = tf.compat.v1.get_variable("w", (128, 32))
        y = tf.reduce_sum(tf.nn.relu(tf.matmul(x, w, name="matmul")), name="total")
        init = tf.compat.v1.global_variables_initializer()
    with tf.compat.v1.Session(graph=graph) as sess:
        sess.run(init)
        tf.profiler.experimental.start(logdir)
        for _ in range(STEPS):
            sess.run(y)
        tf.profiler.experimental.stop()


def _main(logdir: str, mode: str) -> None:
    if mode == "keras":
        return _keras(logdir)
    if mode == "session":
        return _session(logdir)
    markers = mode == "markers"
    import tensorflow as tf

    x = tf.random.normal((64, 128))
    w = tf.Variable(tf.random.normal((128, 32)))

    @tf.function
    def step(x: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(tf.nn.relu(tf.matmul(x, w)))
        w.assign_sub(0.01 * tape.gradient(y, w))
        return y

    step(x)
    tf.profiler.experimental.start(logdir)
    for i in range(STEPS):
        if markers:
            with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
                step(x).numpy()
        else:
            step(x).numpy()
    tf.profiler.experimental.stop()


if __name__ == "__main__":
    _main(sys.argv[1], sys.argv[2])
