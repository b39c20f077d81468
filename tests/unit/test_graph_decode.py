"""The two GraphDef / op log decoders (native and pure Python) give equal columns.

Inputs are the hand-made cases' GraphDefs and op logs and hand-built messages
that reach every field the decoders read: control and indexed inputs, repeated
node names, ``shape`` / ``_output_shapes`` / ``data_format`` values of every
form, empty and keyless attributes, versions, shared and empty call stacks,
extreme integers. Malformed or unusual bytes must make the native decoder
decline (None), never give another answer than protobuf's parse; a seeded
mutation loop checks that on a few thousand inputs. The model a ``Profiler``
builds from bytes is the same with the native decoder and without it.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from typing import Any

import pytest

import tests.hand_cases as hc
import tfprof_lite
from tests.mutations import INSERTS, OVERWRITES, attr_values, mutate
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.model.decode import code_stacks
from tfprof_lite.model.records import OpLogEntrySpec
from tfprof_lite.proto import graphs
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto.graphs import GraphColumns, OpLogColumns

pytestmark = pytest.mark.skipif(
    not graphs.native_graph_available() and os.environ.get("CI") != "true",
    reason="the native graph decoder is not built (python setup.py build_ext --inplace)",
)

I64_MIN, I64_MAX = -(2**63), 2**63 - 1


@pytest.fixture(autouse=True)
def _native_in_reach(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are the native decoder's own: it stays in reach even when the
    suite runs with TFPROF_LITE_PURE_PYTHON set (tests that want it set set it)."""
    monkeypatch.delenv("TFPROF_LITE_PURE_PYTHON", raising=False)


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


@pytest.mark.parametrize("index", range(len(_raw_cases())))
def test_hand_inputs_equal(index: int) -> None:
    graph_raw, log_raw = _raw_cases()[index]
    native = graphs.native_graph_columns(graph_raw)
    pure = _pure_graph(graph_raw)
    assert native is not None and pure is not None
    assert_same_graph(native, pure)
    log_native = graphs.native_op_log_columns(log_raw)
    log_pure = _pure_log(log_raw)
    assert log_native is not None and log_pure is not None
    assert_same_log(log_native, log_pure)


def test_hand_graph_reads_every_form() -> None:
    """The decoded values themselves (not only native == pure)."""
    cols = graphs.native_graph_columns(_hand_graph().SerializeToString())
    assert cols is not None
    assert cols.names == ["a", "ünï/b", "c", "d", "a", "e", ""]
    assert cols.inputs[1] == {0: "a", 1: "a", 2: "a", 3: "a", 4: "a"}
    assert cols.src_output[1] == {"a": 0}
    assert cols.inputs[2] == {0: "ünï/b"}
    assert cols.shapes[:4] == [[1], [], None, [4, 5, 6]]
    assert cols.output_shapes[0] == {0: [2, 3]} and cols.output_shapes[0] is cols.output_shapes[1]
    assert cols.output_shapes[2] == {0: [-1, I64_MAX, 0], 1: [], 2: [1]}
    assert cols.output_shapes[3] == {} and cols.output_shapes[5] == {}
    assert cols.str_attrs[1] == {"data_format": "NC\ufffdHW"}
    assert cols.str_attrs[2] == {} and cols.str_attrs[5] == {"data_format": "NHWC"}
    log = graphs.native_op_log_columns(_hand_log().SerializeToString())
    assert log is not None
    assert log.trace_ids == [0, 0, 1, -1, -1, -1]
    stacks = code_stacks(log.traces)
    assert stacks[1] == []
    frame = stacks[0][0]
    assert (frame.file_id, frame.lineno, frame.function_id, frame.line_id) == (5, -3, -1, I64_MIN)
    assert frame.func_start_line == 2**31 - 1
    assert log.float_ops[:2] == [I64_MAX, I64_MIN]


def _field(number: int, data: bytes) -> bytes:
    assert len(data) < 128
    return bytes([(number << 3) | 2, len(data)]) + data


def _decline_graphs() -> list[tuple[str, bytes]]:
    raw = _hand_graph().SerializeToString()
    node = _field(1, b"x") + _field(2, b"Op")
    return [
        ("unknown top-level field", raw + b"\x30\x01"),
        ("truncated", raw[:-3]),
        ("library with a bad node name", raw + _field(2, _field(1, _field(3, b"\x0a\x01\xff")))),
        ("malformed input", _field(1, node + _field(3, b"a:x"))),
        ("empty index", _field(1, node + _field(3, b"a:"))),
        ("signed index", _field(1, node + _field(3, b"a:+1"))),
        ("invalid UTF-8 name", _field(1, _field(1, b"\xc3\x28"))),
        ("node name as varint", _field(1, b"\x08\x01")),
        ("debug info cut short", _field(1, node + _field(6, _field(1, b"o")[:-1]))),
        ("bad type string", _field(1, node + _field(7, _field(3, b"\xed\xa0\x80")))),
        ("two values in an entry", _field(1, node + _field(5, _field(2, b"") + _field(2, b"")))),
        (
            "shape value with two fields",
            _field(1, node + _field(5, _field(1, b"shape") + _field(2, b"\x18\x01\x18\x02"))),
        ),
        (
            "bad attribute value",
            _field(1, node + _field(5, _field(1, b"k") + _field(2, b"\x0a\x05"))),
        ),
        (
            "attribute varint of eleven bytes",
            _field(
                1, node + _field(5, _field(1, b"T") + _field(2, b"\x30" + b"\xff" * 10 + b"\x01"))
            ),
        ),
        (
            "packed floats of five bytes",
            _field(
                1, node + _field(5, _field(1, b"v") + _field(2, _field(8, _field(5, b"12345"))))
            ),
        ),
        (
            "shape of a tensor with a bad dim",
            _field(
                1,
                node
                + _field(5, _field(1, b"v") + _field(2, _field(8, _field(2, b"\x12\x02\x08")))),
            ),
        ),
        (
            "attribute bytes cut short",
            _field(1, node + _field(5, _field(1, b"s") + _field(2, b"\x12\x05abc"))),
        ),
    ]


@pytest.mark.parametrize("what,raw", _decline_graphs(), ids=lambda x: str(x)[:30])
def test_unusual_graphs_decline(what: str, raw: bytes) -> None:
    assert graphs.native_graph_columns(raw) is None, what


def _decline_logs() -> list[tuple[str, bytes]]:
    raw = _hand_log().SerializeToString()
    trace = _field(1, b"abc")  # Trace.file (field 1), dropped by TensorFlow
    entry = _field(1, b"n") + _field(4, _field(1, trace))
    return [
        ("unknown top-level field", raw + b"\x18\x01"),
        ("truncated", raw[:-2]),
        ("old trace field", _field(1, entry)),
        ("two code_defs", _field(1, _field(1, b"n") + _field(4, b"") + _field(4, b""))),
        ("float_ops as bytes", _field(1, _field(2, b"x"))),
        ("invalid UTF-8 type", _field(1, _field(3, b"\xed\xa0\x80"))),
    ]


@pytest.mark.parametrize("what,raw", _decline_logs(), ids=lambda x: str(x)[:30])
def test_unusual_logs_decline(what: str, raw: bytes) -> None:
    assert graphs.native_op_log_columns(raw) is None, what


def test_pure_env_keeps_native_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TFPROF_LITE_PURE_PYTHON", "1")
    assert graphs.native_graph_columns(_hand_graph().SerializeToString()) is None
    assert graphs.native_op_log_columns(_hand_log().SerializeToString()) is None


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


def test_mutated_graphs_decline_or_agree() -> None:
    seeds = [_hand_graph().SerializeToString(), hc.code_case().graph_def]
    _decline_or_agree(seeds, 20261126, graphs.native_graph_columns, _pure_graph, assert_same_graph)


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


def test_details_mask_matches_node_detail_groups() -> None:
    """The group masks of ``_MASKS`` are node_details.GROUPS."""
    from tfprof_lite.model.node_details import GROUPS

    assert [graphs.details_mask(group) for group in GROUPS] == [27, 36]
    assert graphs.details_mask(graphs.DETAILS) == 63


def test_details_decode_builds_only_the_columns_asked_for() -> None:
    """``GraphColumns.with_details(columns)``: those columns as ``graph`` decodes
    them, the others left empty."""
    raw = _hand_graph().SerializeToString()
    full = graphs.native_graph_columns(raw)
    pending = graphs.native_graph_names(raw)
    assert full is not None and pending is not None
    some = pending.with_details(("attrs", "shapes"))
    assert some.attrs == full.attrs and some.shapes == full.shapes != []
    assert some.inputs == some.output_shapes == some.str_attrs == []
    names = graphs.checked_graph_names(raw)
    assert names is not None and (names.names, names.ops) == (full.names, full.ops)
    assert names.pending == raw and names.inputs == []


def test_names_mode_checks_what_the_full_decoder_checks() -> None:
    seeds = [_hand_graph().SerializeToString(), hc.code_case().graph_def]
    seeds += [g for g, _ in _raw_cases()]
    for raw in seeds:
        _names_agree(raw)
    for _what, raw in _decline_graphs():
        assert graphs.native_graph_names(raw) is None, _what
        assert graphs.native_graph_check(raw) is None, _what
    rng = random.Random(27)
    taken = [_names_agree(_mutations(seeds[i % 2], rng)) for i in range(_mutation_count())]
    assert 100 < sum(taken) < len(taken) - 100


def test_mutated_logs_decline_or_agree() -> None:
    seeds = [_hand_log().SerializeToString(), hc.code_case().op_log]
    _decline_or_agree(seeds, 1126, graphs.native_op_log_columns, _pure_log, assert_same_log)


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


def _model_state(graph: bytes, log: bytes) -> dict[str, Any]:
    model = tfprof_lite.Profiler(graph, op_log=log or None).model
    state = {name: getattr(model, name) for name in _MODEL_COLUMNS}
    state["attrs"] = [attr_values(a) for a in model.attrs]
    state["traces"] = model.traces
    return state


@pytest.mark.parametrize("index", range(len(_raw_cases())))
def test_profiler_model_same_without_native(index: int, monkeypatch: pytest.MonkeyPatch) -> None:
    graph_raw, log_raw = _raw_cases()[index]
    native = _model_state(graph_raw, log_raw)
    monkeypatch.setenv("TFPROF_LITE_PURE_PYTHON", "1")
    assert native == _model_state(graph_raw, log_raw)


def _outcome(graph: Any, log: Any) -> str:
    try:
        tfprof_lite.Profiler(graph, op_log=log)
    except InvalidInputError as err:
        return str(err)
    return "ok"


def test_errors_same_without_native(monkeypatch: pytest.MonkeyPatch) -> None:
    graph_raw = hc.code_case().graph_def
    log_raw = hc.code_case().op_log
    node = _field(1, b"x") + _field(2, b"Op")
    inputs = [
        (graph_raw, log_raw),
        (log_raw, None),  # an op log passed as the graph
        (graph_raw, graph_raw),  # a graph passed as the op log
        (_field(1, node + _field(3, b"a:x")), None),
        (b"\x0a\x05", None),
        (graph_raw, b"\x0a\x05"),
        (b"\x0a\x05", b"\x0a\x05"),
    ]
    native = [_outcome(g, log) for g, log in inputs]
    monkeypatch.setenv("TFPROF_LITE_PURE_PYTHON", "1")
    assert native == [_outcome(g, log) for g, log in inputs]
    assert native[0] == "ok" and native[1] != "ok" and native[3] != "ok"


def test_native_model_containers_stay_out_of_the_collector() -> None:
    """Op type sets, output shape dicts and dims lists hold ints and strings
    only: the native decoders leave them untracked by the cyclic collector, so
    its walks in the user's process do not visit tens of thousands of them."""
    import gc

    from tfprof_lite._native import load

    if load("_graphdecode") is None or load("_profiledecode") is None:
        pytest.skip("the native decoders are not built")
    prof = tfprof_lite.Profiler(_hand_graph().SerializeToString())
    model = prof.model
    shaped = [d for d in model.output_shapes if d]
    assert shaped and not any(gc.is_tracked(d) for d in shaped)
    assert not any(gc.is_tracked(dims) for d in shaped for dims in d.values())
    assert not any(gc.is_tracked(s) for s in model.op_types)
    model.op_types[0].add("Extra")  # still a working set
    assert "Extra" in model.op_types[0]
    loaded = tfprof_lite.Profiler.load(prof.serialize_to_string()).model
    assert not any(gc.is_tracked(s) for s in loaded.op_types)
    assert not any(gc.is_tracked(d) for d in loaded.output_shapes)


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


def test_native_op_log_merge_equals_python() -> None:
    """``merge_op_log`` (the native loop of ``ProfileModel.add_op_log_columns``)
    leaves the node columns as the Python loop does and says the same about traces."""
    import copy

    from tfprof_lite._native import load
    from tfprof_lite.model.profile import ProfileModel

    module = load("_graphdecode")
    rng = random.Random(7)
    for n_nodes in [0, 1, 2, 5, 30, 200] * 5:
        args = merge_case(rng, n_nodes)
        native, pure = copy.deepcopy(args), copy.deepcopy(args)
        traced = module.merge_op_log(*native)
        model = ProfileModel()
        model.index, model.op_types, model.static_float_ops, model.traces = (
            pure[0],
            pure[6],
            pure[7],
            pure[8],
        )
        cols = OpLogColumns(list(pure[1]), list(pure[2]), list(pure[3]), list(pure[4]))
        assert traced is model._merge_op_log(cols, pure[5])
        assert native[6:] == pure[6:]


def test_native_op_log_merge_into_pending_types() -> None:
    """With a dict for ``op_types`` (the model's types of nodes whose sets are not
    made yet) ``merge_op_log`` collects each node's types there, untracked sets,
    and the rest of the columns end as with the list."""
    import copy
    import gc

    from tfprof_lite._native import load

    module = load("_graphdecode")
    rng = random.Random(17)
    for n_nodes in [0, 1, 2, 5, 30, 200] * 5:
        args = merge_case(rng, n_nodes)
        listed, pending = copy.deepcopy(args), copy.deepcopy(args)
        made = pending[6]
        pending = (*pending[:6], {}, *pending[7:])
        assert module.merge_op_log(*listed) is module.merge_op_log(*pending)
        for nid, types in pending[6].items():
            assert types and not gc.is_tracked(types)
            made[nid] |= types
        assert made == listed[6] and pending[7:] == listed[7:]


def test_profiler_makes_op_type_sets_on_first_read() -> None:
    """A GraphDef and op log given as bytes: the op type sets are made on first
    read, with the op log's types and those of nodes added in between."""
    raw, log = _hand_graph().SerializeToString(), _hand_log().SerializeToString()
    model = tfprof_lite.Profiler(raw, op_log=log).model
    assert model._op_types == [] and model.pending_types == {
        0: {"_trainable_variables", "x"},
        2: {"y"},
    }
    pseudo = model.new_pseudo_node("pseudo")
    model.add_op_log([OpLogEntrySpec("pseudo", types=["z"])], {})
    assert model.op_types[:3] == [{"Const", "_trainable_variables", "x"}, {"Ωp"}, {"Conv2D", "y"}]
    assert model.op_types[pseudo] == {"pseudo", "z"} and len(model.op_types) == len(model.names)
    assert model.pending_types == {}


def test_native_op_log_merge_refuses_bad_columns() -> None:
    from tfprof_lite._native import load

    module = load("_graphdecode")
    index, *rest = merge_case(random.Random(3), 4)
    with pytest.raises(TypeError):
        module.merge_op_log(index, *rest[:-1])
    with pytest.raises(TypeError):
        module.merge_op_log(list(index), *rest)
    with pytest.raises(ValueError):
        module.merge_op_log(index, rest[0] + ["n1"], *rest[1:])
    with pytest.raises(IndexError):
        module.merge_op_log({"n0": 99}, ["n0"], [1], [()], [0], *rest[4:])
    with pytest.raises(TypeError):
        module.merge_op_log(index, ["n0"], [1], [["t"]], [0], *rest[4:])


def test_profiler_decodes_node_details_on_first_read() -> None:
    """A GraphDef given as bytes: names and ops at construction, the other
    columns (inputs .. string attributes) when one of their group is first read,
    equal to the columns decoded at once; nodes added in between keep their places."""
    raw = _hand_graph().SerializeToString()
    model = tfprof_lite.Profiler(raw).model
    assert model.pending_details and model._inputs == [] and model._attrs == []
    pseudo = model.new_pseudo_node("pseudo")  # added before the details are read
    model.add_graph_columns(graphs.native_graph_names(_field(1, _field(1, b"late"))))
    assert model.pending_details
    full = graphs.native_graph_columns(raw)
    assert full is not None
    n = len(full.names)
    kept = [0, 1, 2, 3, 5, 6]  # the repeated name "a" (row 4) is left out
    assert model.inputs[:n] != [] and model.pending_details
    # the views' group is decoded, the attributes wait for their first read
    assert None not in model._output_shapes and set(model._attrs[: len(kept)]) == {None}
    assert model.str_attrs[:n] != [] and not model.pending_details
    for name in graphs.DETAILS:
        column = getattr(model, name)
        assert len(column) == len(model.names) == len(kept) + 2
        assert column[: len(kept)] == [getattr(full, name)[i] for i in kept], name
    assert model.names[pseudo] == "pseudo" and model.inputs[pseudo] == {}
    assert model.shapes[pseudo] is None and model.names[-1] == "late"
    assert model.attrs[-1] == {} and model.output_shapes[-1] == {}


def test_detail_columns_written_before_read() -> None:
    """Setting a detail column while details are pending decodes its group first,
    so the value set is what stays, also when the other group is decoded later."""
    model = tfprof_lite.Profiler(_hand_graph().SerializeToString()).model
    assert model.pending_details
    replaced = [{} for _ in model.names]
    model.str_attrs = replaced
    assert model.str_attrs is replaced and not model.pending_details.waiting("attrs")
    assert model.pending_details.waiting("inputs")
    assert model.inputs[1] == {0: "a", 1: "a", 2: "a", 3: "a", 4: "a"}
    assert model.str_attrs is replaced and not model.pending_details
    full = graphs.native_graph_columns(_hand_graph().SerializeToString())
    assert full is not None and model.attrs[:4] == full.attrs[:4] != [{}] * 4


def test_details_read_in_another_thread_while_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread reading a detail column while another decodes the pending
    details waits for complete lists; it never sees the placeholders."""
    import threading
    import time

    model = tfprof_lite.Profiler(_hand_graph().SerializeToString()).model
    seen: list[Any] = []
    started = threading.Event()

    def reader() -> None:
        started.set()
        seen.append(list(model.inputs))

    decode = GraphColumns.with_details
    threads: list[threading.Thread] = []

    def slow_decode(cols: GraphColumns, *columns: Any) -> GraphColumns:
        thread = threading.Thread(target=reader)
        threads.append(thread)
        thread.start()
        started.wait(5)
        time.sleep(0.05)  # the reader runs now, while this decode is under way
        return decode(cols, *columns)

    monkeypatch.setattr(GraphColumns, "with_details", slow_decode)
    first = list(model.inputs)
    threads[0].join(5)
    assert seen == [first] and None not in first and len(first) == len(model.names)
