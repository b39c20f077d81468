"""What capture prints, in fresh processes: TensorFlow's deprecation warning never
comes from our calls, tfprof's incomplete-shapes note is printed by the drop-in API
where TensorFlow's profiler prints it and once per process for our own capture,
and auto-profiling prints the Options block where TensorFlow's ProfileContext
would (each auto-profile with stdout output)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parents[2]
NOTE = "ops no flops stats due to incomplete shapes."
DEPRECATED = "tensor_shape_from_node_def_name (from tensorflow"

MODEL = """
import numpy as np, tensorflow as tf
tf1 = tf.compat.v1
graph = tf.Graph()
with graph.as_default():
    x = tf1.placeholder(tf.float32, [None, 16], name="x")  # batch unknown: no FLOPs
    w = tf1.get_variable("w", [16, 4])
    y = tf.reduce_sum(tf.matmul(x, w))
    init = tf1.global_variables_initializer()
feed = {x: np.ones((8, 16), np.float32)}
"""

OURS = (
    MODEL
    + """
import tfprof_lite
B = tfprof_lite.ProfileOptionBuilder
tfprof_lite.Profiler(graph)  # the drop-in prints it each time, as TensorFlow's does
tfprof_lite.Profiler(graph)
print("CONTEXTS", flush=True)
with graph.as_default(), tf1.Session(graph=graph) as sess:
    sess.run(init)
    for run in range(2):  # two captures: the note once in all
        with tfprof_lite.ProfileContext(OUT + str(run), trace_steps=[1, 2], dump_steps=[]) as ctx:
            ctx.add_auto_profiling("op", B(B.time_and_memory()).build(), [1, 2])
            for _ in range(3):
                sess.run(y, feed)
"""
)

THEIRS = (
    MODEL
    + """
tf1.profiler.Profiler(graph)
tf1.profiler.Profiler(graph)
"""
)


def _run(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="2")
    code = f"OUT = {str(tmp_path / 'out')!r}\n" + script
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def test_capture_prints_once_and_drop_in_like_tensorflow(tmp_path: Path) -> None:
    ours = _run(OURS, tmp_path)
    theirs = _run(THEIRS, tmp_path)
    assert DEPRECATED not in ours.stderr  # our own calls never trigger it
    assert DEPRECATED in theirs.stderr  # TensorFlow's profiler still warns (we silence only us)
    their_notes = [line for line in theirs.stderr.splitlines() if line.endswith(NOTE)]
    our_notes = [line for line in ours.stderr.splitlines() if line.endswith(NOTE)]
    assert len(their_notes) == 2  # one per tf.compat.v1.profiler.Profiler(graph)
    assert len(our_notes) == 2 + 1  # as TensorFlow, then once for two captures
    assert our_notes[:2] == their_notes
    before, after = ours.stdout.split("CONTEXTS", 1)
    # TensorFlow's ProfileContext runs profile_operations(options) at each auto step:
    # with stdout output that is one Options block per auto-profile, 2 x 2 here.
    assert after.count("=========================Options=============================") == 4
    assert "Options" not in before
