"""Small TF 2.21 CPU profiles (``*.xplane.pb``) made in a child process.

``python -m tests.integration.xspace_tf_small LOGDIR [markers]`` runs a few
training steps of a ``tf.function`` under ``tf.profiler.experimental`` and
writes ``LOGDIR/plugins/profile/<run>/<host>.xplane.pb``; with ``markers`` each
step is inside ``tf.profiler.experimental.Trace("train", step_num=i, _r=1)``.
:func:`capture` runs it and returns the file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

STEPS = 4


def capture(logdir: Path, markers: bool = True) -> Path:
    """Run the capture into ``logdir`` (once) and return its ``*.xplane.pb``."""
    found = sorted(logdir.glob("plugins/profile/*/*.xplane.pb"))
    if not found:
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
        args = [sys.executable, "-m", "tests.integration.xspace_tf_small", str(logdir)]
        subprocess.run([*args, "markers" if markers else "plain"], check=True, env=env)
        found = sorted(logdir.glob("plugins/profile/*/*.xplane.pb"))
    assert found, logdir
    return found[0]


def _main(logdir: str, markers: bool) -> None:
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
    _main(sys.argv[1], sys.argv[2] == "markers")
