"""What TensorFlow's own profiler tests check, checked on tfprof_lite: several steps
and the client ``Timeline``.

TensorFlow 2.21's ``profiler_test`` (multi-step profiles) and ``client/timeline_test``
behaviours, compared with a live TF ``Profiler`` fed the same RunMetadata, TF's
one-shot ``profile`` and TF's client ``Timeline`` (see ``test_tf_suite_parity.py``
for the rest and docs/compatibility.md, "TensorFlow's own tests").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

from tensorflow.python.client import timeline as tf_timeline  # noqa: E402

import tfprof_lite  # noqa: E402
from tests.integration import tf_oracle  # noqa: E402
from tests.integration.test_tf_suite_parity import conv_tower, variable  # noqa: E402
from tests.integration.tf_suite_helpers import (  # noqa: E402
    BUILDER,
    FULL_TRACE,
    one_shot_text,
    ours_text,
)

pytestmark = pytest.mark.tf

tf1 = tf.compat.v1


# --------------------------------------------------------------- multi-step
def splittable() -> tuple[Any, Any, Any]:
    """Two convolutions of one image and their sum, fetched one by one."""
    image = tf.zeros([2, 6, 6, 3])
    first = variable("DW", [3, 3, 3, 6])
    second = variable("DW2", [2, 3, 3, 6])
    left = tf.nn.conv2d(image, first, [1, 2, 2, 1], "SAME")
    right = tf.nn.conv2d(image, second, [1, 2, 2, 1], "SAME")
    return left, right, left + right


def find(node: Any, name: str) -> Any:
    """The node called ``name`` in a returned tree, or None."""
    if node.name == name:
        return node
    for child in node.children:
        found = find(child, name)
        if found is not None:
            return found
    return None


def test_multi_step_profile_like_tf(tmp_path: Path) -> None:
    """profiler_test.testMultiStepProfile: each added step brings its nodes into
    the scope view (ours equals a live TF profiler fed the same steps)."""
    graph = tf.Graph()
    with graph.as_default():
        fetches = splittable()
        init = tf1.global_variables_initializer()
    options = dict(BUILDER.time_and_memory(min_bytes=0), output="none")
    ours = tfprof_lite.Profiler(graph)
    theirs = tf_oracle.LiveTf(graph)
    try:
        assert find(ours.profile_name_scope(options), "Conv2D") is None
        assert find(theirs.profiler.profile_name_scope(options), "Conv2D") is None
        with tf1.Session(graph=graph) as sess:
            sess.run(init)
            for step, fetch in enumerate(fetches, start=1):
                run_meta = tf1.RunMetadata()
                sess.run(fetch, options=FULL_TRACE, run_metadata=run_meta)
                ours.add_step(step, run_meta)
                theirs.add_step(step, run_meta)
                view = ours.profile_name_scope(options)
                names = ("DW2", "Conv2D_1", "add")
                present = {name: find(view, name) is not None for name in names}
                assert present == {"DW2": step >= 2, "Conv2D_1": step >= 2, "add": step == 3}
                assert find(view, "Conv2D").exec_micros > 0
                # Both views were built before the first step: runtime-only nodes
                # (_retval_*) never enter them, graph nodes added later would.
                mine = ours_text(ours, "scope", options, tmp_path / f"o{step}.txt")
                assert mine == theirs.text("scope", options)
                assert "_retval" not in mine
        advice = ours.advise(tfprof_lite.ALL_ADVICE)
        checkers = {"AcceleratorUtilizationChecker", "ExpensiveOperationChecker"}
        assert checkers | {"OperationChecker"} <= set(advice.checkers)
        assert not advice.checkers["AcceleratorUtilizationChecker"].reports  # CPU only
        assert advice.checkers["ExpensiveOperationChecker"].reports
    finally:
        tf_oracle.close_current()


def test_nodes_first_seen_after_a_view_like_tf(tmp_path: Path) -> None:
    """A view, then a step bringing new runtime-only nodes: TF's next view omits them."""
    graph = tf.Graph()
    with graph.as_default():
        fetches = splittable()
        init = tf1.global_variables_initializer()
    options = dict(BUILDER.time_and_memory(min_bytes=0), output="none")
    ours = tfprof_lite.Profiler(graph)
    theirs = tf_oracle.LiveTf(graph)
    try:
        with tf1.Session(graph=graph) as sess:
            sess.run(init)
            for step, fetch in enumerate(fetches[:2], start=1):
                run_meta = tf1.RunMetadata()
                sess.run(fetch, options=FULL_TRACE, run_metadata=run_meta)
                ours.add_step(step, run_meta)
                theirs.add_step(step, run_meta)
                mine = ours_text(ours, "scope", options, tmp_path / f"o{step}.txt")
                assert mine == theirs.text("scope", options)
    finally:
        tf_oracle.close_current()


def test_two_run_metadata_for_one_step_like_tf(tmp_path: Path) -> None:
    """profiler_test.testMultipleProfilePerStep: a second RunMetadata added to
    the same step (the initializer's) fills the initializer's nodes."""
    graph = tf.Graph()
    with graph.as_default():
        fetch = conv_tower()
        init = tf1.global_variables_initializer()
    options = (
        BUILDER(BUILDER.trainable_variables_parameter())
        .with_empty_output()
        .with_accounted_types([".*"])
        .select(["micros", "bytes", "peak_bytes", "residual_bytes", "output_bytes"])
        .build()
    )
    metas = [tf1.RunMetadata(), tf1.RunMetadata()]
    with tf1.Session(graph=graph) as sess:
        sess.run(init, options=FULL_TRACE, run_metadata=metas[0])
        sess.run(fetch, options=FULL_TRACE, run_metadata=metas[1])
    name = "DW/Initializer/random_normal/RandomStandardNormal"
    ours = tfprof_lite.Profiler(graph)
    theirs = tf_oracle.LiveTf(graph)
    try:
        for meta, filled in ((metas[1], False), (metas[0], True)):
            ours.add_step(0, meta)
            theirs.add_step(0, meta)
            node = find(ours.profile_name_scope(options), name)
            values = (node.exec_micros, node.requested_bytes, node.peak_bytes, node.residual_bytes)
            assert all(values) if filled else not any(values)
            text = ours_text(ours, "scope", options, tmp_path / f"{filled}.txt")
            assert text == theirs.text("scope", options)
    finally:
        tf_oracle.close_current()


def test_persistent_bytes_are_stable_across_runs_like_tf(tmp_path: Path) -> None:
    """model_analyzer_test.testTrackPersistentBytes: peak, output and residual
    bytes of an op are non-zero and the same for two traced runs, as TF's."""
    graph = tf.Graph()
    with graph.as_default():
        product = tf.constant([[1.0] * 100] * 100) * tf.constant([[2.0] * 100] * 100)
    config = tf1.ConfigProto()
    config.graph_options.rewrite_options.min_graph_nodes = -1
    options = dict(BUILDER.time_and_memory(), min_bytes=0)
    options["select"] = ("bytes", "peak_bytes", "output_bytes", "residual_bytes")
    found = []
    with tf1.Session(graph=graph, config=config) as sess:
        for _ in range(2):
            meta = tf1.RunMetadata()
            sess.run(product, options=FULL_TRACE, run_metadata=meta)
            quiet = dict(options, output="none")
            node = find(
                tfprof_lite.profile(graph, run_meta=meta, cmd="scope", options=quiet), "mul"
            )
            found.append((node.peak_bytes, node.output_bytes, node.residual_bytes))
            theirs = tf_oracle.one_shot(graph, meta.SerializeToString(), "scope", options)[0]
            assert one_shot_text(graph, meta, "scope", options, tmp_path / "o.txt") == theirs
    assert all(found[0]) and found[0] == found[1]


# ------------------------------------------------------------------ Timeline
def test_timeline_allocations_and_formats_like_tf() -> None:
    """client/timeline_test: every combination of ``show_dataflow`` and
    ``show_memory`` gives TF's Chrome trace, and ``analyze_step_stats`` the
    same allocator maximums as TF (resource variables on three CPUs, the case
    where TF's own testAnalysisAndAllocations fails in 2.21)."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/cpu:0"):
            first = tf1.Variable(1.0, name="num1", use_resource=True)
        with tf.device("/cpu:1"):
            second = tf1.Variable(2.0, name="num2", use_resource=True)
        with tf.device("/cpu:2"):
            result = first + second + first * second
        init = tf1.global_variables_initializer()
    run_meta = tf1.RunMetadata()
    with tf1.Session(graph=graph, config=tf1.ConfigProto(device_count={"CPU": 3})) as sess:
        sess.run(init)
        sess.run(result, options=FULL_TRACE, run_metadata=run_meta)
    for dataflow in (True, False):
        for memory in (True, False):
            kwargs = {"show_dataflow": dataflow, "show_memory": memory}
            ours = tfprof_lite.Timeline(run_meta.step_stats).generate_chrome_trace_format(**kwargs)
            theirs = tf_timeline.Timeline(run_meta.step_stats).generate_chrome_trace_format(
                **kwargs
            )
            assert ours == theirs
            assert all("ph" in event for event in json.loads(ours)["traceEvents"])
    mine = tfprof_lite.Timeline(run_meta.step_stats).analyze_step_stats().allocator_maximums
    tf_max = tf_timeline.Timeline(run_meta.step_stats).analyze_step_stats().allocator_maximums
    assert {k: (v.num_bytes, v.timestamp, v.tensors) for k, v in mine.items()} == {
        k: (v.num_bytes, v.timestamp, v.tensors) for k, v in tf_max.items()
    }
    assert any(m.num_bytes >= 8 for m in mine.values())


def test_timeline_of_rpc_records_like_tf() -> None:
    """client/timeline_test.testTimelineWithRPCs: a RecvTensor record with an
    RPC label (no TF graph) gives TF's trace."""
    meta = tf1.RunMetadata()
    device = meta.step_stats.dev_stats.add(device="/job:worker/replica:0/task:0/cpu:0")
    record = device.node_stats.add(node_name="RecvTensor", all_start_micros=12345)
    record.op_end_rel_micros = 42
    record.timeline_label = (
        "[1024B] edge_160_conv2/biases/read from /job:ps/replica:0/task:3/cpu:0 "
        "to /job:worker/replica:0/task:0/cpu:0"
    )
    ours = tfprof_lite.Timeline(meta.step_stats).generate_chrome_trace_format()
    assert ours == tf_timeline.Timeline(meta.step_stats).generate_chrome_trace_format()
