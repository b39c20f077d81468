"""The model a ``Profiler`` builds from GraphDef / op log bytes is the same with the
native decoder and without it: model columns, errors, untracked containers, the native
op log merge and the node details decoded on first read.

The decoders' own column comparisons are in ``test_graph_decode.py``.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

import tests.hand_cases as hc
import tfprof_lite
from tests.mutations import attr_values
from tests.unit.graph_decode_cases import (
    _MODEL_COLUMNS,
    NATIVE_GRAPH_TESTS,
    _field,
    _hand_graph,
    _hand_log,
    _raw_cases,
    merge_case,
)
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.model.records import OpLogEntrySpec
from tfprof_lite.proto import graphs
from tfprof_lite.proto.graphs import GraphColumns, OpLogColumns

pytestmark = NATIVE_GRAPH_TESTS


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
