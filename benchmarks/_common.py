"""Shared pieces of the benchmark scripts: the generated graph and small helpers.

The graph (:func:`build_model`) is a TF1-style ``tf.Graph`` of at least
``n_ops`` ops in nested name scopes ``block_i/layer_j/dense/{w,b,MatMul,Add,relu}``;
:func:`trace_steps` runs it in a single-threaded ``tf.compat.v1.Session`` with
FULL_TRACE, so every op of the graph appears in every step's ``RunMetadata``.
``bench_core.py`` profiles it; ``bench_timeline.py`` turns its steps into Chrome
traces. Scripts import this module as ``_common`` (their own directory is on
``sys.path`` when they are run as ``python benchmarks/<script>.py``).
"""

from __future__ import annotations

import gc
import json
import os
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.profiler import tfprof_logger  # noqa: E402

tf1 = tf.compat.v1

#: The repository root (``bench_out/`` lives there).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Where the scripts write their JSON results (gitignored).
OUT_DIR = os.path.join(ROOT, "bench_out")

LAYERS_PER_BLOCK = 10  # each: Const w, Const b, MatMul, Add, Relu
WIDTH = 4
BATCH = 2


# ------------------------------------------------------------------ the model
@dataclass
class Model:
    """The generated graph, what to fetch and the traced RunMetadata."""

    graph: Any
    fetches: list[Any]
    init: Any
    run_metas: list[Any] = field(default_factory=list)


def _layer(x: Any, rng: np.random.Generator) -> Any:
    with tf1.name_scope("dense"):
        w = tf1.constant(rng.standard_normal((WIDTH, WIDTH)).astype(np.float32), name="w")
        b = tf1.constant(rng.standard_normal((WIDTH,)).astype(np.float32), name="b")
        return tf.nn.relu(tf.add(tf.matmul(x, w), b), name="relu")


def _block(index: int, rng: np.random.Generator) -> tuple[Any, Any]:
    with tf1.name_scope(f"block_{index}"):
        init = rng.standard_normal((BATCH, WIDTH)).astype(np.float32)
        var = tf1.Variable(init, name="x")
        h = var.read_value() if hasattr(var, "read_value") else var
        for j in range(LAYERS_PER_BLOCK):
            with tf1.name_scope(f"layer_{j}"):
                h = _layer(h, rng)
        return tf.reduce_sum(h, name="sum"), var.initializer


def _block_builder(index: int, distinct: bool) -> Callable[[int, np.random.Generator], Any]:
    """``_block``, or a copy with its own code object (so its ops get call stacks
    no other block shares) when ``distinct``."""
    if not distinct:
        return _block
    code = _block.__code__.replace(co_filename=f"<block_{index}>")
    builder: Callable[[int, np.random.Generator], Any] = types.FunctionType(
        code, _block.__globals__, f"_block_{index}"
    )
    return builder


def build_model(n_ops: int, distinct_stacks: bool = False) -> Model:
    """A graph of at least ``n_ops`` ops in nested name scopes."""
    graph = tf.Graph()
    rng = np.random.default_rng(0)
    with graph.as_default():
        sums, inits = [], []
        i = 0
        while len(graph.get_operations()) < n_ops:
            total, init = _block_builder(i, distinct_stacks)(i, rng)
            sums.append(total)
            inits.append(init)
            i += 1
        tf.add_n(sums, name="total")
        init_all = tf1.group(*inits, name="init")
        run_all = tf1.group(*_sinks(graph), name="run_all")
    return Model(graph=graph, fetches=[run_all], init=init_all)


def _sinks(graph: Any) -> list[Any]:
    """Ops nothing consumes: running them all runs every op of the graph."""
    used: set[str] = set()
    for op in graph.get_operations():
        used.update(t.op.name for t in op.inputs)
        used.update(c.name for c in op.control_inputs)
    return [op for op in graph.get_operations() if op.name not in used]


def session_config() -> Any:
    """Single-threaded, no graph rewriting: every op of the graph really runs."""
    config = tf1.ConfigProto(inter_op_parallelism_threads=1, intra_op_parallelism_threads=1)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    opt = config.graph_options.optimizer_options
    opt.opt_level = tf1.OptimizerOptions.L0
    opt.do_common_subexpression_elimination = False
    opt.do_constant_folding = False
    opt.do_function_inlining = False
    return config


def trace_steps(model: Model, steps: int) -> None:
    """Run ``steps`` FULL_TRACE steps, keep their RunMetadata, settle the graph.

    tfprof's ``add_step`` merges runtime shapes into the graph; that is applied
    up front so TF and tfprof_lite see the very same graph.
    """
    with tf1.Session(graph=model.graph, config=session_config()) as sess:
        sess.run(model.init)
        for _ in range(steps):
            meta = tf1.RunMetadata()
            options = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
            sess.run(model.fetches, options=options, run_metadata=meta)
            model.run_metas.append(meta)
    for meta in model.run_metas:
        tfprof_logger._fill_missing_graph_shape(model.graph, meta)


def traced_model(n_ops: int, steps: int, distinct_stacks: bool = False) -> Model:
    """:func:`build_model` then :func:`trace_steps`, with progress lines on stdout."""
    t0 = time.perf_counter()
    model = build_model(n_ops, distinct_stacks)
    n = len(model.graph.get_operations())
    print(f"graph: {n} ops, built in {time.perf_counter() - t0:.1f}s", flush=True)
    t0 = time.perf_counter()
    trace_steps(model, steps)
    print(f"traced {steps} FULL_TRACE steps in {time.perf_counter() - t0:.1f}s", flush=True)
    return model


# ------------------------------------------------------------------ sessions
#: One intra-op and one inter-op thread: the profilers' costs are on the Python
#: side, and fewer threads make timings less sensitive to other load.
SINGLE_THREAD = tf1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)


def stub_run(
    self: Any, fetches: Any, feed_dict: Any = None, options: Any = None, meta: Any = None
) -> Any:
    """A do-nothing ``BaseSession.run``: put in place to time a wrapper around it."""
    return None


# ------------------------------------------------------------------ helpers
def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """(seconds, value) of one call of ``fn``."""
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def runs(fn: Callable[[], Any], repeat: int) -> list[float]:
    """Seconds of ``repeat`` calls (a full garbage collection before each)."""
    out = []
    for _ in range(repeat):
        gc.collect()
        out.append(timed(fn)[0])
    return out


def machine_info() -> dict[str, Any]:
    """Python and TensorFlow versions, CPU count and load average, for the JSON files."""
    import platform

    return {
        "python": platform.python_version(),
        "tensorflow": tf.__version__,
        "cpus": os.cpu_count(),
        "load_average": list(os.getloadavg()),
    }


def write_json(path: str, data: dict[str, Any]) -> None:
    """Write ``data`` as indented JSON to ``path`` (creating its directory)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
        handle.write("\n")
