"""Regenerate the fuzz seed corpus (``tests/fuzz/corpus/``) with real TensorFlow.

Each small TF1-style model of :mod:`tests.integration.tf_models` is traced with
FULL_TRACE; for each one this writes, as ``<model>__<kind>.pb``:

* ``graph``: ``graph.as_graph_def(add_shapes=True)``;
* ``run_meta_<step>``: the RunMetadata of one traced step;
* ``op_log_tf``: TensorFlow's default op log (``tfprof_logger``), with code traces;
* ``op_log_lite``: ``tfprof_lite.write_op_log``'s file, without code traces (with
  them it is byte-identical to TensorFlow's);
* ``profile_tf``: TensorFlow's ``Profiler.serialize_to_string()``;
* ``profile_lite``: ``tfprof_lite.Profiler.serialize_to_string()``.

Usage: ``.venv/bin/python -m tests.fuzz.make_corpus [--out DIR]``. The fuzz test
itself only reads the files, so it needs no TensorFlow.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

#: Models written into the corpus (kept small: the corpus stays under 1 MB).
MODELS = ("tiny", "dense_net", "two_cpus")
#: Traced steps kept per model (the first and the last).
STEPS_KEPT = 2
#: Size limit of the whole corpus, in bytes.
MAX_CORPUS_BYTES = 1_000_000
DEFAULT_OUT = Path(__file__).resolve().parent / "corpus"


def _tf_profile(capture: Any) -> bytes:
    """TensorFlow's own serialized ProfileProto of every step of ``capture``."""
    from tests.integration import tf_oracle

    oracle = tf_oracle.TfOracle(capture)
    try:
        return oracle.serialized_profile(canonical=False)
    finally:
        tf_oracle.close_current()


def _lite_op_log(graph: object, run_meta: bytes) -> bytes:
    """The op log file ``tfprof_lite.write_op_log`` writes."""
    import tfprof_lite

    with tempfile.TemporaryDirectory() as tmp:
        tfprof_lite.write_op_log(graph, tmp, run_meta=run_meta, add_trace=False)
        return (Path(tmp) / "tfprof_log").read_bytes()


def _lite_profile(graph: object, run_metas: list[tuple[int, bytes]]) -> bytes:
    """``tfprof_lite.Profiler.serialize_to_string()`` of every traced step."""
    import tfprof_lite

    profiler = tfprof_lite.Profiler(graph)
    for step, data in run_metas:
        profiler.add_step(step, data)
    return profiler.serialize_to_string()


def _build_tiny() -> object:
    """A two-layer linear model with one gradient step: the smallest, fastest seed."""
    import numpy as np
    import tensorflow as tf

    from tests.integration import tf_models

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(7)
        x = tf1.placeholder(tf.float32, [None, 4], name="x")
        hidden = tf.nn.relu(tf_models._fc(x, 3, "layer0"))
        loss = tf.reduce_sum(tf_models._fc(hidden, 2, "layer1"), name="loss")
        train = tf1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
        init = tf1.global_variables_initializer()
    data = np.arange(8, dtype=np.float32).reshape(2, 4)
    config = tf_models._session_config()
    return tf_models._trace("tiny", graph, config, init, [train, loss], lambda _: {x: data}, (0, 1))


def _capture(name: str) -> object:
    from tests.integration import tf_models

    if name == "tiny":
        return tf_models._in_fresh_thread(_build_tiny)
    return tf_models.ALL_CAPTURES[name]()


def model_files(name: str) -> dict[str, bytes]:
    """Every corpus file of model ``name``, by kind."""
    from tensorflow.python.profiler import tfprof_logger

    capture: Any = _capture(name)
    metas = capture.run_metas
    kept = [metas[0], metas[-1]][:STEPS_KEPT]
    files = {"graph": capture.graph.as_graph_def(add_shapes=True).SerializeToString()}
    for step, data in kept:
        files[f"run_meta_{step}"] = data
    last_meta = capture.run_metadata(len(metas) - 1)
    tf_log = tfprof_logger.merge_default_with_oplog(
        capture.graph, run_meta=last_meta, add_trace=True
    )
    files["op_log_tf"] = tf_log.SerializeToString()
    files["op_log_lite"] = _lite_op_log(capture.graph, metas[-1][1])
    files["profile_tf"] = _tf_profile(capture)
    files["profile_lite"] = _lite_profile(capture.graph, metas)
    return files


def write_corpus(out: Path) -> int:
    """Write every model's files into ``out`` (old ``*.pb`` removed); returns the size."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.pb"):
        old.unlink()
    total = 0
    for name in MODELS:
        for kind, data in model_files(name).items():
            (out / f"{name}__{kind}.pb").write_bytes(data)
            total += len(data)
    return total


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; fails if the corpus grows past the size limit."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    total = write_corpus(args.out)
    print(f"wrote {total} bytes to {args.out}")
    if total > MAX_CORPUS_BYTES:
        print(f"corpus is over {MAX_CORPUS_BYTES} bytes; drop a model", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
