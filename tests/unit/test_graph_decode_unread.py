"""The native GraphDef decoder on the fields the model does not read.

TensorFlow 2.21 writes a function ``library`` for ``tf.cond``, ``tf.while_loop``
and ``dynamic_rnn`` (control flow v2) and sets a node's ``experimental_type``
(a FullTypeDef) on ``Shape``-like ops; a node may carry
``experimental_debug_info`` and the graph ``debug_info``. tfprof's graph is the
GraphDef's ``node`` list only: the nodes of function bodies are no graph nodes
(their inputs, ``node:output:0``, would not even parse as graph inputs). The
native decoder takes such graphs and must give the pure path's columns;
protobuf checks those fields at their own nesting depth, so bytes it rejects
are declined (never accepted), and a seeded mutation loop checks both on a
graph holding all of them. Real TensorFlow graphs are in
``tests/integration/test_graph_functions.py``.
"""

from __future__ import annotations

import random

import pytest

from tests.unit.graph_decode_cases import (
    NATIVE_GRAPH_TESTS,
    _decline_or_agree,
    _hand_graph,
    _mutation_count,
    _mutations,
    _names_agree,
    _pure_graph,
    assert_same_graph,
)
from tfprof_lite.proto import graphs
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto.wire import len_field

pytestmark = NATIVE_GRAPH_TESTS

# FullTypeId values (TensorFlow's full_type.proto).
TFT_PRODUCT, TFT_TENSOR, TFT_SHAPE_TENSOR, TFT_INT32, TFT_FLOAT = 3, 1000, 1005, 207, 210


def _full_type(node: object, *inner: int) -> None:
    """``TFT_PRODUCT[inner[0][inner[1][...]]]`` as TensorFlow sets it on ``Shape``."""
    product = node.experimental_type  # type: ignore[attr-defined]
    product.type_id = TFT_PRODUCT
    cur = product
    for type_id in inner:
        cur = cur.args.add(type_id=type_id)


def _function(lib: object, name: str, body_input: str) -> None:
    """A function of a cond branch or while body, as control flow v2 writes it."""
    fn = lib.function.add()  # type: ignore[attr-defined]
    fn.signature.name = name
    fn.signature.input_arg.add(name="x", type=1)
    fn.signature.output_arg.add(name="identity", type=1)
    fn.attr["_construction_context"].s = b"kEagerRuntime"
    fn.arg_attr[0].attr["_output_shapes"].list.shape.add().dim.add(size=-1)
    mul = fn.node_def.add(name="mul", op="Mul", input=["x", body_input])
    mul.attr["T"].type = 1
    shape = fn.node_def.add(name="Shape", op="Shape", input=["mul:z:0"])
    _full_type(shape, TFT_SHAPE_TENSOR, TFT_INT32)
    fn.node_def.add(name="identity", op="Identity", input=["mul:z:0", "^Shape"])
    call = fn.node_def.add(name="while", op="StatelessWhile", input=["x"])  # a nested loop
    call.attr["body"].func.name = "while_body_5"
    call.attr["body"].func.attr["T"].list.type.append(1)
    fn.ret["identity"] = "identity:output:0"
    fn.control_ret["Shape"] = "Shape"


def function_graph() -> pb.GraphDef:
    """A GraphDef with every field the decoder leaves to protobuf: a library
    (cond branches, a while body, a gradient), types, debug info."""
    g = _hand_graph()
    x = g.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = 1
    cond = g.node.add(name="cond", op="StatelessIf", input=["x", "x:0"])
    cond.attr["then_branch"].func.name = "cond_true_12"
    cond.attr["else_branch"].func.name = "cond_false_13"
    _full_type(cond, TFT_TENSOR, TFT_FLOAT)
    loop = g.node.add(name="while", op="StatelessWhile", input=["x"])
    loop.attr["body"].func.name = "while_body_5"
    loop.attr["T"].list.type.extend([3, 1])
    loop.experimental_debug_info.original_node_names.append("while/body")
    loop.experimental_debug_info.original_func_names.append("while_body_5")
    shape = g.node.add(name="Shape", op="Shape", input=["while:1"])
    _full_type(shape, TFT_SHAPE_TENSOR, TFT_INT32)
    shape.experimental_type.args[0].s = "named"  # the ``attr`` oneof, string
    other = g.node.add(name="Shape_1", op="Shape", input=["^Shape"])
    _full_type(other, TFT_SHAPE_TENSOR, TFT_INT32)
    other.experimental_type.args[0].i = -5  # the ``attr`` oneof, int64
    _function(g.library, "cond_true_12", "x")
    _function(g.library, "cond_false_13", "x")
    _function(g.library, "while_body_5", "x:0")
    g.library.gradient.add(function_name="cond_true_12", gradient_func="grad_1")
    g.library.registered_gradients.add(gradient_func="g", registered_op_type="Op")
    g.debug_info.files.append("model.py")
    trace = g.debug_info.traces["while"]
    trace.file_line_cols.add(file_index=0, line=3, col=1, func="build")
    return g


def function_graph_bytes() -> bytes:
    """:func:`function_graph` serialized, map entries in key order (seeds of the
    mutation loops are the same bytes in every run)."""
    return bytes(function_graph().SerializeToString(deterministic=True))


def _node(*fields: bytes) -> bytes:
    return len_field(1, len_field(1, b"n") + len_field(2, b"Shape") + b"".join(fields))


def _nested_type(depth: int) -> bytes:
    """A FullTypeDef ``depth`` args deep."""
    value = b"\x08\xe8\x07"
    for _ in range(depth):
        value = b"\x08\x03" + len_field(2, value)
    return value


def test_function_graph_equal_to_pure() -> None:
    raw = function_graph_bytes()
    native, pure = graphs.native_graph_columns(raw), _pure_graph(raw)
    assert native is not None and pure is not None
    assert_same_graph(native, pure)
    # The graph's nodes only: no function body node ("mul", "identity") is one.
    assert native.names[-5:] == ["x", "cond", "while", "Shape", "Shape_1"]
    assert "mul" not in native.names and "identity" not in native.names
    assert native.inputs[-2] == {0: "while"}
    names = graphs.native_graph_names(raw)
    assert names is not None and names.with_details().names == native.names
    assert graphs.native_graph_check(raw) == len(native.names)
    # Its library and types are all plain: only the debug info is left to protobuf.
    wrapped = pb.GraphDef.FromString(graphs._native().graph(raw)[8])
    assert not wrapped.HasField("library") and wrapped.HasField("debug_info")
    assert [n.name for n in wrapped.node if n.HasField("experimental_debug_info")] == [""]
    assert not any(n.HasField("experimental_type") for n in wrapped.node)


def test_other_libraries_are_left_to_protobuf() -> None:
    """A library the decoder does not read as plain (here a function's node with
    a ``func`` attribute calling with a ``func``) goes to protobuf as it is."""
    g = function_graph()
    node = g.library.function[0].node_def.add(name="call", op="PartitionedCall")
    node.attr["f"].func.name = "cond_false_13"
    node.attr["f"].func.attr["g"].func.name = "while_body_5"
    raw = g.SerializeToString()
    parts = graphs._native().graph(raw)
    assert parts is not None
    assert pb.GraphDef.FromString(parts[8]).library == g.library
    assert_same_graph(graphs.native_graph_columns(raw), _pure_graph(raw))  # type: ignore[arg-type]


def test_plain_types_need_no_protobuf_check() -> None:
    """TensorFlow's usual FullTypeDefs are checked natively: nothing is wrapped."""
    g = pb.GraphDef()
    for i in range(3):
        _full_type(g.node.add(name=f"s{i}", op="Shape"), TFT_SHAPE_TENSOR, TFT_INT32)
    parts = graphs._native().graph(g.SerializeToString())
    assert parts is not None and parts[0] == ["s0", "s1", "s2"] and parts[8] == b""


def test_other_types_are_checked_once() -> None:
    """A FullTypeDef with an unknown field goes to protobuf, once per distinct value."""
    odd = _nested_type(1) + b"\x28\x01"  # field 5: unknown, which protobuf keeps
    raw = _node(len_field(7, odd)) * 3 + _node(len_field(7, _nested_type(20)))
    parts = graphs._native().graph(raw)
    assert parts is not None and len(parts[0]) == 4
    wrapped = pb.GraphDef.FromString(parts[8])
    assert len(wrapped.node) == 2
    assert wrapped.node[0].experimental_type.SerializeToString() == odd
    assert_same_graph(graphs.native_graph_columns(raw), _pure_graph(raw))  # type: ignore[arg-type]


def _accepted() -> list[tuple[str, bytes]]:
    return [
        ("empty library", len_field(2, b"") + _node()),
        ("type at depth 98", _node(len_field(7, _nested_type(98)))),
        ("library of a group", len_field(2, b"\x0b\x0c") + _node()),
        ("two type fields", _node(len_field(7, _nested_type(1)), len_field(7, b"\x20\x02"))),
        ("type id as a huge varint", _node(len_field(7, b"\x08" + b"\xff" * 9 + b"\x01"))),
        ("proto2 debug info with bad UTF-8", len_field(5, len_field(1, b"\xff")) + _node()),
        ("two libraries", len_field(2, len_field(2, b"")) + _node() + len_field(2, b"\x1a\x00")),
    ]


@pytest.mark.parametrize("what,raw", _accepted(), ids=lambda x: str(x)[:30])
def test_unusual_unread_fields_taken(what: str, raw: bytes) -> None:
    native, pure = graphs.native_graph_columns(raw), _pure_graph(raw)
    assert native is not None and pure is not None, what
    assert_same_graph(native, pure)


def _rejected() -> list[tuple[str, bytes]]:
    bad = b"\xed\xa0\x80"  # a surrogate: invalid UTF-8
    body = len_field(1, b"mul") + len_field(3, bad)
    return [
        ("type too deep", _node(len_field(7, _nested_type(99)))),
        ("type string not UTF-8", _node(len_field(7, len_field(3, bad)))),
        ("nested type string not UTF-8", _node(len_field(7, len_field(2, len_field(3, bad))))),
        ("type cut short", _node(len_field(7, b"\x12\x05\x08"))),
        ("debug info name not UTF-8", _node(len_field(6, len_field(2, bad)))),
        ("function body input not UTF-8", len_field(2, len_field(1, len_field(3, body))) + _node()),
        ("library cut short", len_field(2, b"\x0a\x09\x0a\x03") + _node()),
    ]


@pytest.mark.parametrize("what,raw", _rejected(), ids=lambda x: str(x)[:30])
def test_unread_fields_protobuf_rejects_decline(what: str, raw: bytes) -> None:
    assert _pure_graph(raw) is None, what
    assert graphs.native_graph_columns(raw) is None, what
    assert graphs.native_graph_names(raw) is None, what
    assert graphs.native_graph_check(raw) is None, what


def test_unread_field_of_another_wire_type_declines() -> None:
    """A known field with another wire type is declined (protobuf keeps it as an
    unknown field; the pure path then reads the graph)."""
    raw = b"\x10\x01" + _node()
    assert _pure_graph(raw) is not None
    assert graphs.native_graph_columns(raw) is None


def test_mutated_function_graphs_decline_or_agree() -> None:
    seeds = [function_graph_bytes()]
    # Declines are rare here: the decoder reads nearly all that protobuf takes.
    _decline_or_agree(
        seeds, 20261127, graphs.native_graph_columns, _pure_graph, assert_same_graph, 5
    )


def test_names_mode_on_function_graphs() -> None:
    raw = function_graph_bytes()
    rng = random.Random(28)
    assert _names_agree(raw)
    taken = [_names_agree(_mutations(raw, rng)) for _ in range(_mutation_count() // 2)]
    assert 100 < sum(taken) < len(taken) - 100
