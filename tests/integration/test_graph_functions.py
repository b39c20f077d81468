"""Real TensorFlow 2.21 graphs with a function library and typed nodes go through
the native GraphDef decoder.

TensorFlow 2.21 (control flow v2) writes ``tf.cond``, ``tf.while_loop`` and
``dynamic_rnn`` as functions in the GraphDef's ``library`` and sets
``experimental_type`` on ``Shape``-like ops. The native decoder must take these
graphs (not decline them to the slow pure path), on both ``Profiler(tf.Graph)``
and ``Profiler(graph_def, op_log)``, and give the pure path's columns; the
model's nodes are the GraphDef's ``node`` list, never the nodes of function
bodies (as in TensorFlow's tfprof).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import tfprof_lite
from tests.mutations import attr_values
from tests.unit.graph_decode_cases import _MODEL_COLUMNS
from tfprof_lite.proto import graphs
from tfprof_lite.proto import messages as pb

pytestmark = [
    pytest.mark.tf,
    pytest.mark.skipif(
        not graphs.native_graph_available(), reason="the native graph decoder is not built"
    ),
    pytest.mark.usefixtures("native_in_reach"),
]

tf = pytest.importorskip("tensorflow")
live_models = pytest.importorskip("tests.integration.live_models")

tf1 = tf.compat.v1


def _while_graph() -> Any:
    """An explicit ``tf.while_loop`` inside a ``tf.cond`` (nested functions)."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 8], name="x")
        flag = tf1.placeholder(tf.bool, [], name="flag")
        w = tf1.get_variable("w", [8, 8])

        def loop() -> Any:
            _, out = tf.while_loop(
                lambda i, h: i < tf.shape(x)[0], lambda i, h: (i + 1, tf.tanh(h @ w)), (0, x)
            )
            return out

        out = tf.cond(flag, loop, lambda: x @ w)
        tf.reduce_sum(tf.reshape(out, tf.shape(x)), name="loss")
    return graph


def _graphs() -> Iterator[tuple[str, Any]]:
    for name in sorted(live_models.LIVE_MODELS):
        model = live_models.LIVE_MODELS[name]()
        model.close()
        yield name, model.graph
    yield "while_in_cond", _while_graph()


@pytest.fixture(scope="module")
def tf_graphs() -> dict[str, Any]:
    return dict(_graphs())


def _serialized(graph: Any) -> bytes:
    return bytes(graph.as_graph_def(add_shapes=True).SerializeToString())


def _same_columns(native: graphs.GraphColumns, pure: graphs.GraphColumns) -> None:
    for column in ("names", "ops", "inputs", "shapes", "output_shapes", "str_attrs"):
        assert getattr(native, column) == getattr(pure, column), column
    assert [list(d.items()) for d in native.src_output] == [
        list(d.items()) for d in pure.src_output
    ]
    assert [attr_values(a) for a in native.attrs] == [attr_values(a) for a in pure.attrs]


@pytest.mark.parametrize("name", [*sorted(live_models.LIVE_MODELS), "while_in_cond"])
def test_native_takes_real_graphs(name: str, tf_graphs: dict[str, Any]) -> None:
    raw = _serialized(tf_graphs[name])
    message = pb.GraphDef.FromString(raw)
    typed = [n.name for n in message.node if n.HasField("experimental_type")]
    assert typed, "TensorFlow 2.21 sets experimental_type on some nodes"
    if name in ("cond", "rnn", "while_in_cond"):
        assert message.library.function, "control flow v2 writes functions"
    native = graphs.native_graph_columns(raw)
    assert native is not None, "the native decoder declined"
    pure = graphs.graph_columns_from_message(message)
    _same_columns(native, pure)
    assert native.names == [n.name for n in message.node]
    body = {n.name for f in message.library.function for n in f.node_def}
    assert not body & (set(native.names) - {n.name for n in message.node})
    # TensorFlow's libraries and types are read as plain: not left to protobuf.
    wrapped = pb.GraphDef.FromString(graphs._native().graph(raw)[8])
    assert not wrapped.HasField("library")
    assert not any(n.HasField("experimental_type") for n in wrapped.node)
    lean = graphs.native_graph_names(raw)
    assert lean is not None
    _same_columns(lean.with_details(), pure)


def _no_pure_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(message: Any) -> Any:
        raise AssertionError("the GraphDef went to the pure-Python decoder")

    monkeypatch.setattr(graphs, "graph_columns_from_message", refuse)


def _state(profiler: Any) -> dict[str, Any]:
    model = profiler.model
    state = {name: getattr(model, name) for name in _MODEL_COLUMNS}
    state["attrs"] = [attr_values(a) for a in model.attrs]
    state["traces"] = model.traces
    return state


@pytest.mark.parametrize("name", ["cond", "rnn", "while_in_cond"])
def test_profiler_of_a_graph_goes_native(
    name: str, tf_graphs: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Profiler(tf.Graph)`` and ``Profiler(graph_def, op_log)``: no pure decode,
    and the model equals the pure path's."""
    graph = tf_graphs[name]
    raw = _serialized(graph)
    with monkeypatch.context() as patched:
        _no_pure_graph(patched)
        live = _state(tfprof_lite.Profiler(graph))
        given = _state(tfprof_lite.Profiler(raw, op_log=_op_log(graph)))
    monkeypatch.setenv("TFPROF_LITE_PURE_PYTHON", "1")
    assert live == _state(tfprof_lite.Profiler(graph))
    assert given == _state(tfprof_lite.Profiler(raw, op_log=_op_log(graph)))
    assert live["names"] == given["names"] == [n.name for n in pb.GraphDef.FromString(raw).node]


def _op_log(graph: Any) -> bytes:
    from tensorflow.python.profiler import tfprof_logger

    log = tfprof_logger.merge_default_with_oplog(graph, add_trace=True)
    return bytes(log.SerializeToString())
