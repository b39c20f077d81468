"""``Profiler(graph_def, op_log)``: inputs checked at construction, decoded on first read.

The GraphDef and op log (bytes or messages) are checked when the profiler is
made and added to its model when the model is first read
(:class:`tfprof_lite.model.graph_inputs.PendingInputs`). Checked here: nothing
is decoded into the model before that read; the model then equals the one
decoded at once, from bytes and from messages, with the native decoder and
without it (also when it is turned off in between); later changes to the
caller's messages are not seen; every bad input still fails in the
constructor; two threads reading the model first feed it once.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

import tests.hand_cases as hc
import tfprof_lite
from tests.mutations import attr_values
from tests.unit.graph_decode_cases import _MODEL_COLUMNS, _hand_graph, _hand_log
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.ingest import Ingest
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.proto import messages as pb

CASES = {
    "hand": lambda: (_hand_graph().SerializeToString(), _hand_log().SerializeToString()),
    "code": lambda: (hc.code_case().graph_def, hc.code_case().op_log),
}


def _at_once(graph: bytes, log: bytes) -> dict[str, Any]:
    """The model state of both inputs decoded and fed at once (as the
    constructor did before it left them pending)."""
    ingest = Ingest()
    ingest._feed(graph, log)
    return _model_state_of(ingest.model)


def _model_state_of(model: Any) -> dict[str, Any]:
    state = {name: getattr(model, name) for name in _MODEL_COLUMNS}
    state["attrs"] = [attr_values(a) for a in model.attrs]
    state["traces"] = model.traces
    return state


def _messages(graph: bytes, log: bytes) -> tuple[Any, Any]:
    return pb.GraphDef.FromString(graph), pb.OpLogProto.FromString(log)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("pure", [False, True])
def test_model_equals_the_inputs_decoded_at_once(
    case: str, pure: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if pure:
        monkeypatch.setenv("TFPROF_LITE_PURE_PYTHON", "1")
    graph, log = CASES[case]()
    want = _at_once(graph, log)
    for inputs in ((graph, log), _messages(graph, log)):
        prof = tfprof_lite.Profiler(*inputs)
        ingest = prof._ingest
        assert ingest._pending is not None and len(ingest._model) == 0
        assert ingest._model.id_to_string == {}
        assert _model_state_of(prof.model) == want
        assert ingest._pending is None
    assert want["names"] and any(want["static_float_ops"]) and want["has_trace"]


def test_decoder_turned_off_before_the_first_read(monkeypatch: pytest.MonkeyPatch) -> None:
    graph, log = CASES["hand"]()
    want = _at_once(graph, log)
    prof = tfprof_lite.Profiler(*_messages(graph, log))
    monkeypatch.setenv("TFPROF_LITE_PURE_PYTHON", "1")
    assert _model_state_of(prof.model) == want


def test_messages_changed_after_construction_are_not_seen() -> None:
    graph, log = CASES["hand"]()
    want = _at_once(graph, log)
    graph_msg, log_msg = _messages(graph, log)
    prof = tfprof_lite.Profiler(graph_msg, log_msg)
    graph_msg.node.add(name="late", op="Late")
    log_msg.log_entries[0].float_ops = 1
    log_msg.log_entries.add(name="a", types=["late"])
    log_msg.id_to_string[5] = "changed.py"
    assert _model_state_of(prof.model) == want


def test_the_same_message_object_twice() -> None:
    """The op log is copied: a profiler built from the same op log message as
    another one, changed in between, keeps the state it was given."""
    graph, log = CASES["code"]()
    graph_msg, log_msg = _messages(graph, log)
    first = tfprof_lite.Profiler(graph_msg, log_msg)
    log_msg.Clear()
    second = tfprof_lite.Profiler(graph_msg, log_msg)
    assert _model_state_of(first.model) == _at_once(graph, log)
    assert _model_state_of(second.model) == _at_once(graph, b"")


def _bad_inputs() -> list[tuple[str, Any, Any]]:
    graph, log = CASES["hand"]()
    malformed = pb.GraphDef()
    malformed.node.add(name="x", op="Op", input=["a:x"])
    return [
        ("graph bytes cut short", b"\x0a\x05", log),
        ("op log bytes cut short", graph, b"\x0a\x05"),
        ("graph bytes as op log", graph, graph),
        ("op log bytes as graph", log, None),
        ("op log message as graph", pb.OpLogProto.FromString(log), None),
        ("graph message as op log", graph, pb.GraphDef.FromString(graph)),
        ("malformed input, message", malformed, log),
        ("malformed input, bytes", malformed.SerializeToString(), log),
        ("not a message", graph, object()),
        ("graph not a message", 3.5, None),
    ]


@pytest.mark.parametrize("what,graph,log", [pytest.param(*c, id=c[0]) for c in _bad_inputs()])
@pytest.mark.parametrize("pure", [False, True])
def test_bad_input_fails_in_the_constructor(
    what: str, graph: Any, log: Any, pure: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if pure:
        monkeypatch.setenv("TFPROF_LITE_PURE_PYTHON", "1")
    with pytest.raises(InvalidInputError) as err:
        tfprof_lite.Profiler(graph, log)
    assert "\n" not in str(err.value), what


def test_op_log_checked_before_the_graph() -> None:
    """Both bad: the op log's error, as when both were decoded at construction."""
    with pytest.raises(InvalidInputError, match="^op_log"):
        tfprof_lite.Profiler(b"\x0a\x05", b"\x0a\x05")


def test_two_threads_reading_first_feed_the_model_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A thread that reads the model while another one feeds it waits for the
    complete model; the inputs are added once."""
    graph, log = CASES["code"]()
    want = _at_once(graph, log)
    prof = tfprof_lite.Profiler(*_messages(graph, log))
    add = ProfileModel.add_graph_columns
    adding = threading.Event()
    added: list[int] = []
    seen: list[dict[str, Any]] = []

    def slow_add(self: ProfileModel, cols: Any) -> bool:
        added.append(len(cols.names))
        adding.set()
        threading.Event().wait(0.05)  # the other thread reads the model meanwhile
        return add(self, cols)

    def read() -> None:
        adding.wait(5)
        seen.append(_model_state_of(prof.model))

    monkeypatch.setattr(ProfileModel, "add_graph_columns", slow_add)
    other = threading.Thread(target=read)
    other.start()
    first = _model_state_of(prof.model)
    other.join(5)
    assert first == want and seen == [want]
    assert added == [len(want["names"])]
    assert prof._ingest._pending is None
