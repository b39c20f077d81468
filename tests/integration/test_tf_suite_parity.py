"""What TensorFlow's own profiler tests check, checked on tfprof_lite.

TensorFlow 2.21's ``profile_context_test``, ``model_analyzer_test``,
``profiler_test`` and ``client/timeline_test`` were run against tfprof_lite
(see docs/compatibility.md, "TensorFlow's own tests"). This module covers the
same behaviours with models and assertions of its own, and wherever TF 2.21
still has the behaviour it compares with TF itself: TF's one-shot
``profile``, a live TF ``Profiler`` fed the same RunMetadata, TF's loader
reading our dumped profile files, and TF's client ``Timeline``.
``ProfileContext`` itself is not in the TF 2.21 wheel; its schedule is checked
against TF's documented rules.

The multi-step and ``Timeline`` checks are in ``test_tf_suite_steps.py``; the model
builders stay here, since the code-view checks select this file's name.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

from tensorflow.core.profiler import profile_pb2, tfprof_output_pb2  # noqa: E402
from tensorflow.python.client import session as tf_session  # noqa: E402
from tensorflow.python.ops import rnn, rnn_cell  # noqa: E402  (TF1 RNN without Keras 3)

import tfprof_lite  # noqa: E402
from tests.integration import tf_oracle  # noqa: E402
from tests.integration.capture_helpers import _tf_text  # noqa: E402
from tests.integration.tf_suite_helpers import (  # noqa: E402
    BUILDER,
    FULL_TRACE,
    one_shot_text,
    ours_text,
)

pytestmark = pytest.mark.tf

tf1 = tf.compat.v1


# ------------------------------------------------------------------ the models
def variable(name: str, shape: list[int]) -> Any:
    """A TF1 reference variable (read through ``<name>/read``, as in TF1 graphs)."""
    init = tf1.random_normal_initializer(stddev=0.001)
    return tf1.get_variable(name, shape, tf.float32, initializer=init, use_resource=False)


def conv_tower() -> Any:
    """Two strided convolutions over a constant image; variables ScalarW, DW, DW2."""
    variable("ScalarW", [])
    first = variable("DW", [3, 3, 3, 6])
    second = variable("DW2", [2, 2, 6, 12])
    hidden = tf.nn.conv2d(tf.zeros([2, 6, 6, 3]), first, [1, 2, 2, 1], padding="SAME")
    return tf.nn.conv2d(hidden, second, [1, 2, 2, 1], padding="SAME")


def rnn_training_op() -> Any:
    """Four conv towers as a sequence into an RNN, an L2 loss and one SGD op."""
    towers = []
    for index in range(4):
        with tf1.variable_scope(f"tower_{index}"):
            towers.append(tf.reshape(conv_tower(), [2, 1, -1]))
    cell = rnn_cell.BasicRNNCell(16)
    outputs = rnn.dynamic_rnn(cell, tf.concat(towers, axis=1), dtype=tf.float32)[0]
    loss = tf.nn.l2_loss(tf.reduce_mean(tf.ones_like(outputs) - outputs))
    return tf1.train.GradientDescentOptimizer(0.01).minimize(loss)


@dataclasses.dataclass
class Traced:
    """A graph, its traced run's RunMetadata and the session (kept open)."""

    graph: Any
    run_meta: Any
    session: Any


def traced_run(build: Any) -> Traced:
    """Build with ``build()`` in a fresh graph, initialise, run it once traced."""
    graph = tf.Graph()
    with graph.as_default():
        fetch = build()
        init = tf1.global_variables_initializer()
    session = tf1.Session(graph=graph)
    session.run(init)
    run_meta = tf1.RunMetadata()
    session.run(fetch, options=FULL_TRACE, run_metadata=run_meta)
    return Traced(graph, run_meta, session)


@pytest.fixture(scope="module")
def rnn_run() -> Any:
    """One traced step of the RNN training model."""
    traced = traced_run(rnn_training_op)
    yield traced
    traced.session.close()


def training_graph() -> tuple[Any, Any, Any]:
    """(graph, train op, initializer) of the RNN model."""
    graph = tf.Graph()
    with graph.as_default():
        train = rnn_training_op()
        init = tf1.global_variables_initializer()
    return graph, train, init


# ------------------------------------------------------------ ProfileContext
def test_auto_profiles_and_default_dump_match_tf_loading_the_dump(tmp_path: Path) -> None:
    """profile_context_test.testBasics: automatic tracing, ``op`` views at steps
    15, 50 and 100 written to a file, ``profile_100`` dumped by default; TF's
    tfprof loading that file prints the same op view as the step-100 view."""
    graph, train, init = training_graph()
    report = tmp_path / "op.txt"
    options = BUILDER(BUILDER.time_and_memory()).with_file_output(str(report)).build()
    with tfprof_lite.ProfileContext(tmp_path) as pctx, tf1.Session(graph=graph) as sess:
        pctx.add_auto_profiling("op", options, [15, 50, 100])
        sess.run(init)  # step 0
        for step in range(1, 102):
            sess.run(train)
            assert report.exists() == (step in (15, 50, 100))
            if step == 100:
                assert (tmp_path / "profile_100").exists()
                at_step_100 = report.read_text()
            report.unlink(missing_ok=True)
    assert set(pctx.get_profiles("op")) == {15, 50, 100}
    theirs = _tf_text(tmp_path / "profile_100", "op", options, tmp_path / "tf_op.txt")
    assert theirs == at_step_100


def test_debug_mode_auto_traces_after_the_warm_up(tmp_path: Path) -> None:
    """profile_context_test.testAutoTracingInDeubMode: no trace during the ten
    warm-up steps, step 11 traced (new fetches), step 12 not (fetched before)."""
    graph, train, init = training_graph()
    with tfprof_lite.ProfileContext(tmp_path, debug=True), tf1.Session(graph=graph) as sess:
        sess.run(init)
        for _ in range(10):
            sess.run(train)
            assert not [name for name in os.listdir(tmp_path) if "run_meta" in name]
        sess.run(train)  # step 11
        (tmp_path / "run_meta_11").unlink()
        sess.run(train)  # step 12
        assert not [name for name in os.listdir(tmp_path) if "run_meta" in name]


def test_base_session_profile_context_attribute(tmp_path: Path) -> None:
    """profile_context_test.testDisabled: an enabled context is
    ``BaseSession.profile_context`` while active (None afterwards, as in TF);
    a disabled one leaves the attribute alone."""
    base = tf_session.BaseSession
    before = base.__dict__.get("profile_context")
    graph, train, init = training_graph()
    with tfprof_lite.ProfileContext(tmp_path, enabled=False) as off:
        assert base.__dict__.get("profile_context") is before
    assert off.profiler is None
    with tfprof_lite.ProfileContext(tmp_path) as pctx, tf1.Session(graph=graph) as sess:
        assert base.profile_context is pctx
        sess.run(init)
        sess.run(train)
    assert pctx.profiler is not None
    assert "profile_context" in base.__dict__ and base.profile_context is None
    with pytest.raises(RuntimeError, match="boom"), tfprof_lite.ProfileContext(tmp_path):
        raise RuntimeError("boom")
    assert base.profile_context is None


def test_next_step_trace_and_dump_reload_like_tf(tmp_path: Path) -> None:
    """model_analyzer_test.testSelectEverythingDetail: ``trace_steps=[]`` and
    ``dump_steps=[]`` with ``trace_next_step``/``dump_next_step`` trace and dump
    step 1 only; the scope view with every column is the same from the live
    profiler, from ``profile_1`` reloaded, and from TF's tfprof loading it."""
    select = ["micros", "bytes", "params", "float_ops", "occurrence", "device"]
    select += ["op_types", "input_shapes"]
    options = (
        BUILDER(BUILDER.trainable_variables_parameter())
        .with_accounted_types([".*"])
        .select(select)
        .build()
    )
    graph = tf.Graph()
    with graph.as_default(), tf.device("/device:CPU:0"):
        fetch = conv_tower()
        init = tf1.global_variables_initializer()
    with (
        tfprof_lite.ProfileContext(tmp_path, trace_steps=[], dump_steps=[]) as pctx,
        tf1.Session(graph=graph) as sess,
    ):
        sess.run(init)
        pctx.trace_next_step()
        pctx.dump_next_step()
        sess.run(fetch)  # step 1
        sess.run(fetch)  # step 2: neither traced nor dumped
    assert pctx.profiler is not None and pctx.profiler.model.sorted_steps() == [1]
    assert os.listdir(tmp_path) == ["profile_1"]
    live = ours_text(pctx.profiler, "scope", options, tmp_path / "live.txt")
    conv = next(line for line in live.splitlines() if line.lstrip().startswith("Conv2D "))
    assert "1/1|1/1" in conv and "0:2x6x6x3|1:3x3x3x6" in conv and "cpu" in conv.lower()
    loaded = tfprof_lite.Profiler.load(tmp_path / "profile_1")
    assert ours_text(loaded, "scope", options, tmp_path / "loaded.txt") == live
    assert _tf_text(tmp_path / "profile_1", "scope", options, tmp_path / "tf.txt") == live


def test_auto_profiling_files_appear_at_their_steps(tmp_path: Path) -> None:
    """model_analyzer_test.testAutoProfiling: two scope views with file outputs
    at their steps, dumps at steps 3 and 4 into a nested directory that does
    not exist before the first dump."""
    time_dir, memory_dir = tmp_path / "time", tmp_path / "memory"
    time_dir.mkdir()
    memory_dir.mkdir()
    profile_dir = tmp_path / "a" / "b" / "profile"
    timed = BUILDER(BUILDER.time_and_memory()).select(["micros"])
    sized = BUILDER(BUILDER.time_and_memory()).select(["bytes"])
    graph = tf.Graph()
    with graph.as_default():
        fetch = conv_tower()
        init = tf1.global_variables_initializer()
    with (
        tfprof_lite.ProfileContext(profile_dir, trace_steps=[1, 2, 3], dump_steps=[3, 4]) as pctx,
        tf1.Session(graph=graph) as sess,
    ):
        timed_options = timed.with_file_output(str(time_dir / "p")).build()
        sized_options = sized.with_file_output(str(memory_dir / "p")).build()
        pctx.add_auto_profiling("scope", timed_options, [2, 3])
        pctx.add_auto_profiling("scope", sized_options, [1, 3])
        sess.run(init)
        for step in range(1, 8):
            sess.run(fetch)
            for folder, steps, word in (
                (time_dir, (2, 3), "execution time"),
                (memory_dir, (1, 3), "requested bytes"),
            ):
                files = list(folder.iterdir())
                assert len(files) == (1 if step in steps else 0)
                for path in files:
                    assert word in path.read_text()
                    path.unlink()
            assert profile_dir.exists() == (step >= 3)
            if profile_dir.exists():
                dumped = sorted(os.listdir(profile_dir))
                assert dumped == ([f"profile_{step}"] if step in (3, 4) else [])
                for name in dumped:
                    (profile_dir / name).unlink()
    assert sorted(pctx.get_profiles("scope")) == [1, 2, 3]


def test_code_view_of_a_context_trace_matches_tf(tmp_path: Path) -> None:
    """model_analyzer_test.testComplexCodeView: the code view of a step traced
    by ``trace_next_step`` (children per line of the model builder, forward
    and "(gradient)", parameters and FLOPs) equals TF's on the same trace."""
    graph, train, init = training_graph()
    options = (
        BUILDER(BUILDER.trainable_variables_parameter())
        .with_accounted_types([".*"])
        .with_node_names(show_name_regexes=[r".*test_tf_suite_parity\.py.*"])
        .account_displayed_op_only(False)
        .select(["params", "float_ops"])
        .build()
    )
    run_meta = tf1.RunMetadata()
    with (
        tfprof_lite.ProfileContext(tmp_path, trace_steps=[], dump_steps=[]) as pctx,
        tf1.Session(graph=graph) as sess,
    ):
        sess.run(init)
        pctx.trace_next_step()
        sess.run(train, run_metadata=run_meta)  # the caller's RunMetadata is filled
    assert pctx.profiler is not None
    ours = pctx.profiler.profile_python(dict(options, output=f"file:outfile={tmp_path / 'o'}"))
    text, proto = tf_oracle.one_shot(graph, run_meta.SerializeToString(), "code", options)
    assert (tmp_path / "o").read_text() == text
    theirs = tfprof_output_pb2.MultiGraphNodeProto.FromString(proto)
    assert [child.name for child in ours.children] == [child.name for child in theirs.children]
    assert any(child.name.endswith("(gradient)") for child in ours.children)
    assert (ours.total_parameters, ours.total_float_ops) == (
        theirs.total_parameters,
        theirs.total_float_ops,
    )
    assert ours.total_parameters == 4 * (1 + 162 + 288) + 1040  # towers + RNN kernel/bias


# ------------------------------------------------ Profiler and one-shot views
PROFILE_BASIC = (
    BUILDER(BUILDER.trainable_variables_parameter())
    .with_accounted_types([".*"])
    .select(["params", "float_ops", "micros", "bytes", "device", "op_types", "occurrence"])
    .build()
)


@pytest.mark.parametrize("view", ["graph", "scope", "code", "op"])
def test_profiler_view_equals_one_shot_and_tf(rnn_run: Traced, view: str, tmp_path: Path) -> None:
    """profiler_test.testProfileBasic: for each view the Profiler's report on
    one added step equals the one-shot ``profile`` report on the same
    RunMetadata, and both equal TF's one-shot report."""
    profiler = tfprof_lite.Profiler(rnn_run.graph)
    profiler.add_step(1, rnn_run.run_meta)
    ours = ours_text(profiler, view, PROFILE_BASIC, tmp_path / "profiler.txt")
    shot = one_shot_text(rnn_run.graph, rnn_run.run_meta, view, PROFILE_BASIC, tmp_path / "o.txt")
    theirs, _ = tf_oracle.one_shot(
        rnn_run.graph, rnn_run.run_meta.SerializeToString(), view, PROFILE_BASIC
    )
    assert ours == shot == theirs


OP_COLUMNS = ["params", "micros", "bytes", "peak_bytes", "residual_bytes", "output_bytes"]
OP_COLUMNS += ["occurrence", "input_shapes"]
OPTION_SETS = {
    "params_only": BUILDER.trainable_variables_parameter(),
    "op_occurrence": (
        BUILDER(BUILDER.trainable_variables_parameter())
        .with_accounted_types([".*"])
        .with_min_occurrence(10)
        .order_by("occurrence")
        .select(OP_COLUMNS)
        .build()
    ),
    "code_lines": (
        BUILDER(BUILDER.trainable_variables_parameter())
        .with_accounted_types([".*"])
        .with_node_names(show_name_regexes=[r".*test_tf_suite_parity.*"])
        .account_displayed_op_only(False)
        .select(["bytes", "params", "float_ops", "num_hidden_ops", "device", "input_shapes"])
        .build()
    ),
    "micros_only": BUILDER(BUILDER.time_and_memory()).select(["micros"]).build(),
    "bytes_only": BUILDER(BUILDER.time_and_memory()).select(["bytes"]).build(),
    "memory_columns": (
        BUILDER(BUILDER.time_and_memory())
        .select(["peak_bytes", "residual_bytes", "output_bytes"])
        .build()
    ),
    "min_micros": BUILDER.time_and_memory(min_micros=5),
    "min_cpu_micros": BUILDER.time_and_memory(min_cpu_micros=5),
    "min_bytes": BUILDER.time_and_memory(min_bytes=600),
    "min_peak_bytes": BUILDER.time_and_memory(min_peak_bytes=600),
    "min_residual_bytes": BUILDER.time_and_memory(min_residual_bytes=100),
    "min_output_bytes": BUILDER.time_and_memory(min_output_bytes=600),
}
VIEW_OF = {"op_occurrence": "op", "code_lines": "code"}


@pytest.mark.parametrize("name", sorted(OPTION_SETS))
def test_one_shot_reports_equal_tf(rnn_run: Traced, name: str, tmp_path: Path) -> None:
    """model_analyzer_test's one-shot checks (testDumpToFile, testOpView,
    testSimpleCodeView, testSelectOption, testMinOption): the same report as
    TF's one-shot ``profile`` for each of their option sets."""
    view = VIEW_OF.get(name, "scope")
    options = OPTION_SETS[name]
    ours = one_shot_text(rnn_run.graph, rnn_run.run_meta, view, options, tmp_path / "o.txt")
    theirs, _ = tf_oracle.one_shot(
        rnn_run.graph, rnn_run.run_meta.SerializeToString(), view, options
    )
    assert ours == theirs and ours


def test_params_report_of_the_untraced_graph(tmp_path: Path) -> None:
    """model_analyzer_test.testDumpToFile: the parameter report of a graph alone."""
    graph = tf.Graph()
    with graph.as_default():
        conv_tower()
    options = BUILDER.trainable_variables_parameter()
    ours = one_shot_text(graph, None, "scope", options, tmp_path / "o.txt")
    assert ours.split("Profile:\n", 1)[1] == (
        "node name | # parameters\n"
        "_TFProfRoot (--/451 params)\n"
        "  DW (3x3x3x6, 162/162 params)\n"
        "  DW2 (2x2x6x12, 288/288 params)\n"
        "  ScalarW (1, 1/1 params)\n"
    )
    assert ours == tf_oracle.one_shot(graph, None, "scope", options)[0]


def test_op_view_rows_are_a_chain_of_suffix_totals(rnn_run: Traced) -> None:
    """model_analyzer_test.testOpView: the op view's message is a chain of single
    children whose totals are suffix sums, ordered by occurrence."""
    options = dict(OPTION_SETS["op_occurrence"], output="none")
    node = tfprof_lite.profile(rnn_run.graph, run_meta=rnn_run.run_meta, cmd="op", options=options)
    total, own, last_count, shapes = node.total_exec_micros, node.exec_micros, 10**9, 0
    while node.children:
        assert len(node.children) == 1
        shapes += sum(len(graph_node.input_shapes) for graph_node in node.graph_nodes)
        node = node.children[0]
        assert total == node.total_exec_micros + own
        total, own = node.total_exec_micros, node.exec_micros
        assert len(node.graph_nodes) <= last_count
        last_count = len(node.graph_nodes)
    assert shapes > 0


@pytest.mark.parametrize("select", ["micros", "bytes", "params", "float_ops", "op_types", "device"])
def test_pprof_output_like_tf(rnn_run: Traced, select: str, tmp_path: Path) -> None:
    """model_analyzer_test.testPprof: a code-view pprof file for numeric
    columns (with the RNN's while loop in it, ``ops.py`` frames trimmed), no
    file for the others — as TF."""
    paths = {who: tmp_path / f"{who}.pb.gz" for who in ("ours", "tf")}

    def options(path: Path) -> dict[str, Any]:
        return (
            BUILDER(BUILDER.time_and_memory())
            .select([select])
            .with_max_depth(100000)
            .with_node_names(trim_name_regexes=[r"ops\.py.*"])
            .with_pprof_output(str(path))
            .build()
        )

    tfprof_lite.profile(
        rnn_run.graph, run_meta=rnn_run.run_meta, cmd="code", options=options(paths["ours"])
    )
    tf1.profiler.profile(
        rnn_run.graph, run_meta=rnn_run.run_meta, cmd="code", options=options(paths["tf"])
    )
    assert paths["ours"].exists() == paths["tf"].exists()
    if select in ("op_types", "device"):
        assert not paths["ours"].exists()
        return
    profile = profile_pb2.Profile.FromString(gzip.decompress(paths["ours"].read_bytes()))
    assert len(profile.sample) > 10 and len(profile.location) > 10
    assert any("rnn" in s for s in profile.string_table)
    assert any("while" in s for s in profile.string_table)
    assert not any(s.startswith("ops.py") for s in profile.string_table)


def test_timeline_output_file(rnn_run: Traced, tmp_path: Path) -> None:
    """model_analyzer_test.testTimeline: the graph view's timeline output writes
    ``<outfile>_<step>``, a Chrome trace."""
    outfile = tmp_path / "timeline"
    options = (
        BUILDER(BUILDER.trainable_variables_parameter())
        .with_max_depth(100000)
        .with_step(0)
        .with_timeline_output(str(outfile))
        .with_accounted_types([".*"])
        .build()
    )
    tfprof_lite.profile(rnn_run.graph, run_meta=rnn_run.run_meta, cmd="graph", options=options)
    trace = json.loads((tmp_path / "timeline_0").read_text())
    assert len(trace["traceEvents"]) > 10
