"""How ``Profiler(tf.Graph)`` builds its profile: once from bytes, with TensorFlow's
own FLOP values.

The graph and the default op log go to the decoders as the bytes TensorFlow
serialized (no message is parsed only to be serialized again); TensorFlow's
``flops`` functions are called with a tensor look-up that must give exactly
what ``tf.Graph.get_tensor_by_name`` gives, errors included; and the op log
equals the one built through ``ops.get_stats_for_node_def``.
"""

from __future__ import annotations

from typing import Any

import pytest

import tfprof_lite

pytestmark = pytest.mark.tf

tf = pytest.importorskip("tensorflow")
live_models = pytest.importorskip("tests.integration.live_models")

from tfprof_lite.capture import oplog, registered_flops  # noqa: E402
from tfprof_lite.proto import messages as pb  # noqa: E402


def _outcome(fn: Any, name: Any) -> Any:
    try:
        return ("ok", fn(name))
    except Exception as err:  # noqa: BLE001 - the error itself is compared
        return (type(err), str(err))


@pytest.mark.parametrize("model", sorted(live_models.LIVE_MODELS))
def test_tensor_lookup_is_the_graphs(model: str) -> None:
    graph = live_models.LIVE_MODELS[model]().graph
    lookup = registered_flops.TensorLookup(graph)
    names: list[Any] = [t.name for op in graph.get_operations() for t in op.outputs]
    first = graph.get_operations()[0].name
    names += [
        f"{first}:99",
        f"{first}:-1",
        f"{first}: 0",
        f"{first}:+0",
        f"{first}:00",
        f"{first}:0:0",
        f"{first}:٣",
        first,
        "missing:0",
        ":0",
        "",
        b"bytes:0",
        None,
    ]
    for name in names:
        got, want = (
            _outcome(lookup.get_tensor_by_name, name),
            _outcome(graph.get_tensor_by_name, name),
        )
        assert got[0] == want[0] and (got[1] is want[1] or got[1] == want[1]), name
    assert lookup.get_operations() == graph.get_operations()


def _registry_flops(graph: Any) -> dict[str, tuple[int, bool]]:
    """Every op's FLOPs through ``ops.get_stats_for_node_def`` (TensorFlow's way)."""
    builder = oplog.OpLogBuilder(graph, add_trace=False)
    out = {}
    for op in graph.get_operations():
        function = builder._flops_types(op.type)
        if function is not None:
            out[op.name] = builder._flops(op, registered_flops.registry_call)
    return out


@pytest.mark.parametrize("model", sorted(live_models.LIVE_MODELS))
def test_flops_equal_the_registry_path(model: str) -> None:
    graph = live_models.LIVE_MODELS[model]().graph
    builder = oplog.OpLogBuilder(graph, add_trace=False)
    direct = {
        op.name: builder._flops(op, builder._flops_types(op.type))
        for op in graph.get_operations()
        if builder._flops_types(op.type) is not None
    }
    assert direct == _registry_flops(graph)
    assert any(value for value, _ in direct.values())


def test_live_graph_decoded_once_from_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """No GraphDef or OpLogProto message of ours is parsed or serialized for
    ``Profiler(graph)`` and its steps: the bytes go to the decoders as they are."""
    model = live_models.LIVE_MODELS["mlp"]()
    calls: list[str] = []

    def counting(cls: Any, kind: str) -> Any:
        original = cls.FromString

        def from_string(data: bytes) -> Any:
            calls.append(kind)
            return original(data)

        return from_string

    monkeypatch.setattr(pb.GraphDef, "FromString", counting(pb.GraphDef, "GraphDef"))
    monkeypatch.setattr(pb.OpLogProto, "FromString", counting(pb.OpLogProto, "OpLogProto"))
    prof = tfprof_lite.Profiler(model.graph)
    prof.add_step(0, model.traced_step())
    model.close()
    assert calls == []
    assert len(prof.model.names) >= len(model.graph.get_operations())
    assert prof.model.has_trace


@pytest.mark.parametrize("model", sorted(live_models.LIVE_MODELS))
def test_op_log_columns_equal_the_decoded_op_log(
    model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The columns the builder hands the model equal those both decoders read
    from the same op log serialized (call stacks, their order and sharing,
    FLOPs, extra types, the string table)."""
    from tfprof_lite.proto import graphs

    monkeypatch.delenv("TFPROF_LITE_PURE_PYTHON", raising=False)  # both decoders here

    graph = live_models.LIVE_MODELS[model]().graph
    cols = oplog.OpLogBuilder(graph).build_columns()
    wire = oplog.OpLogBuilder(graph).build().SerializeToString()
    pure = graphs.op_log_columns_from_message(pb.OpLogProto.FromString(wire))
    decoded = [pure]
    if graphs.native_graph_available():
        native = graphs.native_op_log_columns(wire)
        assert native is not None
        decoded.append(native)
    for other in decoded:
        assert cols.names == other.names
        assert cols.float_ops == other.float_ops
        assert cols.types == other.types
        assert cols.trace_ids == other.trace_ids
        assert cols.traces == other.traces
        assert cols.id_to_string == other.id_to_string
    assert cols.traces and any(cols.float_ops)


def _count_resolutions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the ops whose call stacks get resolved from now on, in order."""
    from tfprof_lite.capture.traces import TraceEncoder

    resolved: list[str] = []
    original = TraceEncoder.code_def

    def counting(self: TraceEncoder, op: Any, op_type: str) -> bytes:
        resolved.append(op.name)
        return original(self, op, op_type)

    monkeypatch.setattr(TraceEncoder, "code_def", counting)
    return resolved


def test_call_stacks_resolved_on_first_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Building the profile resolves one op's call stack (enough to know the graph
    has some); the first read of ``traces`` resolves the others, in graph order
    (the string ids TensorFlow's op log would give)."""
    from tfprof_lite.model import decode

    model = live_models.LIVE_MODELS["mlp"]()
    model.close()
    resolved = _count_resolutions(monkeypatch)
    prof = tfprof_lite.Profiler(model.graph)
    assert prof.model.has_trace
    assert len(resolved) == 1
    names = [op.name for op in model.graph.get_operations()]
    traces = prof.model.traces
    assert resolved == names
    eager = oplog.OpLogBuilder(model.graph).build_columns()
    assert prof.model.id_to_string == eager.id_to_string
    stacks = decode.code_stacks(eager.traces)
    want = {name: stacks[t] for name, t in zip(eager.names, eager.trace_ids) if t >= 0}
    assert {n: traces[prof.model.index[n]] for n in want} == want


def test_imported_graph_has_no_call_stacks() -> None:
    """Ops imported from a GraphDef have no call stack: nothing is left pending."""
    graph = live_models.LIVE_MODELS["mlp"]().graph
    imported = tf.Graph()
    with imported.as_default():
        tf.compat.v1.import_graph_def(graph.as_graph_def(), name="")
    prof = tfprof_lite.Profiler(imported)
    assert not prof.model.has_trace
    assert all(trace is None for trace in prof.model.traces)


def _edge_graph() -> Any:
    """Ops of the computed kinds on fully, partly and not known shapes."""
    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        known = tf1.placeholder(tf.float32, [3, 5], name="known")
        batch = tf1.placeholder(tf.float32, [None, 5], name="batch")
        anything = tf1.placeholder(tf.float32, None, name="anything")
        weights = tf1.placeholder(tf.float32, [5, 5], name="weights")
        empty = tf1.placeholder(tf.float32, [0, 5], name="empty")
        for name, x in (("known", known), ("batch", batch), ("any", anything), ("empty", empty)):
            with tf1.name_scope(name):
                tf.matmul(x, weights)
                tf.matmul(weights, x, transpose_b=True)
                tf.matmul(x, x, transpose_a=True)
                tf.add(x, 1.0)
                tf.square(x)
                tf.math.squared_difference(x, x)
                tf.math.rsqrt(x)
                tf.nn.softmax(x)
                tf.nn.l2_loss(x)
                tf.reduce_sum(x, axis=0)
                tf.reduce_mean(x)
                tf.argmax(x, axis=1)
        with tf.control_dependencies([known]):
            tf.add(known, known, name="with_control")
    return graph


@pytest.mark.parametrize("model", [*sorted(live_models.LIVE_MODELS), "edge"])
def test_computed_flops_are_the_registered_functions(model: str) -> None:
    """Every op of a kind computed from its tensors gets what TensorFlow's own
    function gives (value, no statistic, or a missing shape), on every op, not
    only after a kind's first op agreed."""
    from tfprof_lite.capture.notes import tf_deprecations_silenced

    graph = _edge_graph() if model == "edge" else live_models.LIVE_MODELS[model]().graph
    flops = registered_flops.RegisteredFlops(graph)
    known = registered_flops._known_functions()
    outcomes = set()
    seen = 0
    with tf_deprecations_silenced():
        for op in graph.get_operations():
            function = flops.function(op.type)
            if function not in known:
                continue
            kind, args = known[function]
            want = flops.call(op, function)
            assert registered_flops._outcome(kind, op, args) == want, op.name
            outcomes.add(want[1])
            seen += 1
    assert seen
    if model == "edge":
        assert outcomes == {False, True}  # values and missing shapes both checked


def test_a_kind_that_disagrees_on_its_first_op_is_not_used() -> None:
    """A computed kind is used only after its first op gave TensorFlow's answer."""
    graph = live_models.LIVE_MODELS["mlp"]().graph
    matmuls = [op for op in graph.get_operations() if op.type == "MatMul"]
    flops = registered_flops.RegisteredFlops(graph)
    function = flops.function("MatMul")
    flops._unchecked[function] = (lambda op, args: 7, ())
    values = [flops.value(op, function) for op in matmuls]
    assert function not in flops._checked
    assert all(value[0] != 7 for value in values)
    agreeing = registered_flops.RegisteredFlops(graph)
    assert [agreeing.value(op, function) for op in matmuls] == values
    assert function in agreeing._checked


def _shapes_graph() -> Any:
    """Outputs of every kind of static shape, several outputs, none."""
    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 300, 0], name="x")
        tf1.placeholder(tf.float32, None, name="unknown_rank")
        tf.constant(1.0, name="scalar")
        tf.split(tf1.placeholder(tf.float32, [4, 6]), 2, axis=1, name="split")
        tf.unique(tf1.placeholder(tf.int32, [None]), name="unique")
        tf.identity(x, name="same_as_x")
        tf.no_op(name="nothing")
        tf1.placeholder(tf.float32, [2**40, 3], name="large")
    return graph


def _decoded_graphs(data: bytes) -> list[Any]:
    from tfprof_lite.proto import graphs

    decoded = [graphs.graph_columns_from_message(pb.GraphDef.FromString(data))]
    if graphs.native_graph_available():
        native = graphs.native_graph_columns(data)
        assert native is not None  # TensorFlow's graphs (functions, types) are taken
        decoded.append(native)
    return decoded


@pytest.mark.parametrize("pure", [False, True])
@pytest.mark.parametrize("model", [*sorted(live_models.LIVE_MODELS), "edge", "shapes"])
def test_graph_columns_equal_the_decoded_graph_def(
    model: str, pure: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The node columns of a live graph equal those both decoders read from
    ``as_graph_def(add_shapes=True)`` serialized, ``_output_shapes`` bytes included."""
    from tfprof_lite.capture import graphdef

    builders = {"edge": _edge_graph, "shapes": _shapes_graph}
    graph = builders[model]() if model in builders else live_models.LIVE_MODELS[model]().graph
    monkeypatch.delenv("TFPROF_LITE_PURE_PYTHON", raising=False)
    wire = graph.as_graph_def(add_shapes=True).SerializeToString()
    decoded = _decoded_graphs(wire)
    if pure:
        monkeypatch.setenv("TFPROF_LITE_PURE_PYTHON", "1")

    def tensorflows_way(graph: Any) -> bytes:
        raise AssertionError("the GraphDef was taken TensorFlow's way")

    monkeypatch.setattr(graphdef, "graph_def_bytes", tensorflows_way)
    got = graphdef.graph_columns(graph)
    assert any("_output_shapes" in attrs for attrs in got.attrs)
    for other in decoded:
        assert got.names == other.names
        assert got.ops == other.ops
        assert got.inputs == other.inputs
        assert got.attrs == other.attrs
        assert got.shapes == other.shapes
        assert got.output_shapes == other.output_shapes
        assert got.str_attrs == other.str_attrs


def test_graph_columns_append_to_an_output_shapes_attribute() -> None:
    """A node that already has ``_output_shapes`` gets TensorFlow's shapes appended
    to it, as ``as_graph_def(add_shapes=True)`` does."""
    from tensorflow.core.framework import attr_value_pb2

    from tfprof_lite.capture import graphdef

    graph = _shapes_graph()
    preset = attr_value_pb2.AttrValue()
    preset.list.shape.add().unknown_rank = True
    graph.get_operation_by_name("scalar")._set_attr("_output_shapes", preset)
    got = graphdef.graph_columns(graph)
    want = _decoded_graphs(graph.as_graph_def(add_shapes=True).SerializeToString())[-1]
    index = got.names.index("scalar")
    assert got.output_shapes[index] == {0: [], 1: [1]}
    assert got.attrs == want.attrs and got.output_shapes == want.output_shapes


def test_add_step_leaves_call_stacks_pending(monkeypatch: pytest.MonkeyPatch) -> None:
    """A step on a graph that got no op since ``Profiler(graph)`` (its op log only
    refines FLOPs) resolves no call stack; the first read after it gives the
    stacks and string ids of the eager op log."""
    from tfprof_lite.model import decode

    model = live_models.LIVE_MODELS["mlp"]()
    resolved = _count_resolutions(monkeypatch)
    try:
        prof = tfprof_lite.Profiler(model.graph)
        for step in range(2):
            prof.add_step(step, model.traced_step())
    finally:
        model.close()
    assert prof.model.traces_pending
    assert len(resolved) == 1
    assert prof.model.has_trace and len(resolved) == 1
    traces = prof.model.traces
    assert resolved == [op.name for op in model.graph.get_operations()]
    eager = oplog.OpLogBuilder(model.graph).build_columns()
    assert prof.model.id_to_string == eager.id_to_string
    stacks = decode.code_stacks(eager.traces)
    want = {name: stacks[t] for name, t in zip(eager.names, eager.trace_ids) if t >= 0}
    assert {n: traces[prof.model.index[n]] for n in want} == want
    assert all(traces[nid] is None for name, nid in prof.model.index.items() if name not in want)
