"""XLA compatibility with real TensorFlow 2.21 graphs: the live check, the profile round
trip, ``XlaCompatibilityChecker`` and ``tfprof-lite xla-compat``.

The facts the check relies on are re-established in fresh subprocesses: the
kernel registry lists no ``XLA_CPU_JIT`` kernel until XLA is initialised, the
trigger works (and is not counted as a monitored step), and a graph the report
says is *split* by an op really gets two clusters from TensorFlow's
auto-clustering.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import numpy as np  # noqa: E402
from click.testing import CliRunner  # noqa: E402

import tfprof_lite  # noqa: E402
from tfprof_lite.advisor import CHECKERS  # noqa: E402
from tfprof_lite.analysis.xla_compat import report_from_model  # noqa: E402
from tfprof_lite.capture import xla_compat  # noqa: E402
from tfprof_lite.cli.xla_compat import STRICT_EXIT_CODE, xla_compat_command  # noqa: E402
from tfprof_lite.errors import InvalidOptionError  # noqa: E402

pytestmark = pytest.mark.tf

tf1 = tf.compat.v1
ROOT = Path(__file__).resolve().parents[2]
QUIET = {"TF_CPP_MIN_LOG_LEVEL": "3"}


def run_python(code: str, **env: str) -> Any:
    """Run ``code`` in a fresh interpreter; its last stdout line is JSON."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, **QUIET, **env},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def mlp(use_resource: bool = True) -> tuple[Any, Any]:
    """The quickstart classifier plus a saver, a summary and an initializer."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 784], name="x")
        y = tf1.placeholder(tf.int64, [None], name="y")
        with tf1.variable_scope("dense1", use_resource=use_resource):
            w1 = tf1.get_variable("w", [784, 128])
            b1 = tf1.get_variable("b", [128], initializer=tf1.zeros_initializer())
            h = tf.nn.relu(tf.matmul(x, w1) + b1)
        with tf1.variable_scope("dense2", use_resource=use_resource):
            w2 = tf1.get_variable("w", [128, 10])
            logits = tf.matmul(h, w2)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits), name="loss"
        )
        train = tf1.train.GradientDescentOptimizer(0.1).minimize(loss)
        tf1.summary.scalar("loss", loss)
        tf1.train.Saver()
        tf1.global_variables_initializer()
    return graph, train


def by_name(report: Any) -> dict[str, Any]:
    return {op.name: op for op in report.ops}


# ------------------------------------------------------- registry and trigger
def test_xla_kernels_appear_only_after_initialisation() -> None:
    got = run_python(
        """
        import io, json
        import tensorflow as tf
        import tfprof_lite
        from tfprof_lite.capture import xla_compat
        before = xla_compat.xla_kernels_registered()
        with tfprof_lite.Monitor(None, stream=io.StringIO()) as mon:
            xla_compat.ensure_xla_kernels()
        print(json.dumps({"before": before, "after": xla_compat.xla_kernels_registered(),
                          "gpu": xla_compat.xla_kernels_registered("XLA_GPU_JIT"),
                          "counted": mon.steps}))
        """
    )
    assert got == {"before": False, "after": True, "gpu": True, "counted": 0}


def test_any_first_session_run_also_registers_them() -> None:
    """TF 2.21 fact documented in docs/xla_compat.md (not relied upon)."""
    got = run_python(
        """
        import json
        import tensorflow as tf
        from tfprof_lite.capture import xla_compat
        tf1 = tf.compat.v1
        graph = tf.Graph()
        with graph.as_default():
            op = tf.no_op()
        created = tf1.Session(graph=graph)
        after_session = xla_compat.xla_kernels_registered()
        created.run(op)
        print(json.dumps([after_session, xla_compat.xla_kernels_registered()]))
        """
    )
    assert got == [False, True]


# ------------------------------------------------------------ live reports
def test_plain_mlp_is_fully_compatible() -> None:
    graph, _ = mlp()
    report = xla_compat.check_graph(graph)
    assert report.fully_compatible and report.share == 1.0 and not report.incompatible
    kinds = {op.host for op in report.host_ops}
    assert {"saver", "summary", "initializer", "source", "control"} <= kinds
    ops = by_name(report)
    assert ops["save/SaveV2"].host == "saver" and not ops["save/SaveV2"].compatible
    assert ops["init"].host == "initializer" and ops["x"].host == "source"
    assert ops["dense1/MatMul"].compatible and ops["dense1/MatMul"].host == ""
    assert all(s.share == 1.0 for s in report.scopes)
    assert report.segments >= 1 and report.largest_segment > 20
    assert report.summary_line().startswith("XLA_CPU_JIT: 100.0% of ")


def numpy_function_graph() -> Any:
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [8, 16], name="x")
        with tf1.name_scope("before"):
            a = tf.nn.relu(tf.matmul(x, tf.ones([16, 16])) + 1.0) * 2.0
        with tf1.name_scope("middle"):
            p = tf1.numpy_function(lambda v: v, [a], tf.float32)
            p.set_shape([8, 16])
        with tf1.name_scope("after"):
            tf.reduce_sum(tf.nn.relu(tf.matmul(p, tf.ones([16, 4])) - 1.0) * 3.0, name="out")
    return graph


def test_numpy_function_is_flagged_and_splits() -> None:
    report = xla_compat.check_graph(numpy_function_graph())
    (bad,) = report.incompatible
    assert (bad.name, bad.op, bad.role, bad.scope) == (
        "middle/PyFunc",
        "PyFunc",
        "splits",
        "middle",
    )
    assert bad.reason == "no XLA_CPU_JIT kernel for PyFunc"
    assert not report.fully_compatible and report.segments == 2
    scopes = {s.scope: s for s in report.scopes}
    assert scopes["middle"].share == 0.0 and scopes["middle"].incompatible == ("middle/PyFunc",)
    assert scopes["before"].share == scopes["after"].share == 1.0
    lines = report.advice_lines()
    assert "splits a JIT cluster: middle/PyFunc (PyFunc)" in lines
    assert any("Python callback" in line for line in lines)


def test_the_split_matches_real_auto_clustering() -> None:
    """With auto-clustering on, TensorFlow builds one cluster per segment."""
    code = """
        import json, numpy as np, tensorflow as tf
        from tests.integration.test_xla_compat import numpy_function_graph
        tf1 = tf.compat.v1
        graph = numpy_function_graph()
        meta = tf1.RunMetadata()
        with tf1.Session(graph=graph) as sess:
            sess.run(graph.get_tensor_by_name("after/out:0"),
                     {graph.get_tensor_by_name("x:0"): np.ones((8, 16), np.float32)},
                     options=tf1.RunOptions(output_partition_graphs=True), run_metadata=meta)
        runs = sorted(n.name for g in meta.partition_graphs for n in g.node if n.op == "_XlaRun")
        print(json.dumps(runs))
        """
    flags = "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit --tf_xla_min_cluster_size=2"
    runs = run_python(code, TF_XLA_FLAGS=flags)
    assert len(runs) == 2 == xla_compat.check_graph(numpy_function_graph()).segments


def test_py_func_and_py_function_are_flagged() -> None:
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant([1.0, 2.0])
        with tf1.name_scope("callbacks"):
            a = tf1.py_func(lambda v: v, [x * 2.0], tf.float32)
            b = tf.py_function(lambda v: v, [x * 3.0], tf.float32)
            tf.add(a, b)
    report = xla_compat.check_graph(graph)
    assert {(op.op, op.role) for op in report.incompatible} == {
        ("PyFunc", "splits"),
        ("EagerPyFunc", "splits"),
    }


def test_string_ops_are_flagged_by_kernel_and_by_dtype() -> None:
    graph = tf.Graph()
    with graph.as_default():
        with tf1.name_scope("fmt"):
            text = tf.strings.as_string(tf.reduce_sum(tf.ones([4]) * 2.0))
            tf.identity(text, name="copy")
        tf.identity(tf.ones([2]), name="numbers")
    ops = by_name(xla_compat.check_graph(graph))
    assert ops["fmt/AsString"].reason == "no XLA_CPU_JIT kernel for AsString"
    assert ops["fmt/copy"].reason == "XLA_CPU_JIT kernel of Identity does not accept T=string"
    assert ops["fmt/AsString"].role == "blocks" and ops["fmt/copy"].role == "blocks"
    assert ops["numbers"].compatible  # the same op type with a numeric T is fine


def test_function_bodies_are_checked() -> None:
    graph = tf.Graph()
    with graph.as_default(), tf1.name_scope("loop"):

        def body(i: Any, v: Any) -> Any:
            return i + 1, tf.reshape(tf1.numpy_function(lambda a: a, [v], tf.float32), [])

        tf.while_loop(lambda i, v: i < 3, body, [tf.constant(0), tf.constant(1.0)])
    (bad,) = xla_compat.check_graph(graph).incompatible
    assert bad.op == "While" and bad.reason.startswith("calls loop_while_body")
    assert bad.reason.endswith("no XLA_CPU_JIT kernel for PyFunc")


def test_reference_variables_are_flagged() -> None:
    graph, _ = mlp(use_resource=False)
    report = xla_compat.check_graph(graph)
    types = {t.op: t for t in report.types if t.incompatible}
    assert "ApplyGradientDescent" in types and "Assign" not in types  # Assign: initialisers
    assert any("use resource variables" in line for line in report.advice_lines())
    assert by_name(report)["dense1/w/Assign"].host == "initializer"


def test_targets() -> None:
    graph, _ = mlp()
    assert xla_compat.check_graph(graph, "XLA_GPU_JIT").fully_compatible
    with pytest.raises(InvalidOptionError, match="XLA_CPU_JIT, XLA_GPU_JIT"):
        xla_compat.check_graph(graph, "XLA_TPU_JIT")


# ---------------------------------------------------------- saved profiles
def test_annotate_round_trip_checker_and_cli(tmp_path: Path, capsys: Any) -> None:
    graph = numpy_function_graph()
    feed = {graph.get_tensor_by_name("x:0"): np.ones((8, 16), np.float32)}
    out = graph.get_tensor_by_name("after/out:0")
    pctx = tfprof_lite.ProfileContext(tmp_path, trace_steps=[0], dump_steps=[2])
    with tf1.Session(graph=graph) as sess, pctx:
        sess.run(out, feed)
        live = xla_compat.annotate(pctx.profiler, targets=["XLA_CPU_JIT", "XLA_GPU_JIT"])
        for _ in range(2):
            sess.run(out, feed)
    saved = tfprof_lite.Profiler.load(tmp_path / "profile_2")
    for report in live:
        stored = report_from_model(saved.model, report.target)
        assert stored is not None and stored.source == "profile"
        assert stored.advice_lines() == report.advice_lines()
        assert stored.to_text() == report.to_text()

    capsys.readouterr()
    advice = saved.advise({"XlaCompatibilityChecker": {}})
    reports = list(advice.checkers["XlaCompatibilityChecker"].reports)
    assert reports == live[0].advice_lines()
    assert capsys.readouterr().out.startswith("\nXlaCompatibilityChecker:\nXLA_CPU_JIT: ")
    gpu = saved.advise({"XlaCompatibilityChecker": {"target": "XLA_GPU_JIT", "max_ops": "0"}})
    assert gpu.checkers["XlaCompatibilityChecker"].reports[0].startswith("XLA_GPU_JIT: ")
    all_advice = saved.advise(tfprof_lite.ALL_ADVICE)
    assert "XlaCompatibilityChecker" in CHECKERS
    assert "XlaCompatibilityChecker" not in all_advice.checkers

    runner = CliRunner()
    text = runner.invoke(xla_compat_command, [str(tmp_path / "profile_2")])
    assert text.exit_code == 0 and text.output == live[0].to_text()
    doc = json.loads(runner.invoke(xla_compat_command, [str(tmp_path), "--json"]).output)
    assert doc["incompatible_ops"] == 1 and doc["source"] == "profile"
    strict = runner.invoke(xla_compat_command, [str(tmp_path), "--strict"])
    assert strict.exit_code == STRICT_EXIT_CODE


def test_checker_and_cli_without_recorded_data(tmp_path: Path) -> None:
    graph, _ = mlp()
    prof = tfprof_lite.Profiler(graph)
    advice = prof.advise({"XlaCompatibilityChecker": {}})
    (line,) = advice.checkers["XlaCompatibilityChecker"].reports
    assert "annotate(profiler)" in line
    with pytest.raises(InvalidOptionError, match="target"):
        prof.advise({"XlaCompatibilityChecker": {"target": "CPU"}})
    xla_compat.annotate(prof)
    other = prof.advise({"XlaCompatibilityChecker": {"target": "XLA_GPU_JIT"}})
    assert other.checkers["XlaCompatibilityChecker"].reports == [
        "no XLA compatibility data for XLA_GPU_JIT in this profile (it has: XLA_CPU_JIT)"
    ]
    bare = tmp_path / "profile_0"
    bare.write_bytes(tfprof_lite.Profiler(graph).serialize_to_string())
    result = CliRunner().invoke(xla_compat_command, [str(bare)])
    assert result.exit_code != 0 and "no XLA compatibility data" in str(result.exception)


def test_op_log_for_profiler_and_write_op_log(tmp_path: Path) -> None:
    graph = numpy_function_graph()
    op_log = xla_compat.op_log(graph)
    prof = tfprof_lite.Profiler(graph, op_log=op_log)
    report = report_from_model(prof.model)
    assert report is not None and [op.name for op in report.incompatible] == ["middle/PyFunc"]
    tfprof_lite.write_op_log(graph, tmp_path, op_log=op_log)
    assert (tmp_path / "tfprof_log").stat().st_size > 0


def test_cli_checks_a_graphdef_file_live(tmp_path: Path) -> None:
    path = tmp_path / "graph.pbtxt"
    path.write_text(str(numpy_function_graph().as_graph_def()))
    result = CliRunner().invoke(xla_compat_command, ["--graph", str(path), "--max-ops", "5"])
    assert result.exit_code == 0, result.output
    assert "splits a JIT cluster: middle/PyFunc (PyFunc)" in result.output
