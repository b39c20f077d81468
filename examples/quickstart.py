"""Quickstart: profile a small TF1-style training loop with tfprof_lite.

Builds a two-layer classifier in graph mode, trains it in a plain ``Session`` loop
inside a ``ProfileContext`` (traced steps saved as ``profile_<step>`` files, a live
monitoring line every 100 steps), prints the scope and op views exactly as
``tf.compat.v1.profiler`` would (the saved profiles also record which ops XLA can
compile, for ``tfprof-lite xla-compat``), then writes one file per kind of output to
``./tfprof_out/``: a Chrome trace, a pprof profile, a CSV table, the advice, the
overview, and a drawing of the classifier compiled by XLA.

Run: ``python examples/quickstart.py`` (``make run`` does this in a fresh venv).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil

OUT_DIR = os.path.join(os.getcwd(), "tfprof_out")
HLO_DUMP_DIR = os.path.join(OUT_DIR, "xla_dump")

# TensorFlow reads its XLA flags once per process, so they are set before importing it
# (docs/xla.md). They change nothing for sessions that do not ask for JIT: only the
# session of run_jit_model (global_jit_level=ON_1) is compiled, and dumped as DOT.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["TF_XLA_FLAGS"] = "--tf_xla_cpu_global_jit"  # CPU: needed for ON_1
os.environ["XLA_FLAGS"] = f"--xla_dump_to={HLO_DUMP_DIR} --xla_dump_hlo_as_dot"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import tfprof_lite  # noqa: E402
from tfprof_lite import xla  # noqa: E402
from tfprof_lite.analysis.overview import overview  # noqa: E402
from tfprof_lite.capture import xla_compat  # noqa: E402

tf1 = tf.compat.v1
builder = tfprof_lite.ProfileOptionBuilder
TRACED_STEPS = 5
TRAIN_STEPS = 200


def build_model(graph: tf.Graph) -> tuple[tf.Tensor, tf.Tensor, tf.Operation]:
    """A 784-128-10 classifier with cross-entropy loss and plain SGD."""
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 784], name="x")
        y = tf1.placeholder(tf.int64, [None], name="y")
        with tf1.variable_scope("dense1"):
            w1 = tf1.get_variable("w", [784, 128])
            b1 = tf1.get_variable("b", [128], initializer=tf1.zeros_initializer())
            h = tf.nn.relu(tf.matmul(x, w1) + b1)
        with tf1.variable_scope("dense2"):
            w2 = tf1.get_variable("w", [128, 10])
            b2 = tf1.get_variable("b", [10], initializer=tf1.zeros_initializer())
            logits = tf.matmul(h, w2) + b2
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits), name="loss"
        )
        train_op = tf1.train.GradientDescentOptimizer(0.1).minimize(loss)
    return x, y, train_op


def random_batch(x: tf.Tensor, y: tf.Tensor, rng: np.random.Generator) -> dict[tf.Tensor, object]:
    """A feed dict of 64 random examples."""
    return {x: rng.random((64, 784), np.float32), y: rng.integers(0, 10, 64)}


def train_and_profile() -> tfprof_lite.ProfileContext:
    """Train with an unchanged Session loop; the context traces and monitors it."""
    graph = tf.Graph()
    x, y, train_op = build_model(graph)
    rng = np.random.default_rng(0)
    with tf1.Session(graph=graph) as sess:
        sess.run(tf1.global_variables_initializer())
        # One step first, untraced: a graph's first run also builds its kernels.
        sess.run(train_op, feed_dict=random_batch(x, y, rng))
        # Each sess.run in the context is a step from 0: steps 0-4 are traced, and
        # profile_2, profile_4 are saved. monitor=2 (docs/monitoring.md) prints a line
        # every 100 steps and a summary at the end on stderr, and logs them as JSON
        # to tfprof_out/monitor.jsonl.
        with tfprof_lite.ProfileContext(
            OUT_DIR,
            trace_steps=range(TRACED_STEPS),
            dump_steps=[TRACED_STEPS // 2, TRACED_STEPS - 1],
            monitor=2,
            monitor_every=100,
        ) as pctx:
            for step in range(TRAIN_STEPS):
                sess.run(train_op, feed_dict=random_batch(x, y, rng))
                if step == 0:  # the profiler exists after the first traced step
                    # Record which ops XLA can compile, so the saved profiles carry
                    # it (tfprof-lite xla-compat tfprof_out/profile_4, docs/xla_compat.md).
                    xla_compat.annotate(pctx.profiler, graph)
    return pctx


def run_jit_model() -> tfprof_lite.Profiler:
    """Train the same classifier 3 steps with XLA auto-clustering, traced by hand.

    This is the drop-in ``tf.compat.v1.profiler.Profiler`` usage: ``add_step`` with
    the RunMetadata of a FULL_TRACE run.
    """
    graph = tf.Graph()
    x, y, train_op = build_model(graph)
    config = tf1.ConfigProto()
    config.graph_options.optimizer_options.global_jit_level = tf1.OptimizerOptions.ON_1
    rng = np.random.default_rng(1)
    profiler = tfprof_lite.Profiler(graph)
    trace = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
    with tf1.Session(graph=graph, config=config) as sess:
        sess.run(tf1.global_variables_initializer())
        for step in range(3):
            run_meta = tf1.RunMetadata()
            sess.run(train_op, random_batch(x, y, rng), options=trace, run_metadata=run_meta)
            profiler.add_step(step, run_meta)
    return profiler


def main() -> None:
    """Train, profile, and write every kind of output to tfprof_out/."""
    os.makedirs(OUT_DIR, exist_ok=True)
    shutil.rmtree(HLO_DUMP_DIR, ignore_errors=True)  # old dumps would mix with new ones
    written: list[tuple[str, str]] = []  # (what, file name), listed at the end

    pctx = train_and_profile()
    profiler = pctx.profiler
    assert profiler is not None
    written.append(("profiles (tfprof-lite CLI, Profiler.load)", ", ".join(pctx.written_profiles)))
    written.append(("monitoring log (tfprof-lite monitor)", "monitor.jsonl"))

    # The scope and op views, printed exactly as tf.compat.v1.profiler prints them.
    scope_opts = builder(builder.time_and_memory()).with_max_depth(4).build()
    profiler.profile_name_scope(scope_opts)
    op_opts = builder(builder.time_and_memory()).select(["micros", "bytes", "occurrence"]).build()
    profiler.profile_operations(op_opts)

    # Trainable parameters per scope, as a text report in a file.
    params = builder(builder.trainable_variables_parameter())
    profiler.profile_name_scope(params.with_file_output(f"{OUT_DIR}/params.txt").build())
    written.append(("trainable parameters per scope", "params.txt"))

    # Timeline: every traced step in one Chrome trace (Perfetto, chrome://tracing).
    events = profiler.write_steps_trace(f"{OUT_DIR}/steps.json")
    written.append((f"Chrome trace of the traced steps ({events} events)", "steps.json"))

    # pprof of the code view (time per Python line), the file tfprof writes; this
    # prints the pprof command that views it.
    pprof_opts = builder().select(["micros"]).with_pprof_output(f"{OUT_DIR}/code_micros.pb.gz")
    profiler.profile_python(pprof_opts.build())
    written.append(("pprof profile of the code view (pprof -top)", "code_micros.pb.gz"))

    # The op view printed above, as a CSV table.
    profiler.profile_operations(dict(op_opts, output=f"csv:outfile={OUT_DIR}/ops.csv"))
    written.append(("the op view as CSV", "ops.csv"))

    # Advice of every checker; advise() prints it, so catch the text for the file.
    with contextlib.redirect_stdout(io.StringIO()) as advice:
        profiler.advise(tfprof_lite.ALL_ADVICE)
    with open(f"{OUT_DIR}/advice.txt", "w", encoding="utf-8") as fh:
        fh.write(advice.getvalue())
    written.append(("the advisor's findings", "advice.txt"))

    # Overview: step time, idle time, top op types and a recommendation.
    page = overview(profiler.model)
    print(f"\n{page.to_text()}")
    with open(f"{OUT_DIR}/overview.txt", "w", encoding="utf-8") as fh:
        fh.write(page.to_text())
    with open(f"{OUT_DIR}/overview.json", "w", encoding="utf-8") as fh:
        json.dump(page.to_dict(), fh, indent=2)
    written.append(("the overview, as text and JSON", "overview.txt, overview.json"))

    # XLA: compile and run time of the JIT-compiled classifier's clusters, and a
    # drawing of the busiest one's HLO module with Graphviz (docs/xla.md).
    times = xla.cluster_times(run_jit_model(), HLO_DUMP_DIR)
    print(f"\n{xla.format_cluster_times(times)}")
    modules = [t.module() for t in times if t.module() is not None]
    if modules:
        try:
            (drawing,) = xla.render(modules[0], OUT_DIR, ["svg"])
        except (tfprof_lite.MissingDependencyError, xla.RenderError) as err:
            (drawing,) = xla.render(modules[0], OUT_DIR, ["dot"])
            print(f"No SVG: {err}. Wrote the DOT source instead.")
        written.append(("an XLA cluster's HLO graph", drawing.name))
    else:
        print(f"No XLA cluster in the profile; nothing to draw (dumps: {HLO_DUMP_DIR}).")
    written.append(("XLA's HLO dumps (tfprof-lite hlo)", "xla_dump/"))

    width = max(len(what) for what, _ in written)
    print(f"\nWrote to {OUT_DIR}/:")
    for what, name in written:
        print(f"  {what:<{width}}  {name}")


if __name__ == "__main__":
    main()
