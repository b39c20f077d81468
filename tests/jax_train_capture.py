"""A JAX training loop profiled on the CPU, with what ran recorded beside it.

Run as ``python tests/jax_train_capture.py OUT`` (a child process of the tests:
JAX stays out of the test process). A small MLP classifier (two dense layers
under ``jax.named_scope``, tanh, softmax cross-entropy, SGD) is compiled once;
XLA's own numbers for that executable are recorded (``cost_analysis()``,
``memory_analysis()``), then :data:`STEPS` steps run under
``jax.profiler.trace(OUT/trace)``, each inside
``StepTraceAnnotation("train", step_num=i)`` and timed with
``time.perf_counter()``. ``OUT/capture.json``::

    {"jax": "0.10.2", "xspace": ".../plugins/profile/<run>/<host>.xplane.pb",
     "module": "jit_train_step", "steps": 6, "step_seconds": [...],
     "cost": {"flops": ..., "bytes accessed": ..., ...},
     "memory": {"argument_size_in_bytes": ..., ...}}
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

#: Steps traced.
STEPS = 6
#: Batch, input, hidden and class sizes.
SIZES = (64, 256, 512, 10)


def _step() -> tuple[Any, tuple[Any, ...]]:
    import jax
    import jax.numpy as jnp

    batch, width, hidden, classes = SIZES

    def loss(params: dict[str, Any], x: Any, y: Any) -> Any:
        with jax.named_scope("mlp"):
            with jax.named_scope("dense0"):
                h = jnp.tanh(x @ params["w0"] + params["b0"])
            with jax.named_scope("logits"):
                logits = h @ params["w1"] + params["b1"]
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))

    def train_step(params: dict[str, Any], x: Any, y: Any) -> tuple[Any, dict[str, Any]]:
        value, grads = jax.value_and_grad(loss)(params, x, y)
        return value, jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)

    key = jax.random.PRNGKey(0)
    params = {
        "w0": jax.random.normal(key, (width, hidden)) * 0.05,
        "b0": jnp.zeros(hidden),
        "w1": jax.random.normal(key, (hidden, classes)) * 0.05,
        "b1": jnp.zeros(classes),
    }
    x = jax.random.normal(key, (batch, width))
    y = jax.nn.one_hot(jnp.arange(batch) % classes, classes)
    return jax.jit(train_step), (params, x, y)


def main(out: Path) -> None:
    """Compile, record XLA's numbers, profile the loop; write ``out/capture.json``."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    step, (params, x, y) = _step()
    compiled = step.lower(params, x, y).compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    stats = compiled.memory_analysis()
    memory = {
        name: int(getattr(stats, name))
        for name in dir(stats)
        if name.endswith("_in_bytes") and isinstance(getattr(stats, name), int)
    }
    loss, params = compiled(params, x, y)  # warm
    jax.block_until_ready(loss)
    seconds = []
    with jax.profiler.trace(str(out / "trace")):
        for i in range(STEPS):
            start = time.perf_counter()
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                loss, params = compiled(params, x, y)
                jax.block_until_ready(loss)
            seconds.append(time.perf_counter() - start)
    (xspace,) = sorted((out / "trace").glob("plugins/profile/*/*.xplane.pb"))
    summary = {
        "jax": jax.__version__,
        "xspace": str(xspace),
        "module": "jit_train_step",
        "steps": STEPS,
        "step_seconds": seconds,
        "cost": {k: float(v) for k, v in cost.items()},
        "memory": memory,
    }
    (out / "capture.json").write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
