"""A wide TF 2.21 graph (20k+ nodes) traced with FULL_TRACE, made in a child process.

The graph is :data:`BRANCHES` independent branches over one placeholder, each
``Const -> Mul -> Tanh -> Add(Const) -> Square -> Sum(Const axes)``, joined by
one ``AddN``: thousands of small ops that the session's inter-op threads
(:data:`INTER_OP_THREADS`) run at the same time, so the RunMetadata's host
records overlap heavily (what made the export nest ops inside each other).

The child writes ``graph.pb`` (the GraphDef) and ``run_meta_<step>.pb`` for
:data:`TRACED_STEPS` traced steps (after one untraced warm-up) into its output
folder. :func:`wide_capture` makes it once per test run (xdist workers share
it; ``TFPROF_LITE_XSPACE_CACHE`` keeps it across runs, as for the XSpace
captures) and returns the file paths.

Run ``python -m tests.integration.wide_graph_capture OUTDIR`` to make one by hand.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.xspace_captures import _root

#: Independent branches (7 graph nodes each).
BRANCHES = 3200
#: The session's inter-op threads: the branches run concurrently on them.
INTER_OP_THREADS = 4
#: Traced steps (after one warm-up step).
TRACED_STEPS = 2
REPO_ROOT = Path(__file__).resolve().parents[2]
CHILD_TIMEOUT_S = 600
_DONE = "done"


def _build(tf: object) -> tuple[object, object, object]:
    import numpy as np

    tf1 = tf.compat.v1  # type: ignore[attr-defined]
    graph = tf1.Graph()
    rng = np.random.default_rng(0)
    with graph.as_default():
        x = tf1.placeholder(tf1.float32, [32, 32], name="x")
        sums = []
        for i in range(BRANCHES):
            with tf1.name_scope(f"b{i}"):
                scale = tf1.constant(rng.standard_normal((32, 32)).astype("float32"), name="c")
                bias = tf1.constant(rng.standard_normal((32, 32)).astype("float32"), name="d")
                act = tf1.tanh(tf1.multiply(x, scale, name="mul"), name="tanh")
                sq = tf1.square(tf1.add(act, bias, name="add"), name="sq")
                sums.append(tf1.reduce_sum(sq, name="sum"))
        out = tf1.add_n(sums, name="total")
    return graph, x, out


def run_child(out_dir: Path) -> None:
    """Child side: build, warm up, trace :data:`TRACED_STEPS` steps, write the files."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    graph, x, out = _build(tf)
    tf1 = tf.compat.v1
    config = tf1.ConfigProto(
        inter_op_parallelism_threads=INTER_OP_THREADS, intra_op_parallelism_threads=1
    )
    feed = {x: np.ones((32, 32), "float32")}
    options = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
    with tf1.Session(graph=graph, config=config) as sess:
        sess.run(out, feed)
        for step in range(TRACED_STEPS):
            meta = tf1.RunMetadata()
            sess.run(out, feed, options=options, run_metadata=meta)
            (out_dir / f"run_meta_{step}.pb").write_bytes(meta.SerializeToString())
    (out_dir / "graph.pb").write_bytes(graph.as_graph_def().SerializeToString())  # type: ignore[attr-defined]
    (out_dir / _DONE).write_text(tf.__version__)


def wide_capture() -> tuple[Path, list[Path]]:
    """(GraphDef path, RunMetadata paths) of the capture, made once per test run."""
    pytest.importorskip("tensorflow")
    out_dir = _root() / "wide_graph"
    with open(_root() / "wide_graph.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out_dir / _DONE).exists():
            shutil.rmtree(out_dir, ignore_errors=True)
            out_dir.mkdir(parents=True)
            env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), TF_CPP_MIN_LOG_LEVEL="2",
                       CUDA_VISIBLE_DEVICES="")  # fmt: skip
            command = [sys.executable, "-m", "tests.integration.wide_graph_capture", str(out_dir)]
            done = subprocess.run(command, env=env, cwd=REPO_ROOT, capture_output=True,
                                  text=True, timeout=CHILD_TIMEOUT_S)  # fmt: skip
            if done.returncode != 0:
                shutil.rmtree(out_dir, ignore_errors=True)
                raise AssertionError(f"wide graph capture failed:\n{done.stderr[-4000:]}")
    metas = [out_dir / f"run_meta_{step}.pb" for step in range(TRACED_STEPS)]
    return out_dir / "graph.pb", metas


if __name__ == "__main__":
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    run_child(target)
