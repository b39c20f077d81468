"""JAX programs compiled, run and profiled on the CPU, for the memory-viewer tests.

Run as ``python tests/jax_memory_programs.py OUT`` (by
``tests/integration/test_program_memory_jax.py``, in a child process: JAX and
XLA's dump flag stay out of the test process). It sets
``XLA_FLAGS=--xla_dump_to=OUT/dump`` before importing JAX, compiles each program
of :data:`PROGRAMS` once (``jax.jit(...).lower(...).compile()``), records what
XLA says of its memory (``compiled.memory_analysis()``), runs that same
executable twice inside ``jax.profiler.trace(OUT/trace)`` and writes
``OUT/programs.json``::

    {"jax": "0.10.2", "xspace": "OUT/trace/plugins/profile/<run>/<host>.xplane.pb",
     "programs": [{"name": "mlp_train_step", "module": "jit_mlp_train_step",
                   "program_id": 12, "total_bytes": 1759272,
                   "memory_analysis": {"argument_size_in_bytes": ..., ...}}, ...]}

``program_id`` is the module id of XLA's dump files
(``module_0012.jit_mlp_train_step.*``), which is the program id the XSpace
gives the program; ``total_bytes`` is the "Total bytes" line of that module's
``*-memory-usage-report.txt`` (the default memory space).

The programs: an MLP training step with its parameters donated (parameters
aliased with outputs), a small conv net's gradient step, an RNN over 64 steps
with ``lax.scan`` (a while loop), a chain of 1024x1024 products and a sort
(large temporaries), and a program that returns an argument unchanged next to a
product with a captured array (a constant allocation).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

#: The fields of ``CompiledMemoryStats`` recorded for each program.
STATS = (
    "argument_size_in_bytes",
    "output_size_in_bytes",
    "alias_size_in_bytes",
    "temp_size_in_bytes",
    "generated_code_size_in_bytes",
    "host_argument_size_in_bytes",
    "host_output_size_in_bytes",
    "host_alias_size_in_bytes",
    "host_temp_size_in_bytes",
)

_TOTAL_RE = re.compile(r"^Total bytes: (\d+)", re.MULTILINE)


#: A program: its function, a maker of fresh arguments, its donated argument numbers.
Spec = tuple[Callable[..., Any], Callable[[], tuple[Any, ...]], tuple[int, ...]]

#: The array ``constant_passthrough`` captures: XLA makes it a constant.
TABLE = np.linspace(0.0, 1.0, 4096, dtype=np.float32).reshape(64, 64)


def _key() -> Any:
    import jax

    return jax.random.PRNGKey(0)


def mlp_train_step(params: dict[str, Any], x: Any, y: Any) -> dict[str, Any]:
    """One SGD step of a two-layer MLP (its parameters are donated)."""
    import jax
    import jax.numpy as jnp

    def loss(p: dict[str, Any]) -> Any:
        hidden = jax.nn.relu(x @ p["w1"] + p["b1"])
        return jnp.mean((hidden @ p["w2"] + p["b2"] - y) ** 2)

    grads = jax.grad(loss)(params)
    updated: dict[str, Any] = jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)
    return updated


def mlp_args() -> tuple[Any, ...]:
    """Parameters, a batch of 128 inputs and targets."""
    import jax
    import jax.numpy as jnp

    params = {
        "w1": jax.random.normal(_key(), (256, 512)),
        "b1": jnp.zeros(512),
        "w2": jax.random.normal(_key(), (512, 10)),
        "b2": jnp.zeros(10),
    }
    return params, jnp.ones((128, 256)), jnp.ones((128, 10))


def conv_net_step(params: dict[str, Any], images: Any, labels: Any) -> Any:
    """The gradient of a conv, ReLU, 2x2 pooling, dense classifier."""
    import jax
    import jax.numpy as jnp

    def loss(p: dict[str, Any]) -> Any:
        numbers = ("NHWC", "HWIO", "NHWC")
        feat = jax.lax.conv_general_dilated(
            images, p["k1"], (1, 1), "SAME", dimension_numbers=numbers
        )
        window = (1, 2, 2, 1)
        feat = jax.lax.reduce_window(jax.nn.relu(feat), 0.0, jax.lax.add, window, window, "VALID")
        logits = feat.reshape(feat.shape[0], -1) @ p["w"]
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * labels, axis=-1))

    return jax.grad(loss)(params)


def conv_args() -> tuple[Any, ...]:
    """A 3x3x3x16 kernel, the classifier, 32 images of 32x32x3 and their labels."""
    import jax
    import jax.numpy as jnp

    params = {
        "k1": jax.random.normal(_key(), (3, 3, 3, 16)),
        "w": jax.random.normal(_key(), (16 * 16 * 16, 10)),
    }
    return params, jnp.ones((32, 32, 32, 3)), jnp.ones((32, 10)) / 10


def rnn_scan(w: Any, h0: Any, xs: Any) -> tuple[Any, Any]:
    """A tanh RNN over the 64 steps of ``xs`` with ``lax.scan`` (a while loop)."""
    import jax
    import jax.numpy as jnp

    def cell(h: Any, x: Any) -> tuple[Any, Any]:
        h = jnp.tanh(h @ w + x)
        return h, h.sum()

    return jax.lax.scan(cell, h0, xs)


def rnn_args() -> tuple[Any, ...]:
    """The recurrent weights, the first state, 64 steps of inputs."""
    import jax
    import jax.numpy as jnp

    return jax.random.normal(_key(), (256, 256)), jnp.zeros((64, 256)), jnp.ones((64, 64, 256))


def big_temporary(a: Any, b: Any) -> Any:
    """1024x1024 products and a sort: temporaries of 4 MiB each."""
    import jax.numpy as jnp

    product = a @ b
    ordered = jnp.sort(product, axis=0)
    return (ordered @ product).sum(axis=0) + product.max(axis=0)


def big_args() -> tuple[Any, ...]:
    """Two 1024x1024 matrices."""
    import jax

    return jax.random.normal(_key(), (1024, 1024)), jax.random.normal(_key(), (1024, 1024))


def constant_passthrough(x: Any) -> tuple[Any, Any]:
    """``x`` unchanged, and its product with the captured :data:`TABLE`."""
    return x, x @ TABLE + 1.0


def constant_args() -> tuple[Any, ...]:
    """A 64x64 matrix."""
    import jax.numpy as jnp

    return (jnp.ones((64, 64)),)


#: Each program by name (its module is ``jit_<name>``).
PROGRAMS: dict[str, Spec] = {
    "mlp_train_step": (mlp_train_step, mlp_args, (0,)),
    "conv_net_step": (conv_net_step, conv_args, ()),
    "rnn_scan": (rnn_scan, rnn_args, ()),
    "big_temporary": (big_temporary, big_args, ()),
    "constant_passthrough": (constant_passthrough, constant_args, ()),
}


def _dump_record(dump: Path, module: str) -> tuple[int, int]:
    """(module id, "Total bytes") of ``module``'s memory-usage report in ``dump``."""
    found = sorted(dump.glob(f"module_*.{module}.*memory-usage-report.txt"))
    if len(found) != 1:
        raise SystemExit(f"{len(found)} memory-usage reports of {module} in {dump}")
    match = _TOTAL_RE.search(found[0].read_text())
    if match is None:
        raise SystemExit(f"no 'Total bytes' line in {found[0]}")
    return int(found[0].name.split(".")[0].split("_")[1]), int(match.group(1))


def main(out: Path) -> None:
    """Compile, measure, profile; write ``out/programs.json``."""
    os.environ["XLA_FLAGS"] = f"--xla_dump_to={out / 'dump'}"
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    compiled: dict[str, tuple[Any, Callable[[], tuple[Any, ...]]]] = {}
    records = []
    for name, (function, make_args, donated) in PROGRAMS.items():
        executable = jax.jit(function, donate_argnums=donated).lower(*make_args()).compile()
        compiled[name] = (executable, make_args)
        stats = executable.memory_analysis()
        module = f"jit_{name}"
        program_id, total = _dump_record(out / "dump", module)
        records.append({
            "name": name,
            "module": module,
            "program_id": program_id,
            "total_bytes": total,
            "memory_analysis": {field: int(getattr(stats, field)) for field in STATS},
        })  # fmt: skip
    with jax.profiler.trace(str(out / "trace")):
        for executable, make_args in compiled.values():
            for _ in range(2):
                jax.block_until_ready(executable(*make_args()))  # type: ignore[no-untyped-call]
    (xspace,) = sorted((out / "trace").glob("plugins/profile/*/*.xplane.pb"))
    summary = {"jax": jax.__version__, "xspace": str(xspace), "programs": records}
    (out / "programs.json").write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
