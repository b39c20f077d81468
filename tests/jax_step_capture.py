"""A JAX training loop on the CPU, profiled mid-loop, with its own step timer.

Run as ``python tests/jax_step_capture.py OUT MODE`` (a child process of the
tests: JAX stays out of the test process). Each iteration reads a batch on the
host (a sleep of :data:`READ_S`, then numpy), runs a small staging program (``jit_stage``) on it
:data:`STAGES` times, then the training step (``jit_train_step``, an MLP with
SGD) and waits for it. The loop times every iteration with
``time.perf_counter()`` from the end of the previous one (so the times add up
to the loop's wall time), runs :data:`WARM` untimed iterations, starts
``jax.profiler.start_trace`` before iteration :data:`WARM`, stops it after
:data:`TRACED` iterations and runs :data:`AFTER` more.

Modes:

* ``markers``: the staging and training programs inside
  ``StepTraceAnnotation("train", step_num=i)``;
* ``plain``: the same loop without markers;
* ``irregular``: no markers, and the host sleeps a random time (up to
  :data:`IRREGULAR_S`) before each step: the training program runs at
  irregular times;
* ``once``: no loop: a few different programs run once each (and the
  training step twice): nothing repeats.

``OUT/capture.json``: ``{"jax", "mode", "xspace", "stages", "step_seconds"
(every iteration), "traced" (the indices of the traced iterations)}``. The
first traced iteration's timer includes ``start_trace``: it began before the
trace did.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

#: Untraced iterations first (compiling), traced ones, and untraced ones after.
WARM, TRACED, AFTER = 3, 12, 2
#: Runs of the staging program per iteration.
STAGES = 2
#: Batch, input, hidden and class sizes.
SIZES = (128, 512, 1024, 10)
MODES = ("markers", "plain", "irregular", "once")
#: Each iteration reads its batch for this long (a sleep: steady under load) ...
READ_S = 0.004
#: ... and the irregular loop sleeps up to this long more, at random.
IRREGULAR_S = 0.04


def _programs() -> tuple[Any, Any, Any, Any]:
    import jax
    import jax.numpy as jnp

    _, width, hidden, classes = SIZES

    def loss(params: dict[str, Any], x: Any, y: Any) -> Any:
        h = jnp.tanh(x @ params["w0"] + params["b0"])
        logits = h @ params["w1"] + params["b1"]
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))

    def train_step(params: dict[str, Any], x: Any, y: Any) -> tuple[Any, dict[str, Any]]:
        value, grads = jax.value_and_grad(loss)(params, x, y)
        return value, jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)

    def stage(x: Any) -> Any:
        return (x - 0.5) * 2.0

    key = jax.random.PRNGKey(0)
    params = {
        "w0": jax.random.normal(key, (width, hidden)) * 0.05,
        "b0": jnp.zeros(hidden),
        "w1": jax.random.normal(key, (hidden, classes)) * 0.05,
        "b1": jnp.zeros(classes),
    }
    labels = jax.nn.one_hot(jnp.arange(SIZES[0]) % classes, classes)
    return jax.jit(train_step), jax.jit(stage), params, labels


def _loop(out: Path, mode: str) -> tuple[list[float], list[int]]:
    import jax
    import numpy as np

    train, stage, params, y = _programs()
    rng = np.random.default_rng(0)
    seconds: list[float] = []
    traced: list[int] = []
    prev = time.perf_counter()
    for i in range(WARM + TRACED + AFTER):
        if i == WARM:
            jax.profiler.start_trace(str(out / "trace"))
        if mode == "irregular" and i >= WARM:
            time.sleep(rng.uniform(0.0, 1.0) * IRREGULAR_S)
        time.sleep(READ_S)
        batch = rng.random((SIZES[0], SIZES[1]), dtype=np.float32)
        if mode == "markers":
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                params = _step(train, stage, params, batch, y)
        else:
            params = _step(train, stage, params, batch, y)
        now = time.perf_counter()
        seconds.append(now - prev)
        prev = now
        if WARM <= i < WARM + TRACED:
            traced.append(i)
        if i == WARM + TRACED - 1:
            jax.profiler.stop_trace()
    return seconds, traced


def _step(train: Any, stage: Any, params: Any, batch: Any, y: Any) -> Any:
    import jax

    x = batch
    for _ in range(STAGES):
        x = stage(x)
    loss, params = train(params, x, y)
    jax.block_until_ready(loss)
    return params


def _once(out: Path) -> None:
    import jax
    import jax.numpy as jnp

    train, stage, params, y = _programs()
    x = jnp.ones((SIZES[0], SIZES[1]))
    jax.block_until_ready(train(params, stage(x), y))  # compiled outside the trace
    jax.profiler.start_trace(str(out / "trace"))
    for fn in (jnp.sin, jnp.cos, jnp.tanh, jnp.exp):
        jax.block_until_ready(jax.jit(fn)(x))
    for _ in range(2):
        jax.block_until_ready(train(params, stage(x), y))
    jax.profiler.stop_trace()


def main(out: Path, mode: str) -> None:
    """Run ``mode`` (one of :data:`MODES`); write ``out/capture.json``."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    seconds: list[float] = []
    traced: list[int] = []
    if mode == "once":
        _once(out)
    else:
        seconds, traced = _loop(out, mode)
    (xspace,) = sorted((out / "trace").glob("plugins/profile/*/*.xplane.pb"))
    summary = {
        "jax": jax.__version__,
        "mode": mode,
        "xspace": str(xspace),
        "stages": STAGES,
        "step_seconds": seconds,
        "traced": traced,
    }
    (out / "capture.json").write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve(), sys.argv[2])
