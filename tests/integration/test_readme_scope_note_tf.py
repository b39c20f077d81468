"""The README's note under its first example holds: with
``time_and_memory().with_max_depth(4)`` the ``gradients/...`` scopes print
``0us`` because their ops lie deeper than the depth and only displayed ops are
counted, and ``account_displayed_op_only=False`` shows their time (real
TensorFlow, our report and tfprof's)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import tfprof_lite

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1
README = Path(__file__).resolve().parents[2] / "README.md"
GRAD_SCOPE = "gradients/out/MatMul_grad"


def _row_micros(report: str, name: str) -> str:
    """The total execution time column (``self/total``) of ``name``'s row."""
    match = re.search(rf"^\s*{re.escape(name)} \([^,]*, ([^,]*),", report, re.MULTILINE)
    assert match, report
    return match[1]


@pytest.fixture(scope="module")
def profilers() -> tuple[tfprof_lite.Profiler, object]:
    """Ours and TensorFlow's profiler over three traced steps of a two-layer MLP."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 64], name="x")
        with tf1.variable_scope("dense"):
            h = tf.nn.relu(tf.matmul(x, tf1.get_variable("w", [64, 128])))
        with tf1.variable_scope("out"):
            y = tf.matmul(h, tf1.get_variable("w", [128, 10]))
        loss = tf.reduce_mean(tf.square(y))
        train_op = tf1.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf1.global_variables_initializer()
    ours, theirs = tfprof_lite.Profiler(graph), tf1.profiler.Profiler(graph)
    options = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
    with tf1.Session(graph=graph) as sess:
        sess.run(init)
        for step in range(3):
            meta = tf1.RunMetadata()
            sess.run(train_op, {x: np.ones((256, 64), np.float32)}, options, meta)
            ours.add_step(step, meta)
            theirs.add_step(step, meta)
    return ours, theirs


def test_gradient_scopes_show_time_only_when_their_ops_count(
    profilers: tuple[tfprof_lite.Profiler, object], tmp_path: Path
) -> None:
    assert "account_displayed_op_only=False" in README.read_text(encoding="utf-8")
    builder = tfprof_lite.ProfileOptionBuilder
    base = builder(builder.time_and_memory()).with_max_depth(4).build()
    for name, options in (("shown", base), ("all", dict(base, account_displayed_op_only=False))):
        reports = []
        for who, prof in zip(("ours", "tf"), profilers):
            path = tmp_path / f"{who}_{name}.txt"
            prof.profile_name_scope(dict(options, output=f"file:outfile={path}"))  # type: ignore[attr-defined]
            reports.append(path.read_text())
        assert reports[0] == reports[1]  # byte-identical to tfprof
        total = _row_micros(reports[0], GRAD_SCOPE)
        if name == "shown":
            assert total == "0us/0us"  # its MatMul ops are below depth 4, not counted
        else:
            assert total.startswith("0us/") and total != "0us/0us"
