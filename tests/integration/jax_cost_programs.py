"""JAX programs whose XLA cost analysis the HLO cost model is checked against.

Run as a script (``python jax_cost_programs.py OUTDIR``, JAX on CPU) it compiles
every program of :data:`PROGRAMS`, records ``compiled.cost_analysis()`` and the
compiled ``HloModuleProto`` of each, then runs each once under
``jax.profiler.start_trace(OUTDIR/trace)`` so the XSpace's ``/host:metadata``
plane carries the same programs. It writes ``OUTDIR/costs.json``::

    {"<name>": {"module": "jit_<name>", "flops": ..., "transcendentals": ...,
                "bytes accessed": ..., "hlo_module": "<name>.hlo_module.pb"}}

Importing this module needs no JAX (the test collects :data:`PROGRAM_NAMES`);
each program's comment says which cost rules decide its numbers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable

#: The programs, in the order they are built (``jit_<name>`` is each module).
PROGRAM_NAMES = (
    "mlp_sgd_step",
    "conv_strided",
    "conv_groups_dilated",
    "conv_transposed",
    "cnn_train_grad",
    "attention_softmax",
    "layer_norm",
    "fori_loop_sin",
    "scan_rnn",
    "reductions_argmax",
    "gather_rows",
    "scatter_add",
    "dynamic_slices",
    "bf16_matmul",
    "concat_pad_transpose",
    "batched_dot",
    "cumsum_window",
    "maxpool_grad",
    "sort_rows",
    "switch_branches",
    "random_matmul",
    "fft_abs",
    "while_dynamic",
)


def _programs(jax: Any, jnp: Any) -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    """Each program's function and example arguments (see the comments)."""
    lax = jax.lax
    nhwc = ("NHWC", "HWIO", "NHWC")
    ones = jnp.ones

    # dot (2*M*N*K, forward and both gradients), elementwise fusions, reduce,
    # log-softmax's exp/log transcendentals; fusion bytes with broadcast params.
    def mlp_sgd_step(params: Any, x: Any, y: Any) -> Any:
        def loss(p: Any) -> Any:
            h = x
            for w, b in p[:-1]:
                h = jax.nn.relu(h @ w + b)
            logits = h @ p[-1][0] + p[-1][1]
            return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, -1))

        grads = jax.grad(loss)(params)
        return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads)

    sizes = [784, 512, 256, 10]
    params = [(ones((a, b)) * 0.01, jnp.zeros((b,))) for a, b in zip(sizes[:-1], sizes[1:])]
    labels = jax.nn.one_hot(jnp.arange(128) % 10, 10)

    # convolution valid positions with stride 2 and SAME padding.
    def conv_strided(x: Any, k: Any) -> Any:
        return lax.conv_general_dilated(x, k, (2, 2), "SAME", dimension_numbers=nhwc)

    # feature_group_count, window (rhs) dilation, asymmetric padding.
    def conv_groups_dilated(x: Any, k: Any) -> Any:
        return lax.conv_general_dilated(
            x, k, (1, 1), ((1, 2), (2, 1)), rhs_dilation=(2, 1),
            feature_group_count=4, dimension_numbers=nhwc,
        )  # fmt: skip

    # base (lhs) dilation: the skipped input positions of a transposed conv.
    def conv_transposed(x: Any, k: Any) -> Any:
        return lax.conv_general_dilated(
            x, k, (1, 1), ((2, 2), (2, 2)), lhs_dilation=(2, 2), dimension_numbers=nhwc
        )

    # conv gradients (feature and batch groups), reduce-window max pooling and
    # its select-and-scatter / gradient, relu fusions.
    def cnn_train_grad(p: Any, x: Any) -> Any:
        def loss(p: Any) -> Any:
            h = jax.nn.relu(
                lax.conv_general_dilated(x, p[0], (1, 1), "SAME", dimension_numbers=nhwc)
            )
            h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
            h = lax.conv_general_dilated(
                h, p[1], (2, 2), ((1, 1), (1, 1)), dimension_numbers=nhwc, feature_group_count=2
            )
            return jnp.mean(h**2)

        return jax.grad(loss)(p)

    # batched dots (einsum), softmax: reduce max/sum, exp transcendentals.
    def attention_softmax(q: Any, k: Any, v: Any) -> Any:
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / 8.0
        return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), v)

    # row reductions, rsqrt transcendental, broadcast params read per broadcast.
    def layer_norm(x: Any, g: Any) -> Any:
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) * lax.rsqrt(v + 1e-5) * g

    # while: one iteration of body + condition (XLA ignores the trip count).
    def fori_loop_sin(x: Any) -> Any:
        return lax.fori_loop(0, 10, lambda i, c: jnp.sin(c) * 2.0 + i, x)

    # scan -> while with dynamic-slice / dynamic-update-slice fusions, a dot.
    def scan_rnn(xs: Any, w: Any) -> Any:
        def step(c: Any, x: Any) -> Any:
            c = c * 0.9 + jnp.tanh(x @ w)
            return c, c.sum()

        return lax.scan(step, jnp.zeros((64,)), xs)

    # variadic reduce (argmax: compare/select reducer), max, sum.
    def reductions_argmax(x: Any) -> Any:
        return jnp.argmax(x, -1), x.max(0), x.sum()

    # gather: 2 x output + indices.
    def gather_rows(table: Any, idx: Any) -> Any:
        return table[idx].sum(0)

    # scatter: 3 x updates + indices, the add reducer per update element.
    def scatter_add(table: Any, idx: Any, upd: Any) -> Any:
        return table.at[idx].add(upd)

    # dynamic-slice reads and in-place dynamic-update-slice fusion outputs.
    def dynamic_slices(t: Any, i: Any, u: Any) -> Any:
        piece = lax.dynamic_slice(t, (i, 0), (16, 64)) * 2.0
        return lax.dynamic_update_slice(t, u + piece, (i + 3, 0))

    # bf16 dot: 2-byte elements, convert flops.
    def bf16_matmul(a: Any, b: Any) -> Any:
        return (a @ b).astype(jnp.float32).sum()

    # concatenate, pad, transpose, slice: bytes only.
    def concat_pad_transpose(a: Any, b: Any) -> Any:
        return jnp.concatenate([jnp.pad(a, ((1, 2), (0, 0))), b.T], 0)[:, 3:20] * 3.0

    # dot with batch dimensions.
    def batched_dot(a: Any, b: Any) -> Any:
        return jnp.einsum("bij,bjk->bik", a, b)

    # reduce-window spanning a padded dimension (XLA's cumulative-sum count).
    def cumsum_window(x: Any) -> Any:
        return jnp.cumsum(x, -1), jnp.cumsum(x[:64], 0)

    # reduce-window max with padding and its gradient (select-and-scatter or
    # the pad/compare fusions XLA lowers it to).
    def maxpool_grad(x: Any) -> Any:
        def pool(x: Any) -> Any:
            return lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")

        return jax.grad(lambda x: pool(x).sum())(x)

    # sort: n * ceil(log2 n) flops over the operand's elements.
    def sort_rows(x: Any) -> Any:
        return jnp.sort(x, axis=-1)

    # conditional: the most expensive branch field by field.
    def switch_branches(i: Any, x: Any) -> Any:
        branches = [lambda x: x + 1.0, lambda x: jnp.exp(x), lambda x: x @ x.T @ x]
        return lax.switch(i, branches, x)

    # threefry bit ops, erf_inv/log transcendentals of normal(), a dot.
    def random_matmul(key: Any) -> Any:
        return jax.random.normal(key, (128, 128)) @ jax.random.uniform(key, (128, 64))

    # fft: 8 x log2(length) flops per element, complex abs.
    def fft_abs(x: Any) -> Any:
        return jnp.abs(jnp.fft.fft(x))

    # while with a data-dependent trip count (body and condition reduce).
    def while_dynamic(x: Any) -> Any:
        def body(c: Any) -> Any:
            return c[0] + 1, c[1] * 1.5 + 0.1

        return lax.while_loop(lambda c: c[1].sum() < 100.0, body, (0, x))

    img = ones((8, 32, 32, 16))
    q = ones((2, 64, 4, 32))
    table = ones((1000, 64))
    found = {
        "mlp_sgd_step": (mlp_sgd_step, (params, ones((128, 784)), labels)),
        "conv_strided": (conv_strided, (img, ones((3, 3, 16, 32)))),
        "conv_groups_dilated": (conv_groups_dilated, (img, ones((3, 3, 4, 32)))),
        "conv_transposed": (conv_transposed, (ones((2, 16, 16, 8)), ones((3, 3, 8, 4)))),
        "cnn_train_grad": (
            cnn_train_grad,
            ([ones((3, 3, 3, 16)) * 0.1, ones((3, 3, 8, 32)) * 0.1], ones((4, 32, 32, 3))),
        ),
        "attention_softmax": (attention_softmax, (q, q, q)),
        "layer_norm": (layer_norm, (ones((128, 512)), ones((512,)))),
        "fori_loop_sin": (fori_loop_sin, (ones((1000,)),)),
        "scan_rnn": (scan_rnn, (ones((20, 32)), ones((32, 64)))),
        "reductions_argmax": (reductions_argmax, (ones((64, 100)),)),
        "gather_rows": (gather_rows, (table, jnp.arange(100) * 7)),
        "scatter_add": (scatter_add, (table, jnp.arange(100) * 7, ones((100, 64)))),
        "dynamic_slices": (dynamic_slices, (table, 5, ones((16, 64)))),
        "bf16_matmul": (
            bf16_matmul,
            (ones((256, 512), jnp.bfloat16), ones((512, 128), jnp.bfloat16)),
        ),
        "concat_pad_transpose": (concat_pad_transpose, (ones((50, 40)), ones((40, 30)))),
        "batched_dot": (batched_dot, (ones((8, 64, 32)), ones((8, 32, 48)))),
        "cumsum_window": (cumsum_window, (ones((256, 100)),)),
        "maxpool_grad": (maxpool_grad, (ones((2, 16, 16, 8)),)),
        "sort_rows": (sort_rows, (ones((64, 100)),)),
        "switch_branches": (switch_branches, (1, ones((32, 32)))),
        "random_matmul": (random_matmul, (jax.random.PRNGKey(0),)),
        "fft_abs": (fft_abs, (ones((16, 256), jnp.complex64),)),
        "while_dynamic": (while_dynamic, (ones((100,)),)),
    }
    return found


def _record(jax: Any, name: str, fn: Any, args: Any, outdir: Path) -> tuple[Any, dict[str, Any]]:
    """Compile ``fn`` as ``jit_<name>``: its XLA costs and its module proto file."""
    fn.__name__ = name
    compiled = jax.jit(fn).lower(*args).compile()
    costs = compiled.cost_analysis()
    if isinstance(costs, list):  # older JAX: one dict per module
        costs = costs[0]
    module = compiled.runtime_executable().hlo_modules()[0]
    proto_file = f"{name}.hlo_module.pb"
    (outdir / proto_file).write_bytes(module.as_serialized_hlo_module_proto())
    record = {
        "module": f"jit_{name}",
        "flops": float(costs.get("flops", 0.0)),
        "transcendentals": float(costs.get("transcendentals", 0.0)),
        "bytes accessed": float(costs.get("bytes accessed", 0.0)),
        "hlo_module": proto_file,
    }
    return compiled, record


def main(outdir: Path) -> None:
    """Compile, record and profile every program into ``outdir`` (module doc)."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_platforms", "cpu")
    outdir.mkdir(parents=True, exist_ok=True)
    programs = _programs(jax, jnp)
    compiled: dict[str, tuple[Any, Any]] = {}
    records: dict[str, dict[str, Any]] = {}
    for name in PROGRAM_NAMES:
        fn, args = programs[name]
        executable, records[name] = _record(jax, name, fn, args, outdir)
        compiled[name] = (executable, args)
    jax.profiler.start_trace(str(outdir / "trace"))
    try:
        for executable, args in compiled.values():
            jax.block_until_ready(executable(*args))
    finally:
        jax.profiler.stop_trace()
    (outdir / "costs.json").write_text(json.dumps(records, indent=1, sort_keys=True))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
