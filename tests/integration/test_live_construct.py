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

from tfprof_lite.capture import oplog  # noqa: E402
from tfprof_lite.proto import messages as pb  # noqa: E402


def _outcome(fn: Any, name: Any) -> Any:
    try:
        return ("ok", fn(name))
    except Exception as err:  # noqa: BLE001 - the error itself is compared
        return (type(err), str(err))


@pytest.mark.parametrize("model", sorted(live_models.LIVE_MODELS))
def test_tensor_lookup_is_the_graphs(model: str) -> None:
    graph = live_models.LIVE_MODELS[model]().graph
    lookup = oplog._TensorLookup(graph)
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
            out[op.name] = builder._flops(op, oplog._registry_call)
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


def test_call_stacks_resolved_on_first_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Building the profile resolves one op's call stack (enough to know the graph
    has some); the first read of ``traces`` resolves the others, in graph order
    (the string ids TensorFlow's op log would give)."""
    from tfprof_lite.capture.traces import TraceEncoder
    from tfprof_lite.model import decode

    model = live_models.LIVE_MODELS["mlp"]()
    model.close()
    resolved: list[str] = []
    original = TraceEncoder.code_def

    def counting(self: TraceEncoder, op: Any, op_type: str) -> bytes:
        resolved.append(op.name)
        return original(self, op, op_type)

    monkeypatch.setattr(TraceEncoder, "code_def", counting)
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
