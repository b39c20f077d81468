"""Inputs and checks shared by the tests of the GraphDef / op log decoders
(``test_graph_decode.py``, ``test_graph_decode_model.py``,
``test_graph_decode_unread.py`` and the sanitizer runs): hand-built GraphDef and op
log messages that reach every field the decoders read, the hand-made cases' bytes,
the pure-Python walks of protobuf's parse, the column comparisons, the seeded
mutation loop, the ``graph_details`` masks, the model columns compared and the
random arguments of ``merge_op_log``."""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from typing import Any

import pytest

import tests.hand_cases as hc
from tests.mutations import INSERTS, OVERWRITES, attr_values, mutate
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.model.decode import code_stacks
from tfprof_lite.proto import graphs
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto.graphs import GraphColumns, OpLogColumns

I64_MIN, I64_MAX = -(2**63), 2**63 - 1

#: The marks of the native graph decoder's own test modules: skipped where it is
#: not built (failing under CI=true), run with it in reach.
NATIVE_GRAPH_TESTS = [
    pytest.mark.skipif(
        not graphs.native_graph_available() and os.environ.get("CI") != "true",
        reason="the native graph decoder is not built (python setup.py build_ext --inplace)",
    ),
    pytest.mark.usefixtures("native_in_reach"),
]


def assert_same_graph(native: GraphColumns, pure: GraphColumns) -> None:
    """Column by column; AttrValue bytes compared as messages."""
    assert native.names == pure.names
    assert native.ops == pure.ops
    assert native.inputs == pure.inputs
    assert [list(d.items()) for d in native.src_output] == [
        list(d.items()) for d in pure.src_output
    ]
    assert native.shapes == pure.shapes
    assert native.output_shapes == pure.output_shapes
    assert native.str_attrs == pure.str_attrs
    assert [attr_values(a) for a in native.attrs] == [attr_values(a) for a in pure.attrs]


def assert_same_log(native: OpLogColumns, pure: OpLogColumns) -> None:
    """Entry by entry; call stacks compared by their frames."""
    assert native.names == pure.names
    assert native.float_ops == pure.float_ops
    assert native.types == pure.types
    assert native.id_to_string == pure.id_to_string
    stacks_n, stacks_p = code_stacks(native.traces), code_stacks(pure.traces)
    assert [stacks_n[t] if t >= 0 else None for t in native.trace_ids] == [
        stacks_p[t] if t >= 0 else None for t in pure.trace_ids
    ]


def _pure_graph(raw: bytes) -> GraphColumns | None:
    """The pure columns, or None when protobuf rejects the bytes or an input is malformed."""
    try:
        message = pb.GraphDef.FromString(raw)
    except Exception:  # noqa: BLE001 - protobuf's DecodeError
        return None
    try:
        return graphs.graph_columns_from_message(message)
    except InvalidInputError:
        return None


def _pure_log(raw: bytes) -> OpLogColumns | None:
    try:
        message = pb.OpLogProto.FromString(raw)
    except Exception:  # noqa: BLE001 - protobuf's DecodeError
        return None
    return graphs.op_log_columns_from_message(message)


def _shape(*dims: int, unknown: bool = False) -> Any:
    out = pb.TensorShapeProto(unknown_rank=unknown)
    for i, d in enumerate(dims):
        out.dim.add(size=d, name=f"d{i}" if i % 2 else "")
    return out


def _hand_graph() -> Any:
    """A GraphDef reaching every field the decoders read."""
    g = pb.GraphDef()
    g.versions.producer = 1234
    g.versions.min_consumer = 3
    g.versions.bad_consumers.extend([5, -7])
    a = g.node.add(name="a", op="Const", device="/cpu:0")
    a.attr["shape"].shape.CopyFrom(_shape())  # known-rank scalar -> [1]
    a.attr["value"].i = I64_MIN
    a.attr["_output_shapes"].list.shape.add().CopyFrom(_shape(2, 3))
    b = g.node.add(name="ünï/b", op="Ωp", input=["a", "a:1", "^a", "^a:12", "a:0"])
    b.attr["shape"].shape.CopyFrom(_shape(unknown=True))  # unknown rank -> []
    b.attr["data_format"].s = b"NC\xffHW"  # invalid UTF-8, decoded with replacement
    b.attr["_output_shapes"].list.shape.add().CopyFrom(_shape(2, 3))
    c = g.node.add(name="c", op="Conv2D", input=["ünï/b:3"])
    c.attr["shape"].type = 1  # not a shape value -> no shape
    c.attr["data_format"].i = 4  # not a string value -> no str attr
    c.attr[""].CopyFrom(pb.AttrValue())  # empty value, empty key
    ls = c.attr["_output_shapes"].list
    ls.i.extend([1, -2])
    ls.s.append(b"x")
    ls.shape.add().CopyFrom(_shape(-1, I64_MAX, 0))
    ls.shape.add().CopyFrom(_shape(unknown=True))
    ls.shape.add().CopyFrom(_shape())
    d = g.node.add(name="d", op="Const")
    d.attr["_output_shapes"].list.SetInParent()  # a list without shapes -> {}
    d.attr["shape"].shape.CopyFrom(_shape(4, 5, 6))
    d.attr["dtype"].func.name = "f"
    d.attr["dtype"].func.attr["inner"].s = b"v"
    t = d.attr["value"].tensor  # every field of a tensor the decoder reads as plain
    t.dtype, t.version_number, t.tensor_content = 1, 7, b"\x00\xff"
    t.tensor_shape.CopyFrom(_shape(2, -1))
    t.float_val.extend([1.5, -0.0])
    t.double_val.append(2.5)
    t.int_val.extend([-1, 2**31 - 1])
    t.string_val.extend([b"", b"\xff"])
    t.int64_val.append(I64_MIN)
    t.bool_val.extend([True, False])
    t.half_val.append(3)
    t.uint32_val.append(2**32 - 1)
    t.uint64_val.append(2**64 - 1)
    t.scomplex_val.extend([1.0, 2.0])  # not read as plain: protobuf checks the value
    listed = d.attr["_class"].list  # every kind of a list
    listed.s.extend([b"loc:@a", b"\xfe"])
    listed.i.extend([-5, 6])
    listed.f.append(0.25)
    listed.b.append(True)
    listed.type.extend([1, 2])
    listed.shape.add().CopyFrom(_shape(3))
    d.attr["f"].f = -1.25
    d.attr["b"].b = True
    d.attr["placeholder"].placeholder = "T"
    g.node.add(name="a", op="Duplicate")  # a repeated name: the model keeps the first
    e = g.node.add(name="e")  # no op, no attributes
    e.attr["data_format"].s = b"NHWC"
    e.attr["_output_shapes"].s = b"not a list"
    g.node.add(name="", op="Empty")
    return g


def _hand_log() -> Any:
    log = pb.OpLogProto()
    log.id_to_string[5] = "file.py"
    log.id_to_string[-1] = "ünï"
    log.id_to_string[I64_MAX] = ""
    first = log.log_entries.add(name="a", float_ops=I64_MAX, types=["_trainable_variables", "x"])
    first.code_def.traces.add(
        lineno=-3, func_start_line=2**31 - 1, file_id=5, function_id=-1, line_id=I64_MIN
    )
    first.code_def.traces.add(lineno=7, file_id=5)
    same = log.log_entries.add(name="ünï/b", float_ops=I64_MIN)
    same.code_def.CopyFrom(first.code_def)
    empty = log.log_entries.add(name="c", types=["y"])
    empty.code_def.SetInParent()  # a code_def without frames: an empty stack
    log.log_entries.add(name="missing", float_ops=9)
    log.log_entries.add(name="a", float_ops=-1)
    log.log_entries.add()
    return log


def _raw_cases() -> list[tuple[bytes, bytes]]:
    out = [(_hand_graph().SerializeToString(), _hand_log().SerializeToString())]
    for make in hc.ALL_CASES.values():
        case = make()
        out.append((case.graph_def, case.op_log))
    return out


def _field(number: int, data: bytes) -> bytes:
    assert len(data) < 128
    return bytes([(number << 3) | 2, len(data)]) + data


def _mutations(raw: bytes, rng: random.Random) -> bytes:
    """A mutation of ``raw``; also a ``:`` key and a bad input index inserted."""
    return mutate(raw, rng, (*OVERWRITES, 0x3A), (*INSERTS, b":"))


def _mutation_count() -> int:
    """Inputs per mutation loop: 2,500, or ``FUZZ_CODEC_N`` (``make fuzz``)."""
    return int(os.environ.get("FUZZ_CODEC_N", "2500"))


def _decline_or_agree(
    seeds: list[bytes],
    seed: int,
    native: Callable[[bytes], Any],
    pure: Callable[[bytes], Any],
    same: Callable[[Any, Any], None],
    min_declined: int = 20,
) -> None:
    """Over mutations of ``seeds``: native either declines or equals protobuf's
    parse walked in Python; it never accepts bytes protobuf rejects (or the pure
    path refuses). Each outcome is reached (declines at least ``min_declined``
    times)."""
    rng = random.Random(seed)
    counts = [0, 0, 0]  # accepted, rejected, declined
    for i in range(_mutation_count()):
        raw = _mutations(seeds[i % len(seeds)], rng)
        got, want = native(raw), pure(raw)
        if want is None:
            assert got is None, raw.hex()
            counts[1] += 1
        elif got is None:
            counts[2] += 1
        else:
            same(got, want)
            counts[0] += 1
    assert counts[0] > 100 and counts[1] > 100 and counts[2] >= min_declined, counts


def _names_agree(raw: bytes) -> bool:
    """``graph_names`` and ``graph_check`` decline exactly where ``graph`` does,
    with the same names, ops (``graph_check``: node count) and distinct attribute
    values otherwise; whether they took ``raw``."""
    module = graphs._native()
    full, lean, check = module.graph(raw), module.graph_names(raw), module.graph_check(raw)
    assert (full is None) == (lean is None) == (check is None), raw.hex()
    if full is not None:
        assert (lean[0], lean[1], lean[2]) == (full[0], full[1], full[8])
        assert check == (len(full[0]), full[8])
        _details_agree(module, raw, full)
    return full is not None


#: Masks of ``graph_details``: every detail column, each group of
#: node_details.GROUPS, names and ops (bit 6) alone and with more, single
#: columns, none.
_MASKS = (63, 27, 36, 64, 91, 127, 1, 2, 8, 16, 32, 0)


def _details_agree(module: Any, raw: bytes, full: tuple[Any, ...]) -> None:
    """``graph_details`` on bytes ``graph`` took: each masked column equal to
    ``graph``'s, the others None."""
    for mask in _MASKS:
        got = module.graph_details(raw, mask)
        assert got is not None, (mask, raw.hex())
        for bit, column in enumerate(got[2:]):
            assert column == (full[2 + bit] if mask >> bit & 1 else None), (mask, bit)
        assert got[:2] == (full[:2] if mask & 64 else (None, None)), mask


_MODEL_COLUMNS = (
    "names",
    "ops",
    "index",
    "op_types",
    "shapes",
    "output_shapes",
    "inputs",
    "src_output",
    "str_attrs",
    "static_float_ops",
    "id_to_string",
    "has_trace",
    "graph_version",
    "data_version",
)


def merge_case(rng: random.Random, n_nodes: int) -> tuple[Any, ...]:
    """Arguments of ``merge_op_log`` (index, entry columns, stacks, node columns):
    unknown and repeated names, empty and repeated types, zero and extreme FLOPs,
    entries without a trace, nodes that already have one."""
    names = [f"n{i}" for i in range(n_nodes)]
    stacks: list[Any] = [[("f.py", k)] for k in range(rng.randint(1, 4))]
    entries = [rng.choice([*names, "unknown", "n"]) for _ in range(rng.randint(0, 3 * n_nodes))]
    float_ops = [rng.choice([0, 0, 1, 7, I64_MAX, I64_MIN]) for _ in entries]
    types = [
        tuple(rng.choice(["", "t", "u", "ü"]) for _ in range(rng.randint(0, 2))) for _ in entries
    ]
    trace_ids = [rng.randint(-1, len(stacks) - 1) for _ in entries]
    op_types = [{f"op{i % 3}"} for i in range(n_nodes)]
    static = [rng.choice([0, 5]) for _ in range(n_nodes)]
    traces = [rng.choice([None, None, ["had"]]) for _ in range(n_nodes)]
    index = {name: i for i, name in enumerate(names)}
    return index, entries, float_ops, types, trace_ids, stacks, op_types, static, traces
