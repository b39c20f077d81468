"""A JAX CPU loop of many small steps, each in ``StepTraceAnnotation("train")``.

Run as ``python tests/jax_many_steps.py OUT STEPS`` (a child process of the
tests: JAX stays out of the test process). A tiny jitted step (an 8x8 matmul,
``tanh`` and an update) runs :data:`WARM` times untraced (compiling), then
``STEPS`` times under ``jax.profiler.start_trace``, each waited for. The loop
times every traced iteration with ``time.perf_counter()`` from the end of the
previous one (the first from just after ``start_trace``), so the times add up
to the traced loop's wall time.

``OUT/capture.json``: ``{"jax", "xspace", "steps", "step_seconds"}``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

#: Untraced iterations first (compiling).
WARM = 3


def main(out: Path, steps: int) -> None:
    """Run the loop; write ``out/capture.json``."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import jax.numpy as jnp

    @jax.jit
    def step(w: jax.Array, x: jax.Array) -> jax.Array:
        return w - 0.01 * jnp.tanh(x @ w)

    w, x = jnp.ones((8, 8)), jnp.ones((8, 8))
    for _ in range(WARM):
        w = step(w, x).block_until_ready()
    jax.profiler.start_trace(str(out / "trace"))
    seconds: list[float] = []
    prev = time.perf_counter()
    for i in range(steps):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            w = step(w, x)
            w.block_until_ready()
        now = time.perf_counter()
        seconds.append(now - prev)
        prev = now
    jax.profiler.stop_trace()
    (xspace,) = sorted((out / "trace").glob("plugins/profile/*/*.xplane.pb"))
    summary = {"jax": jax.__version__, "xspace": str(xspace), "steps": steps,
               "step_seconds": seconds}  # fmt: skip
    (out / "capture.json").write_text(json.dumps(summary))


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve(), int(sys.argv[2]))
