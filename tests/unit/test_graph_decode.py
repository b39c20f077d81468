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

import random

import pytest

import tests.hand_cases as hc
from tests.unit.graph_decode_cases import (
    I64_MAX,
    I64_MIN,
    NATIVE_GRAPH_TESTS,
    _decline_or_agree,
    _field,
    _hand_graph,
    _hand_log,
    _mutation_count,
    _mutations,
    _names_agree,
    _pure_graph,
    _pure_log,
    _raw_cases,
    assert_same_graph,
    assert_same_log,
)
from tfprof_lite.model.decode import code_stacks
from tfprof_lite.proto import graphs

pytestmark = NATIVE_GRAPH_TESTS


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


def test_mutated_graphs_decline_or_agree() -> None:
    seeds = [_hand_graph().SerializeToString(), hc.code_case().graph_def]
    _decline_or_agree(seeds, 20261126, graphs.native_graph_columns, _pure_graph, assert_same_graph)


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
