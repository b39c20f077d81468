"""User-code mode on a real TensorFlow model built here, so its frames are this file's.

The model is built by :func:`build_user_model` (which calls :func:`dense_layer`) in
this file; TensorFlow adds about fifteen frames of its own below every line. With
the mode on, ``pprof -top`` (the real tool) must list this file's functions first,
the totals must equal those of the all-frames view, and with the mode off the
drop-in ``profile_python`` text must equal TensorFlow's own tfprof.
"""

from __future__ import annotations

import functools
import gzip
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfprof_lite
from tests.integration.cli.runner import invoke
from tfprof_lite.proto import messages as pb

pytestmark = pytest.mark.tf

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1
B = tfprof_lite.ProfileOptionBuilder
HERE = Path(__file__).name
MODULE = HERE.rsplit(".", 1)[0]


def dense_layer(x: Any, units: int, name: str) -> Any:
    """One dense layer: the user line that TensorFlow's frames sit under."""
    w = tf1.get_variable(f"{name}_w", [int(x.shape[1]), units])
    return tf.nn.relu(tf.matmul(x, w))


def build_user_model() -> tuple[Any, Any, Any, Any]:
    """A two-layer model and its training step, in a graph of its own."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [32, 64], name="x")
        hidden = dense_layer(x, 128, "hidden")
        out = dense_layer(hidden, 10, "out")
        loss = tf.reduce_mean(tf.square(out))
        train = tf1.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf1.global_variables_initializer()
    return graph, x, train, init


@functools.cache
def traced() -> tuple[Any, list[bytes]]:
    """The model's graph and the RunMetadata bytes of three traced steps."""
    graph, x, train, init = build_user_model()
    metas = []
    trace = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
    with tf1.Session(graph=graph) as sess:
        sess.run(init)
        for _ in range(3):
            meta = tf1.RunMetadata()
            feed = {x: np.ones((32, 64), np.float32)}
            sess.run(train, feed, options=trace, run_metadata=meta)
            metas.append(meta.SerializeToString())
    return graph, metas


def _ours() -> tfprof_lite.Profiler:
    graph, metas = traced()
    prof = tfprof_lite.Profiler(graph)
    for step, data in enumerate(metas):
        prof.add_step(step, data)
    return prof


def _pprof(*args: str) -> str:
    here = Path(__file__).resolve().parents[2] / ".tools" / "pprof"
    tool = shutil.which("pprof") or (str(here) if here.exists() else None)
    if tool is None:
        pytest.skip("the pprof tool is not installed")
    env = dict(os.environ, PPROF_TMPDIR=os.environ.get("TMPDIR", "/tmp"))
    done = subprocess.run(
        [tool, *args], capture_output=True, text=True, check=True, env=env, timeout=120
    )
    return done.stdout


def _top_functions(path: Path) -> list[str]:
    """Function names of ``pprof -top``, by flat time (largest first)."""
    out = _pprof("-top", "-nodecount=20", "-sample_index=micros", "-unit=us", str(path))
    rows = out.split("cum%", 1)[1].strip().splitlines()
    return [row.split(None, 5)[5] for row in rows]


def _sample_sum(path: Path) -> int:
    profile = pb.PprofProfile.FromString(gzip.decompress(path.read_bytes()))
    return sum(s.value[1] for s in profile.sample)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("user_code") / "profile_2"
    path.write_bytes(_ours().serialize_to_string())
    return path


def test_pprof_top_lists_this_file_first(saved: Path, tmp_path: Path) -> None:
    user, every = tmp_path / "user.pb.gz", tmp_path / "all.pb.gz"
    assert "user code" in invoke("pprof", saved, "-o", user).output
    invoke("pprof", saved, "--all-frames", "-o", every)
    top = _top_functions(user)
    assert top[0].startswith(f"{MODULE}:"), top
    assert f"{MODULE}:dense_layer" in top and f"{MODULE}:build_user_model" in top
    assert not any(name.startswith(("ops:", "dispatch:", "op_def_library:")) for name in top)
    assert _top_functions(every)[0].startswith("ops:from_node_def")  # tfprof's view
    assert _sample_sum(user) == _sample_sum(every) > 0  # folding moves time, never loses it
    listing = _pprof("-list", "dense_layer$", "-sample_index=micros", "-unit=us", str(user))
    timed = [row for row in listing.splitlines() if "return tf.nn.relu(tf.matmul(x, w))" in row]
    assert len(timed) == 1 and timed[0].split()[0] not in (".", "0")  # time on the user line


def test_views_totals_and_source_lines() -> None:
    prof = _ours()
    every = prof.profile_python(B().with_empty_output().build())
    user = prof.profile_python(B().with_user_code().with_empty_output().build())
    assert user.total_exec_micros == every.total_exec_micros > 0
    assert user.total_float_ops == every.total_float_ops > 0
    assert user.total_requested_bytes == every.total_requested_bytes

    names: list[str] = []
    todo = list(user.children)
    while todo:
        node = todo.pop()
        names.append(node.name)
        todo.extend(node.children)
    ours = [n for n in names if n.startswith(f"{HERE}:")]
    assert ours and all(HERE in n or n == "(library code)" for n in names if "(gradient)" not in n)
    assert any("[return tf.nn.relu(tf.matmul(x, w))]" in n for n in ours)  # the source line
    assert not any("traceback_utils" in n or "ops.py" in n for n in names)


def test_drop_in_text_unchanged(tmp_path: Path) -> None:
    graph, metas = traced()
    theirs = tf1.profiler.Profiler(graph)
    for step, data in enumerate(metas):
        meta = tf1.RunMetadata()
        meta.ParseFromString(data)
        theirs.add_step(step, meta)
    opts = B().build()
    tf_file, our_file = tmp_path / "tf.txt", tmp_path / "ours.txt"
    # TensorFlow ignores the extra key; ours with the mode off is tfprof's text.
    theirs.profile_python(dict(opts, output=f"file:outfile={tf_file}", user_code={}))
    _ours().profile_python(dict(opts, output=f"file:outfile={our_file}"))
    assert our_file.read_text() == tf_file.read_text()
    assert "from_node_def" in our_file.read_text()
