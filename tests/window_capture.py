"""A Keras ``fit`` capture with work and allocations outside its traced steps.

Run as ``python tests/window_capture.py OUT`` (a child process of the tests:
TensorFlow stays out of the test process). TensorFlow 2.21 on CPU with the BFC
host allocator (``TF_CPU_ALLOCATOR_USE_BFC=true``: the default CPU allocator
writes no allocator events). The profiler starts before ``fit``; between the
start and the first traced batch the script makes a tensor of
:data:`BEFORE_BYTES` and runs a few eager ops on it; the batches
:data:`TRACED` are marked ``Trace("train", step_num=N, _r=1)``; after ``fit``
(so after the last step) it makes a tensor of :data:`AFTER_BYTES` and runs
eager ops again, then stops the profiler.

``OUT/logdir`` holds the capture; ``OUT/capture.json``: ``{"xspace", "traced",
"before_bytes", "after_bytes"}``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

#: Batches of ``fit`` (all traced but the first) and the batch size.
BATCHES, BATCH = 6, 32
#: The batches marked as steps (Keras' batch index).
TRACED = (1, 2, 3, 4)
#: The tensors made before the first step and after the last (float32).
BEFORE_BYTES = 6 * 1024 * 1024
AFTER_BYTES = 3 * 1024 * 1024


def _outside(tf: Any, nbytes: int) -> Any:
    """A tensor of ``nbytes`` and a few eager ops on it, outside every step."""
    big = tf.ones([nbytes // 4], dtype=tf.float32)
    total = tf.reduce_sum(tf.square(big))
    return big, float(total.numpy())


def main(out: Path) -> None:
    """Make the capture in ``out``."""
    os.environ["TF_CPU_ALLOCATOR_USE_BFC"] = "true"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    data = rng.standard_normal((BATCH * BATCHES, 64)).astype("float32")
    labels = rng.integers(0, 10, len(data))
    model = keras.Sequential(
        [keras.Input((64,)), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)]
    )
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(data[:BATCH], labels[:BATCH], batch_size=BATCH, epochs=1, verbose=0)  # warm-up
    logdir = str(out / "logdir")
    kept: list[Any] = []

    class Marked(keras.callbacks.Callback):  # type: ignore[misc]
        """Each traced batch inside a step marker."""

        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            self.trace = None
            if batch in TRACED:
                self.trace = tf.profiler.experimental.Trace("train", step_num=batch, _r=1)
                self.trace.__enter__()

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            if self.trace is not None:
                self.trace.__exit__(None, None, None)

    tf.profiler.experimental.start(logdir)
    kept.append(_outside(tf, BEFORE_BYTES))
    model.fit(data, labels, batch_size=BATCH, epochs=1, verbose=0, callbacks=[Marked()])
    kept.append(_outside(tf, AFTER_BYTES))
    tf.profiler.experimental.stop()
    (found,) = sorted(Path(logdir).glob("plugins/profile/*/*.xplane.pb"))
    meta = {"xspace": str(found), "traced": list(TRACED), "before_bytes": BEFORE_BYTES,
            "after_bytes": AFTER_BYTES}  # fmt: skip
    (out / "capture.json").write_text(json.dumps(meta, indent=1))
    sys.stdout.flush()
    os._exit(0)  # (TensorFlow's exit can hang on its threads)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
