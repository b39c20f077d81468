"""Wire compatibility of tfprof_lite.proto with TensorFlow's own message classes.

Messages that TensorFlow produced (a FULL_TRACE session run, a GraphDef with shapes,
a tfprof profile, op log, views and advice) are serialized, parsed with our classes,
re-serialized and parsed back with TensorFlow's classes: the result must equal the
original, also after dropping every field our schema does not know. The reverse
direction fills every field of our messages and sends them through TensorFlow's.
Graph mode is only entered through ``tf.Graph().as_default()``, so eager execution
stays on for other tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

from tensorflow.core.framework import (  # noqa: E402
    allocation_description_pb2,
    attr_value_pb2,
    cost_graph_pb2,
    graph_pb2,
    node_def_pb2,
    step_stats_pb2,
    tensor_description_pb2,
    tensor_pb2,
    tensor_shape_pb2,
)
from tensorflow.core.profiler import (  # noqa: E402
    profile_pb2,
    tfprof_log_pb2,
    tfprof_options_pb2,
    tfprof_output_pb2,
)
from tensorflow.core.protobuf import config_pb2  # noqa: E402

from tests.unit.test_proto import _is_repeated, populate  # noqa: E402
from tfprof_lite.errors import InvalidInputError  # noqa: E402
from tfprof_lite.proto import messages  # noqa: E402
from tfprof_lite.proto.codec import parse  # noqa: E402

pytestmark = pytest.mark.tf

#: Our exported class name -> TensorFlow's class. Pprof* map to TensorFlow's copy of
#: the pprof schema (tensorflow.tfprof.pprof), which is a subset of ours.
TF_CLASSES: dict[str, Any] = {
    "RunMetadata": config_pb2.RunMetadata,
    "StepStats": step_stats_pb2.StepStats,
    "DeviceStepStats": step_stats_pb2.DeviceStepStats,
    "NodeExecStats": step_stats_pb2.NodeExecStats,
    "AllocatorMemoryUsed": step_stats_pb2.AllocatorMemoryUsed,
    "AllocationRecord": step_stats_pb2.AllocationRecord,
    "NodeOutput": step_stats_pb2.NodeOutput,
    "MemoryStats": step_stats_pb2.MemoryStats,
    "TensorDescription": tensor_description_pb2.TensorDescription,
    "AllocationDescription": allocation_description_pb2.AllocationDescription,
    "CostGraphDef": cost_graph_pb2.CostGraphDef,
    "GraphDef": graph_pb2.GraphDef,
    "NodeDef": node_def_pb2.NodeDef,
    "AttrValue": attr_value_pb2.AttrValue,
    "TensorShapeProto": tensor_shape_pb2.TensorShapeProto,
    "TensorProto": tensor_pb2.TensorProto,
    "OpLogProto": tfprof_log_pb2.OpLogProto,
    "OpLogEntry": tfprof_log_pb2.OpLogEntry,
    "CodeDef": tfprof_log_pb2.CodeDef,
    "ProfileProto": tfprof_log_pb2.ProfileProto,
    "ProfileNode": tfprof_log_pb2.ProfileNode,
    "ExecProfile": tfprof_log_pb2.ExecProfile,
    "ExecTime": tfprof_log_pb2.ExecTime,
    "ExecMemory": tfprof_log_pb2.ExecMemory,
    "Tuple": tfprof_log_pb2.Tuple,
    "Memory": tfprof_log_pb2.Memory,
    "GraphNodeProto": tfprof_output_pb2.GraphNodeProto,
    "MultiGraphNodeProto": tfprof_output_pb2.MultiGraphNodeProto,
    "AdviceProto": tfprof_output_pb2.AdviceProto,
    "OptionsProto": tfprof_options_pb2.OptionsProto,
    "AdvisorOptionsProto": tfprof_options_pb2.AdvisorOptionsProto,
    "PprofProfile": profile_pb2.Profile,
    "PprofSample": profile_pb2.Sample,
    "PprofLocation": profile_pb2.Location,
    "PprofLine": profile_pb2.Line,
    "PprofFunction": profile_pb2.Function,
    "PprofValueType": profile_pb2.ValueType,
    "PprofLabel": profile_pb2.Label,
}


# ---------------------------------------------------------------- TensorFlow output


@pytest.fixture(scope="module")
def tf_outputs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Everything TensorFlow produces for one traced run of a tiny graph."""
    builder = tf.compat.v1.profiler.ProfileOptionBuilder
    view_options = builder(builder.time_and_memory()).with_empty_output().build()
    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, shape=[2, 2], name="x")
        w = tf.compat.v1.get_variable("w", initializer=tf.ones([2, 2]))
        y = tf.reduce_sum(tf.matmul(x, w), name="y")
        config = tf.compat.v1.ConfigProto(
            graph_options=tf.compat.v1.GraphOptions(build_cost_model=1)
        )
        run_meta = tf.compat.v1.RunMetadata()
        with tf.compat.v1.Session(graph=graph, config=config) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(
                y,
                feed_dict={x: [[1.0, 2.0], [3.0, 4.0]]},
                options=tf.compat.v1.RunOptions(
                    trace_level=tf.compat.v1.RunOptions.FULL_TRACE,
                    output_partition_graphs=True,
                ),
                run_metadata=run_meta,
            )
        profiler = tf.compat.v1.profiler.Profiler(graph=graph)
        profiler.add_step(1, run_meta)
        log_dir: Path = tmp_path_factory.mktemp("oplog")
        tf.compat.v1.profiler.write_op_log(graph, str(log_dir), run_meta=run_meta, add_trace=True)
        yield {
            "run_meta": run_meta,
            "graph_def": graph.as_graph_def(add_shapes=True),
            "profile": tfprof_log_pb2.ProfileProto.FromString(profiler.serialize_to_string()),
            "op_log": tfprof_log_pb2.OpLogProto.FromString((log_dir / "tfprof_log").read_bytes()),
            "scope_view": tf.compat.v1.profiler.profile(
                graph, run_meta=run_meta, cmd="scope", options=view_options
            ),
            "code_view": tf.compat.v1.profiler.profile(
                graph, run_meta=run_meta, cmd="code", options=view_options
            ),
            "advice": tf.compat.v1.profiler.advise(graph, run_meta=run_meta),
        }


def _assert_round_trips_through_ours(tf_msg: Any, ours_cls: Any) -> Any:
    """TensorFlow -> bytes -> ours -> bytes -> TensorFlow must give ``tf_msg`` back,
    even when our unknown fields are dropped (so we know every field)."""
    ours = parse(ours_cls, tf_msg.SerializeToString(), "tf bytes")
    assert parse(ours_cls, tf_msg, "tf message") == ours
    assert type(tf_msg).FromString(ours.SerializeToString()) == tf_msg
    known_only = ours_cls()
    known_only.CopyFrom(ours)
    known_only.DiscardUnknownFields()
    assert type(tf_msg).FromString(known_only.SerializeToString()) == tf_msg
    return ours


def test_run_metadata_from_full_trace(tf_outputs: dict[str, Any]) -> None:
    run_meta = tf_outputs["run_meta"]
    assert run_meta.step_stats.dev_stats and run_meta.cost_graph.node
    assert run_meta.partition_graphs
    ours = _assert_round_trips_through_ours(run_meta, messages.RunMetadata)
    node_names = {n.node_name for d in ours.step_stats.dev_stats for n in d.node_stats}
    assert "MatMul" in node_names


def test_run_metadata_with_function_graphs_and_session_metadata() -> None:
    run_meta = config_pb2.RunMetadata()
    run_meta.session_metadata.name = "session"
    run_meta.session_metadata.version = 7
    graphs = run_meta.function_graphs.add()
    graphs.pre_optimization_graph.node.add(name="a", op="Const")
    graphs.partition_graphs.add().node.add(name="b", op="Identity", input=["a"])
    ours = _assert_round_trips_through_ours(run_meta, messages.RunMetadata)
    assert ours.function_graphs[0].partition_graphs[0].node[0].input == ["a"]


def test_graph_def_with_shapes(tf_outputs: dict[str, Any]) -> None:
    graph_def = tf_outputs["graph_def"]
    assert any("_output_shapes" in node.attr for node in graph_def.node)
    ours = _assert_round_trips_through_ours(graph_def, messages.GraphDef)
    assert ours.versions.producer == graph_def.versions.producer


def test_profile_and_op_log(tf_outputs: dict[str, Any]) -> None:
    profile = tf_outputs["profile"]
    assert profile.nodes and profile.has_trace
    ours = _assert_round_trips_through_ours(profile, messages.ProfileProto)
    assert any(node.execs for node in ours.nodes.values())
    op_log = tf_outputs["op_log"]
    assert op_log.log_entries
    _assert_round_trips_through_ours(op_log, messages.OpLogProto)


def test_views_and_advice(tf_outputs: dict[str, Any]) -> None:
    scope_view = tf_outputs["scope_view"]
    assert isinstance(scope_view, tfprof_output_pb2.GraphNodeProto) and scope_view.children
    _assert_round_trips_through_ours(scope_view, messages.GraphNodeProto)
    code_view = tf_outputs["code_view"]
    assert isinstance(code_view, tfprof_output_pb2.MultiGraphNodeProto)
    _assert_round_trips_through_ours(code_view, messages.MultiGraphNodeProto)
    advice = tf_outputs["advice"]
    assert isinstance(advice, tfprof_output_pb2.AdviceProto) and advice.checkers
    ours = _assert_round_trips_through_ours(advice, messages.AdviceProto)
    assert isinstance(next(iter(ours.checkers.values())), messages.AdviceProto.Checker)


def test_options_proto() -> None:
    options = tfprof_options_pb2.OptionsProto(
        max_depth=10,
        min_bytes=1,
        min_peak_bytes=2,
        min_micros=3,
        min_occurrence=4,
        step=-1,
        order_by="micros",
        account_type_regexes=[".*"],
        show_name_regexes=["a.*"],
        account_displayed_op_only=True,
        select=["micros", "bytes"],
        output="file:outfile=x.txt",
        dump_to_file="",
    )
    _assert_round_trips_through_ours(options, messages.OptionsProto)
    advisor = tfprof_options_pb2.AdvisorOptionsProto()
    advisor.checkers["ExpensiveOperationChecker"].options["k"] = "v"
    _assert_round_trips_through_ours(advisor, messages.AdvisorOptionsProto)


@pytest.mark.parametrize("name", sorted(TF_CLASSES))
def test_populated_message_round_trips_through_tensorflow(name: str) -> None:
    ours = populate(getattr(messages, name)())
    tf_cls = TF_CLASSES[name]
    tf_msg = tf_cls.FromString(ours.SerializeToString())
    if not name.startswith("Pprof"):  # TensorFlow's pprof copy lacks 3 newer fields
        tf_msg.DiscardUnknownFields()  # so TensorFlow must know every field we set
    assert parse(getattr(messages, name), tf_msg, name) == ours


def test_tensorflow_message_of_wrong_type_is_rejected() -> None:
    with pytest.raises(InvalidInputError) as info:
        parse(messages.RunMetadata, graph_pb2.GraphDef(), "run_meta")
    assert str(info.value) == (
        "run_meta: expected a RunMetadata message, got a tensorflow.GraphDef message; "
        "pass it as graph="
    )


# ---------------------------------------------------------------- descriptors


def _field_signature(field: Any) -> tuple[Any, ...]:
    target = field.message_type or field.enum_type
    oneof = field.containing_oneof
    return (
        field.name,
        field.type,
        _is_repeated(field),
        field.has_presence,
        target.name if target is not None else None,
        oneof.name if oneof is not None else None,
    )


def _compare(ours: Any, theirs: Any, superset: bool, seen: set[str]) -> list[str]:
    """Differences between two message descriptors, recursively (by field number)."""
    if ours.full_name in seen:
        return []
    seen.add(ours.full_name)
    problems = []
    our_fields = {f.number: f for f in ours.fields}
    their_fields = {f.number: f for f in theirs.fields}
    for number, their in their_fields.items():
        our = our_fields.get(number)
        if our is None:
            problems.append(f"{ours.full_name}: missing field {number} ({their.name})")
            continue
        if _field_signature(our) != _field_signature(their):
            problems.append(
                f"{ours.full_name}.{our.name}: {_field_signature(our)} != {_field_signature(their)}"
            )
        if our.message_type is not None and their.message_type is not None:
            problems += _compare(our.message_type, their.message_type, superset, seen)
        if our.enum_type is not None and our.enum_type.full_name not in seen:
            seen.add(our.enum_type.full_name)
            our_values = {(v.name, v.number) for v in our.enum_type.values}
            their_values = {(v.name, v.number) for v in their.enum_type.values}
            if our_values != their_values:
                problems.append(f"{our.enum_type.full_name}: {our_values ^ their_values}")
    if not superset:
        for number in our_fields.keys() - their_fields.keys():
            problems.append(f"{ours.full_name}: extra field {number} not in TensorFlow")
    return problems


@pytest.mark.parametrize("name", sorted(TF_CLASSES))
def test_descriptors_match_tensorflow(name: str) -> None:
    ours = getattr(messages, name).DESCRIPTOR
    assert ours.full_name.startswith(("tfprof_lite.tf.", "tfprof_lite.pprof."))
    problems = _compare(ours, TF_CLASSES[name].DESCRIPTOR, name.startswith("Pprof"), set())
    assert not problems, "\n".join(problems)
