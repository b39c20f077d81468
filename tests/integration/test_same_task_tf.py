"""Two local runs of one TF1 script are not a cluster.

The script runs twice, unmodified, under ``python -m tfprof_lite.run`` (each
run is task ``/job:localhost/replica:0/task:0``), and a conv net runs once with
a plain ``Session``. Every command that takes several PROFILEs refuses such a
pair with one line (exit 2) pointing to ``tfprof-lite diff``; ``--merge`` still
merges them, the ``diff`` it names works, and each profile alone gives its real
step time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tfprof_lite
from tests.unit.cli.test_same_task import MULTI_PROFILE_COMMANDS, command_args
from tfprof_lite.analysis.overview import overview
from tfprof_lite.cli import main
from tfprof_lite.model.cluster import qualify
from tfprof_lite.profiler import Profiler

pytestmark = pytest.mark.tf
pytest.importorskip("tensorflow")

ROOT = Path(__file__).resolve().parents[2]
LOCAL = "/job:localhost/replica:0/task:0"
SCRIPT = """
    import sys
    import numpy as np
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 16, 16, 1], name="x")
        if sys.argv[1] == "conv":
            k = tf1.get_variable("k", [3, 3, 1, 4])
            h = tf.nn.relu(tf.nn.conv2d(x, k, strides=1, padding="SAME"))
        else:
            w = tf1.get_variable("w", [256, 32])
            h = tf.nn.relu(tf.matmul(tf.reshape(x, [-1, 256]), w))
        loss = tf.reduce_mean(tf.square(h), name="loss")
        train = tf1.train.GradientDescentOptimizer(0.01).minimize(loss)
        init = tf1.global_variables_initializer()
    batch = np.ones((8, 16, 16, 1), np.float32)
    with tf1.Session(graph=graph) as sess:
        sess.run(init)
        for _ in range(12):
            sess.run(train, feed_dict={x: batch})
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``runA``/``runB``: two runs of the MLP script; ``conv``: the conv net."""
    root = tmp_path_factory.mktemp("same_task")
    (root / "train.py").write_text(textwrap.dedent(SCRIPT))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    env.update(PYTHONPATH=str(ROOT), TFPROF_LITE_TRACE_STEPS="4-8", TFPROF_LITE_DUMP_STEPS="8")
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-m", "tfprof_lite.run", "train.py", model],
            cwd=root,
            env=dict(env, TFPROF_LITE_DIR=name),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, model in (("runA", "mlp"), ("runB", "mlp"), ("conv", "conv"))
    }
    for name, proc in procs.items():
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        assert (root / name / "profile_8").is_file(), err
    return {name: root / name for name in procs}


def _run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", MULTI_PROFILE_COMMANDS)
def test_two_runs_of_one_script_are_refused(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    a, b = runs["runA"] / "profile_8", runs["runB"] / "profile_8"
    code, out, err = _run(capsys, *command_args(name, [a, b], tmp_path))
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"are both profiles of task {LOCAL}" in err
    assert f"'tfprof-lite diff {a} {b}'" in err and "--merge" in err
    assert out == "" and not list(tmp_path.iterdir())  # nothing written


def test_different_programs_of_one_task_are_refused(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "overview", runs["conv"], runs["runA"])
    assert code == 2 and f"{runs['conv']} and {runs['runA']} are both profiles" in err


def test_the_named_diff_and_the_explicit_merge_work(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = runs["runA"] / "profile_8", runs["runB"] / "profile_8"
    code, out, err = _run(capsys, "diff", a, b)
    assert code == 0 and "Op view" in out, err
    code, out, err = _run(capsys, "overview", a, b, "--merge")
    assert code == 0 and "steps:" in out, err
    alone = Profiler.load(a).model
    merged = tfprof_lite.merge([a, b], allow_same_task=True).model
    step = alone.sorted_steps()[0]
    node = next(n for n in alone.names if n.endswith("MatMul"))
    assert alone.stats(step).run_count[alone.index[node]] == 1
    assert merged.stats(step).run_count[merged.index[qualify(LOCAL, node)]] == 2
    # each run alone: its real step time (merging the two runs gave seconds)
    assert 0 < overview(alone).avg_step_micros < 1_000_000
