"""Input-bound and compute-bound loops, profiled, each with its own step timer.

Run as ``python tests/input_capture.py OUT MODE`` (a child process of the
tests: TensorFlow and JAX stay out of the test process). Modes:

* ``keras_slow``: Keras ``fit`` over ``tf.data`` whose ``map`` sleeps
  :data:`MAP_SLEEP_S` per element (``.map(f).batch(B).prefetch(1)``): about
  ``B * MAP_SLEEP_S`` of input per step;
* ``keras_fast``: the same pipeline without the sleep and a larger model;
* ``tf_custom``: a custom loop reading a slow ``tf.data`` iterator eagerly
  (``next(it)``) then running a ``tf.function`` step, each step marked with
  ``tf.profiler.experimental.Trace("train", step_num=i, _r=1)``;
* ``jax_slow``: a JAX CPU loop whose host makes each batch slowly (a sleep
  of :data:`HOST_SLEEP_S` and NumPy), ``device_put`` s it and runs a small
  step, marked with ``StepTraceAnnotation``;
* ``jax_fast``: the same loop with batches made beforehand and a larger step.

Each loop times every step with ``time.perf_counter()`` from the end of the
previous one; ``OUT/capture.json``: ``{"mode", "xspace", "step_seconds",
"traced", "made_slow_s", "host_seconds"}`` (``made_slow_s``: the sleep put
in each step; ``host_seconds``: JAX, each step's batch making as timed).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

MODES = ("keras_slow", "keras_fast", "tf_custom", "jax_slow", "jax_fast")
#: Keras/TF: batches traced and the batch size; each element's map sleep.
BATCHES, BATCH, MAP_SLEEP_S = 10, 16, 0.0005
#: JAX: untraced steps, traced steps; the host's sleep per batch.
WARM, TRACED, HOST_SLEEP_S = 3, 10, 0.008


def _dataset(slow: bool, width: int) -> Any:
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    x = rng.random((BATCHES * BATCH, width), dtype=np.float32)
    y = rng.integers(0, 10, len(x))

    def nap(a: Any) -> Any:
        time.sleep(MAP_SLEEP_S)
        return a

    def parse(a: Any, b: Any) -> tuple[Any, Any]:
        if slow:
            a = tf.py_function(nap, [a], tf.float32)
            a.set_shape((width,))
        return a, b

    ds = tf.data.Dataset.from_tensor_slices((x, y)).map(parse)
    return ds.batch(BATCH)


def _keras(out: Path, slow: bool) -> list[float]:
    import keras
    import tensorflow as tf
    from keras_timer import batch_timer  # (tests/, this script's folder)

    width = 64 if slow else 1024
    units = 32 if slow else 2048
    dense = keras.layers.Dense
    layers = [keras.Input((width,)), dense(units, "relu"), dense(units, "relu"), dense(10)]
    model = keras.Sequential(layers)
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    ds = _dataset(slow, width).prefetch(1)
    model.fit(ds, epochs=1, verbose=0)  # builds the functions
    seconds: list[float] = []

    tf.profiler.experimental.start(str(out / "trace"))
    model.fit(ds, epochs=1, verbose=0, callbacks=[batch_timer(seconds)])
    tf.profiler.experimental.stop()
    return seconds


def _tf_custom(out: Path) -> list[float]:
    import tensorflow as tf

    w = tf.Variable(tf.random.normal((64, 10)))

    @tf.function
    def step(x: Any, y: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(x @ w - tf.cast(y[:, None], tf.float32)))
        w.assign_sub(0.01 * tape.gradient(loss, w))
        return loss

    ds = _dataset(True, 64).repeat()
    it = iter(ds)
    step(*next(it))
    seconds: list[float] = []
    tf.profiler.experimental.start(str(out / "trace"))
    prev = time.perf_counter()
    for i in range(BATCHES):
        with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
            x, y = next(it)
            step(x, y).numpy()
        now = time.perf_counter()
        seconds.append(now - prev)
        prev = now
    tf.profiler.experimental.stop()
    return seconds


def _jax(out: Path, slow: bool) -> tuple[list[float], list[int]]:
    import jax
    import jax.numpy as jnp
    import numpy as np

    width = 256 if slow else 1024

    @jax.jit
    def step(w: Any, x: Any) -> Any:
        return w - 0.001 * (x.T @ jnp.tanh(x @ w))

    rng = np.random.default_rng(0)
    w = jnp.zeros((width, width))
    ready = [rng.random((512, width), dtype=np.float32) for _ in range(4)]
    seconds: list[float] = []
    traced: list[int] = []
    host: list[float] = []
    prev = time.perf_counter()
    for i in range(WARM + TRACED):
        if i == WARM:
            jax.profiler.start_trace(str(out / "trace"))
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            made = time.perf_counter()
            if slow:
                time.sleep(HOST_SLEEP_S)
                batch = np.sort(rng.random((512, width), dtype=np.float32), axis=0)
            else:
                batch = ready[i % 4]
            host.append(time.perf_counter() - made)
            w = step(w, jax.device_put(batch))
            jax.block_until_ready(w)
        now = time.perf_counter()
        seconds.append(now - prev)
        prev = now
        if i >= WARM:
            traced.append(i)
    jax.profiler.stop_trace()
    _HOST.extend(host)
    return seconds, traced


_HOST: list[float] = []


def main(out: Path, mode: str) -> None:
    """Run ``mode`` (one of :data:`MODES`); write ``out/capture.json``."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    if mode.startswith("jax"):
        seconds, traced = _jax(out, mode == "jax_slow")
        slow_s = HOST_SLEEP_S if mode == "jax_slow" else 0.0
    else:
        seconds = _tf_custom(out) if mode == "tf_custom" else _keras(out, mode == "keras_slow")
        traced = list(range(len(seconds)))
        slow_s = BATCH * MAP_SLEEP_S if mode != "keras_fast" else 0.0
    (xspace,) = sorted((out / "trace").glob("plugins/profile/*/*.xplane.pb"))
    summary = {"mode": mode, "xspace": str(xspace), "step_seconds": seconds,
               "traced": traced, "made_slow_s": slow_s, "host_seconds": _HOST}  # fmt: skip
    (out / "capture.json").write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve(), sys.argv[2])
    # An endless tf.data iterator whose map runs a py_function can keep the
    # interpreter from finishing at exit (its prefetch thread waits for the GIL
    # the shutdown holds): the capture is written, so leave at once.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
