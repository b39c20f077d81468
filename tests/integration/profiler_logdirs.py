"""Real TensorBoard logdirs as Keras and JAX users have them, made in a child process.

``python -m tests.integration.profiler_logdirs keras LOGDIR`` fits a small Keras 3
model twice with ``tf.keras.callbacks.TensorBoard(LOGDIR, profile_batch=(2, 3))``:
two runs in ``LOGDIR/train/plugins/profile/<run>/<host>.xplane.pb``, a second
apart (run folders are named by their start second). Without the
``tensorboard`` package (``tensorflow-cpu`` does not install it) the callback's
scalar and histogram summaries are left out; its profiling is Keras' own.

``python -m tests.integration.profiler_logdirs jax LOGDIR`` runs a jitted loop under
``jax.profiler.start_trace(LOGDIR)``: ``LOGDIR/plugins/profile/<run>/`` holds
``<host>.xplane.pb`` and the ``<host>.trace.json.gz`` JAX writes beside it.

:func:`logdir` makes one (once per test run, shared by the pytest-xdist
workers) and returns it; a missing TensorFlow or JAX skips the test, or fails
it under ``CI=true``.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.stepcols import skip_or_fail

REPO_ROOT = Path(__file__).resolve().parents[2]
#: Batches per epoch, and the batches the callback profiles (counted from 1).
KERAS_BATCHES = 6
PROFILE_BATCH = (2, 3)
#: Steps the JAX loop traces.
JAX_STEPS = 4
_NEEDS = {"keras": "tensorflow", "jax": "jax"}
_TIMEOUT_S = 300


def _summary_without_tensorboard(tf: Any) -> Any:
    """``tf.summary`` with the summaries that need ``tensorboard`` made no-ops."""

    class Summary:
        def __getattr__(self, name: str) -> Any:
            if name in ("scalar", "histogram", "image", "text", "audio"):
                return lambda *args, **kwargs: True
            return getattr(tf.summary, name)

    return Summary()


def _keras(logdir: str) -> None:
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    data = rng.standard_normal((16 * KERAS_BATCHES, 8)).astype("float32")
    labels = rng.standard_normal((16 * KERAS_BATCHES, 1)).astype("float32")
    model = tf.keras.Sequential(
        [tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
         tf.keras.layers.Dense(1)]
    )  # fmt: skip
    model.compile("sgd", "mse")
    for run in range(2):
        if run:
            time.sleep(1.1)  # the second run's folder gets a later name
        board = tf.keras.callbacks.TensorBoard(logdir, profile_batch=PROFILE_BATCH)
        if importlib.util.find_spec("tensorboard") is None:
            board._summary_module = _summary_without_tensorboard(tf)
        model.fit(
            data,
            labels,
            batch_size=16,
            epochs=1,
            verbose=0,
            validation_split=0.25,
            callbacks=[board],
        )


def _jax(logdir: str) -> None:
    import jax
    import jax.numpy as jnp

    @jax.jit
    def step(w: Any, x: Any) -> Any:
        return w - 0.01 * jax.grad(lambda w: jnp.tanh(x @ w).sum())(w)

    w, x = jnp.ones((32, 32)), jnp.ones((16, 32))
    w = step(w, x).block_until_ready()
    jax.profiler.start_trace(logdir)
    for i in range(JAX_STEPS):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            w = step(w, x).block_until_ready()
    jax.profiler.stop_trace()


def _shared_root(factory: pytest.TempPathFactory) -> Path:
    """One folder per test run, shared by its pytest-xdist workers."""
    base = factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "logdirs"
    root.mkdir(parents=True, exist_ok=True)
    return root


def _make(kind: str, out: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), TF_CPP_MIN_LOG_LEVEL="3",
               CUDA_VISIBLE_DEVICES="", JAX_PLATFORMS="cpu")  # fmt: skip
    command = [sys.executable, "-m", "tests.integration.profiler_logdirs", kind, str(out)]
    done = subprocess.run(
        command, env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=_TIMEOUT_S
    )
    if done.returncode != 0:
        raise AssertionError(
            f"the {kind} capture failed ({done.returncode}):\n{done.stderr[-4000:]}"
        )


def logdir(kind: str, factory: pytest.TempPathFactory) -> Path:
    """The ``kind`` (``keras`` or ``jax``) logdir, made once per test run."""
    if importlib.util.find_spec(_NEEDS[kind]) is None:
        skip_or_fail(f"{_NEEDS[kind]} is not installed: no {kind} capture")
    root = _shared_root(factory)
    out = root / kind
    with open(root / f"{kind}.lock", "w") as lock:  # one maker across the workers
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / f"{kind}.done").exists():
            _make(kind, out)
            (root / f"{kind}.done").write_text("ok")
    return out


if __name__ == "__main__":
    {"keras": _keras, "jax": _jax}[sys.argv[1]](sys.argv[2])
