"""A drop-in for ``tensorflow.python.client.timeline``: one step as a Chrome trace.

Contract: ``Timeline(step_stats, graph=None)`` followed by
``generate_chrome_trace_format(show_dataflow=True, show_memory=False,
op_time="schedule")`` returns the same JSON text as TensorFlow 2.21's
``tensorflow.python.client.timeline.Timeline`` (``json.dumps(trace, indent=4,
separators=(",", ": "))``), and ``analyze_step_stats(...)`` the same
``StepStatsAnalysis(chrome_trace, allocator_maximums)``:

* pid 0 is ``Allocators``; every ``dev_stats`` entry gets ``<device> Compute`` and
  ``<device> Tensors`` processes, in order.
* Each node is an ``X`` event named after its op type (parsed from the
  ``timeline_label`` ``name = Op(in0, in1)``; GPU-tracer devices take the node and
  op from the kernel label), in a lane (``tid``) of its device: the first lane whose
  last activity ended strictly before the node starts.
* Every output is a tensor; ``show_memory`` adds tensor create/snapshot/delete
  events and one cumulative counter per allocator; ``show_dataflow`` adds a flow
  between producer and consumer when they are on different lanes or devices.
* ``op_time="gpu"`` or ``"all"`` (any value but ``"schedule"``) stretches the ops of
  ``/job`` devices over their ``stream:all`` kernels, on a copy of the step stats.

TensorFlow's statefulness is kept: the trace formatter, pids, tensors and flow ids
live in the instance, so a second call on the same ``Timeline`` appends to the first
trace, and ``op_time="schedule"`` writes the lanes into the step stats' ``thread_id``
(into the caller's message when it is one of ours; a TensorFlow message is never
written to, bytes are parsed into a message of our own). ROCm builds of TensorFlow
add an ``args.kernel`` entry; this module behaves like the CUDA/CPU builds.

How it is fast (the text is still TensorFlow's, byte for byte): node fields are read
into per-device columns (one ``operator.attrgetter`` pass per field), so few Python
objects are kept per node (the garbage collector's full passes over TensorFlow's
objects are what a large step otherwise pays for), and labels are split a column
at a time; op events are runs of those columns, a device's events written once by
a template and sliced per run, other events by a small encoder for dicts of
strings and ints (anything else goes through :func:`json.dumps`), instead of the
pure-Python indenting ``json`` encoder; a TensorFlow message is read in place
instead of being converted (it is never written to). Cyclic garbage collection is
paused while a trace is built and written. Without ``show_memory`` the
per-tensor bookkeeping (allocators, sizes, last uses) does not change the trace of
the call: it is left pending and done at the start of the next call on the same
instance, so repeated calls still see TensorFlow's state.
"""

from __future__ import annotations

import gc
import json
import logging
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from itertools import accumulate, chain, compress, repeat
from json.encoder import encode_basestring_ascii
from operator import add, attrgetter, itemgetter, not_
from typing import Any, Callable, NamedTuple, Union

from tfprof_lite.capture.oplog import is_tf_graph
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto.codec import parse

__all__ = ["AllocationMaximum", "ChromeTraceFormatter", "StepStatsAnalysis", "Timeline"]

log = logging.getLogger("tfprof_lite")

Event = dict[str, Any]


# ------------------------------------------------------------------ JSON text
_encode_str: Callable[[str], str] = encode_basestring_ascii
_LINE2 = "\n        "  # an event in {"traceEvents": [...]} written with indent=4
_LINE3 = _LINE2 + "    "  # an event's fields
_LINE4 = _LINE3 + "    "  # the fields of its args
_EMPTY_TRACE = '{\n    "traceEvents": []\n}'
#: Op event templates by number of inputs: ``%`` (op, pid, tid, ts, dur, node, op,
#: input0, ...), every string JSON-encoded.
_OP_EVENTS: dict[int, str] = {}
_CACHED_INPUTS = 64  # templates for more inputs are built per event
#: An op event whose strings need no escaping; ``%`` (op, pid, tid, ts, dur, node,
#: op, inputs) with the inputs already written (``,<newline>"input0": "a"...``).
_PLAIN_OP_EVENT = (
    f'{{{_LINE3}"ph": "X",{_LINE3}"cat": "Op",{_LINE3}"name": "%s",{_LINE3}"pid": %s,'
    f'{_LINE3}"tid": %s,{_LINE3}"ts": %s,{_LINE3}"dur": %s,{_LINE3}"args": {{'
    f'{_LINE4}"name": "%s",{_LINE4}"op": "%s"%s{_LINE3}}}{_LINE2}}}'
)
#: ``",<newline>"inputN": "``: with the names in between, the inputs of a plain op
#: event (less the first character, plus a closing quote).
_PLAIN_INPUT_KEYS: list[str] = []


#: A flow event; ``%`` (ph, name, pid, tid, ts, id).
_FLOW_EVENT = (
    f'{{{_LINE3}"ph": "%s",{_LINE3}"cat": "DataFlow",{_LINE3}"name": %s,{_LINE3}"pid": %s,'
    f'{_LINE3}"tid": %s,{_LINE3}"ts": %s,{_LINE3}"id": %s{_LINE2}}}'
)
#: A flow's start and end events as one part of the event list; ``%`` (name, pid,
#: tid, ts, id, name, pid, tid, ts, id).
_FLOW_EVENTS = (
    _FLOW_EVENT.replace('"%s"', '"s"', 1) + "," + _LINE2 + _FLOW_EVENT.replace('"%s"', '"t"', 1)
)


def _pretty(value: Any, newline: str) -> str:
    """``value`` as ``json.dumps(indent=4, separators=(",", ": "))`` writes it at the
    nesting level whose lines start with ``newline``.

    Strings, ints and non-empty dicts with string keys are written here; anything
    else (floats, bools, lists, other key types) by :func:`json.dumps`, whose lines
    are shifted to this level (the same text: the encoder indents by level).
    """
    kind = type(value)
    if kind is str:
        return _encode_str(value)
    if kind is int:
        return int.__repr__(value)
    if kind is dict and value:
        inner = newline + "    "
        items = []
        for key, item in value.items():
            if type(key) is not str:
                break
            kind = type(item)
            if kind is str:
                text = _encode_str(item)
            elif kind is int:
                text = int.__repr__(item)
            else:
                text = _pretty(item, inner)
            items.append(f"{inner}{_encode_str(key)}: {text}")
        else:
            return "{" + ",".join(items) + newline + "}"
    return json.dumps(value, indent=4, separators=(",", ": ")).replace("\n", newline)


def _op_event_template(inputs: int) -> str:
    """The template of an op event with ``inputs`` inputs (see ``_OP_EVENTS``)."""
    template = _OP_EVENTS.get(inputs)
    if template is None:
        template = (
            f'{{{_LINE3}"ph": "X",{_LINE3}"cat": "Op",{_LINE3}"name": %s,{_LINE3}"pid": %s,'
            f'{_LINE3}"tid": %s,{_LINE3}"ts": %s,{_LINE3}"dur": %s,{_LINE3}"args": {{'
            f'{_LINE4}"name": %s,{_LINE4}"op": %s'
            + "".join([f',{_LINE4}"input{i}": %s' for i in range(inputs)])
            + f"{_LINE3}}}{_LINE2}}}"
        )
        if inputs <= _CACHED_INPUTS:
            _OP_EVENTS[inputs] = template
    return template


def _plain_input_keys(count: int) -> list[str]:
    """At least ``count`` entries of ``_PLAIN_INPUT_KEYS``."""
    while len(_PLAIN_INPUT_KEYS) < count:
        _PLAIN_INPUT_KEYS.append(f'",{_LINE4}"input{len(_PLAIN_INPUT_KEYS)}": "')
    return _PLAIN_INPUT_KEYS


def _plain_inputs(inputs: Sequence[str]) -> list[str]:
    """The ``args`` inputs of plain op events (``,<newline>"input0": "a"...``) from
    their labels' ``"a, b"`` texts (one or two inputs, the usual case, by
    ``str.replace``)."""
    keys = _plain_input_keys(max(map(str.count, inputs, repeat(", ")), default=0) + 1)
    first = keys[0][1:]
    second = keys[1] if len(keys) > 1 else ""
    out: list[str] = []
    append = out.append
    for text in inputs:
        if not text:
            append("")
            continue
        separators = text.count(", ")
        if separators == 0:
            append(f'{first}{text}"')
        elif separators == 1:
            append(f'{first}{text.replace(", ", second)}"')
        else:
            append("".join(map(add, keys, text.split(", ")))[1:] + '"')
    return out


def _is_plain(texts: Iterable[str]) -> bool:
    """Whether JSON writes every string of ``texts`` as it is, between quotes: only
    printable ASCII but ``"`` and ``\\`` (DEL, printable for JSON, is refused too)."""
    joined = "".join(texts)
    return joined.isascii() and joined.isprintable() and '"' not in joined and "\\" not in joined


class _Device(NamedTuple):
    """One ``dev_stats`` entry as read for one trace: a column per node field."""

    stats: Any  # the DeviceStepStats message
    device_pid: int
    tensors_pid: int
    names: Sequence[str]
    starts: Sequence[int]
    durs: Sequence[int]
    lanes: list[int]
    shown: Sequence[str]  # the node name in the op event's args
    ops: list[str]
    inputs: list[str]  # the label's "a, b" text; "" when the node uses no tensors
    plain: bool  # no string of shown, ops and inputs needs escaping in JSON


def _plain_op_events(dev: _Device) -> list[str]:
    """The written op events of every node of a plain device (see ``_PLAIN_OP_EVENT``)."""
    rows = zip(
        dev.ops,
        repeat(dev.device_pid),
        dev.lanes,
        dev.starts,
        dev.durs,
        dev.shown,
        dev.ops,
        _plain_inputs(dev.inputs),
    )
    return list(map(_PLAIN_OP_EVENT.__mod__, rows))


class _OpRun(NamedTuple):
    """The op events of nodes ``[lo, hi)`` of a device, in a formatter's event list."""

    dev: _Device
    lo: int
    hi: int

    def _column_lists(self) -> tuple[Sequence[Any], ...]:
        """(ops, tids, ts, durs, nodes, inputs) of the events: each a column (slice)."""
        dev, lo, hi = self
        columns = (dev.ops, dev.lanes, dev.starts, dev.durs, dev.shown, dev.inputs)
        if lo == 0 and hi == len(dev.ops):
            return columns
        return tuple(column[lo:hi] for column in columns)

    def _columns(self) -> Iterable[tuple[str, int, int, int, str, str]]:
        """(op, tid, ts, dur, node, inputs) of every event."""
        return zip(*self._column_lists())

    def pretty(self, out: list[str], ops: dict[str, str], cache: dict[int, list[str]]) -> None:
        """Append each event's indented text to ``out`` (``ops``: encoded op names;
        ``cache``: a plain device's written op events, by ``id``, for the trace being
        written).

        Plain strings (no escaping needed; the usual case): every op event of the
        device is written once, by ``map`` over one template (the inputs of an event
        written as ``"".join`` of keys and names first), and each run takes its
        slice. When a string needs escaping, the inputs are encoded as one string
        and split again: the encoding maps ``,`` and space to themselves and nothing
        else to them, so the pieces are the encoded inputs.
        """
        pid = self.dev.device_pid
        append = out.append
        if self.dev.plain:
            written = cache.get(id(self.dev))
            if written is None:
                written = cache[id(self.dev)] = _plain_op_events(self.dev)
            if self.lo or self.hi != len(written):
                written = written[self.lo : self.hi]
            out.extend(written)
            return
        plain = _op_event_template(0)
        for op, tid, ts, dur, node, inputs in self._columns():
            encoded_op = ops.get(op)
            if encoded_op is None:
                encoded_op = ops[op] = _encode_str(op)
            if not inputs:
                append(plain % (encoded_op, pid, tid, ts, dur, _encode_str(node), encoded_op))
                continue
            names = [f'"{name}"' for name in _encode_str(inputs)[1:-1].split(", ")]
            template = _op_event_template(len(names))
            append(
                template % (encoded_op, pid, tid, ts, dur, _encode_str(node), encoded_op, *names)
            )

    def events(self) -> Iterator[Event]:
        """Each event as the dict TensorFlow builds."""
        pid = self.dev.device_pid
        for op, tid, ts, dur, node, inputs in self._columns():
            args: Event = {"name": node, "op": op}
            for index, name in enumerate(inputs.split(", ") if inputs else ()):
                args[f"input{index}"] = name
            yield {
                "ph": "X",
                "cat": "Op",
                "name": op,
                "pid": pid,
                "tid": tid,
                "ts": ts,
                "dur": dur,
                "args": args,
            }


class _Flow(NamedTuple):
    """A flow arrow: its start (``s``) and end (``t``) event."""

    name: str
    flow_id: int
    origin: tuple[int, int, int]  # (ts, pid, tid) of the start
    target: tuple[int, int, int]  # (ts, pid, tid) of the end

    def pretty(self, out: list[str], ops: dict[str, str], cache: dict[int, list[str]]) -> None:
        """Append both events' indented text to ``out``."""
        name, flow_id, (ts, pid, tid), (end_ts, end_pid, end_tid) = self
        name = _encode_str(name)
        out.append(
            _FLOW_EVENTS % (name, pid, tid, ts, flow_id, name, end_pid, end_tid, end_ts, flow_id)
        )

    def events(self) -> Iterator[Event]:
        """Both events as the dicts TensorFlow builds."""
        for ph, (ts, pid, tid) in (("s", self.origin), ("t", self.target)):
            yield {
                "ph": ph,
                "cat": "DataFlow",
                "name": self.name,
                "pid": pid,
                "tid": tid,
                "ts": ts,
                "id": self.flow_id,
            }


class _FlowSources(NamedTuple):
    """Node columns of all devices of a trace, end to end (positions index them)."""

    pids: Sequence[int]
    lanes: Sequence[int]
    starts: Sequence[int]
    durs: Sequence[int]


class _FlowingOps(NamedTuple):
    """All op events of a device with the flows into its nodes: flow ``k`` (ids
    from ``first_id`` on) comes right after the op event of node ``targets[k]``,
    from output ``names[k]`` of the node at position ``sources[k]``."""

    dev: _Device
    targets: list[int]
    names: list[str]
    sources: list[int]
    columns: _FlowSources
    first_id: int

    def _flow_columns(self) -> tuple[Iterable[Any], ...]:
        """Columns of the flows: (name, pid, tid, ts, id) of the start, then (pid,
        tid, ts) of the end."""
        columns, sources, targets = self.columns, self.sources, self.targets
        ids = range(self.first_id, self.first_id + len(sources))
        ends = map(
            add, map(columns.starts.__getitem__, sources), map(columns.durs.__getitem__, sources)
        )
        origin_pids = map(columns.pids.__getitem__, sources)
        origin_tids = map(columns.lanes.__getitem__, sources)
        tids = map(self.dev.lanes.__getitem__, targets)
        starts = map(self.dev.starts.__getitem__, targets)
        pid = repeat(self.dev.device_pid)
        return self.names, origin_pids, origin_tids, ends, ids, pid, tids, starts

    def _merged(self, op_events: Sequence[Any], flows: Iterable[Any]) -> Iterator[Any]:
        """The op events with the flows after their targets."""
        done = 0
        for target, flow in zip(self.targets, flows):
            if done <= target:
                yield from op_events[done : target + 1]
                done = target + 1
            yield flow
        yield from op_events[done:]

    def pretty(self, out: list[str], ops: dict[str, str], cache: dict[int, list[str]]) -> None:
        """Append the events' indented text to ``out`` (see :meth:`_OpRun.pretty`)."""
        op_events: list[str] = []
        _OpRun(self.dev, 0, len(self.dev.names)).pretty(op_events, ops, cache)
        names, pids, tids, starts, ids, end_pids, end_tids, end_starts = self._flow_columns()
        encoded = list(map(_encode_str, names))
        numbers = list(ids)
        rows = zip(
            encoded, pids, tids, starts, numbers, encoded, end_pids, end_tids, end_starts, numbers
        )
        out.extend(self._merged(op_events, list(map(_FLOW_EVENTS.__mod__, rows))))

    def events(self) -> Iterator[Event]:
        """Each event as the dict TensorFlow builds."""
        op_events = list(_OpRun(self.dev, 0, len(self.dev.names)).events())
        flows = [
            _Flow(name, i, (ts, pid, tid), (end_ts, end_pid, end_tid))
            for name, pid, tid, ts, i, end_pid, end_tid, end_ts in zip(*self._flow_columns())
        ]
        for item in self._merged(op_events, flows):
            if isinstance(item, _Flow):
                yield from item.events()
            else:
                yield item


class AllocationMaximum(NamedTuple):
    """The largest total of one allocator during the step.

    Attributes:
        timestamp: when the maximum was reached (microseconds).
        num_bytes: the total bytes allocated then.
        tensors: names of the tensors alive then.
    """

    timestamp: int
    num_bytes: int
    tensors: set[str]


class StepStatsAnalysis(NamedTuple):
    """What :meth:`Timeline.analyze_step_stats` returns.

    Attributes:
        chrome_trace: the :class:`ChromeTraceFormatter` holding the trace.
        allocator_maximums: allocator name -> :class:`AllocationMaximum`
            (filled only with ``show_memory``).
    """

    chrome_trace: ChromeTraceFormatter
    allocator_maximums: dict[str, AllocationMaximum]


class ChromeTraceFormatter:
    """Collects Chrome trace events: metadata first, then events."""

    def __init__(self, show_memory: bool = False) -> None:
        self._show_memory = show_memory
        self._metadata: list[Event] = []
        self._events: list[Union[Event, _OpRun, _Flow, _FlowingOps]] = []

    @staticmethod
    def _event(ph: str, category: str, name: str, pid: int, tid: int, ts: int) -> Event:
        return {"ph": ph, "cat": category, "name": name, "pid": pid, "tid": tid, "ts": ts}

    def emit_pid(self, name: str, pid: int) -> None:
        """Name a process (metadata event)."""
        self._metadata.append(
            {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}}
        )

    def emit_tid(self, name: str, pid: int, tid: int) -> None:
        """Name a thread (metadata event)."""
        event = {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}
        self._metadata.append(event)

    def emit_region(
        self, ts: int, duration: int, pid: int, tid: int, category: str, name: str, args: Event
    ) -> None:
        """A complete (``X``) event of ``duration`` microseconds."""
        event = self._event("X", category, name, pid, tid, ts)
        event["dur"] = duration
        event["args"] = args
        self._events.append(event)

    def _object_event(
        self, ph: str, category: str, name: str, ts: int, pid: int, tid: int, object_id: int
    ) -> Event:
        event = self._event(ph, category, name, pid, tid, ts)
        event["id"] = object_id
        self._events.append(event)
        return event

    def emit_obj_create(
        self, category: str, name: str, ts: int, pid: int, tid: int, object_id: int
    ) -> None:
        """An object creation (``N``) event."""
        self._object_event("N", category, name, ts, pid, tid, object_id)

    def emit_obj_delete(
        self, category: str, name: str, ts: int, pid: int, tid: int, object_id: int
    ) -> None:
        """An object deletion (``D``) event."""
        self._object_event("D", category, name, ts, pid, tid, object_id)

    def emit_obj_snapshot(
        self,
        category: str,
        name: str,
        ts: int,
        pid: int,
        tid: int,
        object_id: int,
        snapshot: Event,
    ) -> None:
        """An object snapshot (``O``) event carrying ``snapshot``."""
        event = self._object_event("O", category, name, ts, pid, tid, object_id)
        event["args"] = {"snapshot": snapshot}

    def emit_flow_start(self, name: str, ts: int, pid: int, tid: int, flow_id: int) -> None:
        """The start (``s``) of a flow arrow."""
        self._object_event("s", "DataFlow", name, ts, pid, tid, flow_id)

    def emit_flow_end(self, name: str, ts: int, pid: int, tid: int, flow_id: int) -> None:
        """The end (``t``) of a flow arrow."""
        self._object_event("t", "DataFlow", name, ts, pid, tid, flow_id)

    def emit_counter(
        self, category: str, name: str, pid: int, ts: int, counter: str, value: int
    ) -> None:
        """One counter (``C``) value."""
        self.emit_counters(category, name, pid, ts, {counter: value})

    def emit_counters(
        self, category: str, name: str, pid: int, ts: int, counters: dict[str, Any]
    ) -> None:
        """Several counter values in one ``C`` event."""
        event = self._event("C", category, name, pid, 0, ts)
        event["args"] = dict(counters)
        self._events.append(event)

    def _emit_op_run(self, dev: _Device, lo: int, hi: int) -> None:
        """The op events of nodes ``[lo, hi)`` of ``dev`` (a :class:`Timeline`'s)."""
        if lo < hi:
            self._events.append(_OpRun(dev, lo, hi))

    def _emit_flow(
        self, name: str, flow_id: int, origin: tuple[int, int, int], target: tuple[int, int, int]
    ) -> None:
        """A flow's start and end events (a :class:`Timeline`'s)."""
        self._events.append(_Flow(name, flow_id, origin, target))

    def format_to_string(self, pretty: bool = False) -> str:
        """The trace as JSON (``pretty``: indented by 4, as TensorFlow writes it)."""
        with _collection_paused():
            return self._format(pretty)

    def _format(self, pretty: bool) -> str:
        """:meth:`format_to_string`, without its pause of garbage collection."""
        if not pretty:
            events = [
                event
                for item in self._events
                for event in ((item,) if isinstance(item, dict) else item.events())
            ]
            trace = {"traceEvents": self._metadata + events}
            return json.dumps(trace, separators=(",", ":"))
        if not self._metadata and not self._events:
            return _EMPTY_TRACE
        parts = [_pretty(event, _LINE2) for event in self._metadata]
        ops: dict[str, str] = {}
        cache: dict[int, list[str]] = {}
        for item in self._events:
            if isinstance(item, dict):
                parts.append(_pretty(item, _LINE2))
            else:
                item.pretty(parts, ops, cache)
        parts[0] = '{\n    "traceEvents": [' + _LINE2 + parts[0]
        parts[-1] += "\n    ]\n}"
        return ("," + _LINE2).join(parts)


class _Tensor:
    """Lifetime of one output tensor."""

    __slots__ = ("allocator", "create_time", "last_unref", "num_bytes", "object_id", "pid")

    def __init__(
        self,
        object_id: int,
        create_time: int,
        pid: int,
        allocator: str,
        num_bytes: int,
        last_unref: int,
    ) -> None:
        self.object_id = object_id
        self.create_time = create_time
        self.pid = pid
        self.allocator = allocator
        self.num_bytes = num_bytes
        self.last_unref = last_unref  # the latest time the tensor was released


def _split_op_label(label: str) -> tuple[int, int, int]:
    r"""Where ``re.match(r"(.*) = (.*)\((.*)\)", label)`` (TensorFlow's pattern) puts
    its groups: ``(eq, open, close)`` for ``label[:eq]``, ``label[eq + 3:open]`` and
    ``label[open + 1:close]``; ``eq`` is -1 when it does not match.

    The same answer without the regex's backtracking: ``.`` stops at the first
    newline; the greedy groups take the last ``)``, the last ``(`` before it and the
    last `` = `` that ends before that ``(``.
    """
    newline = label.find("\n")
    if newline >= 0:
        label = label[:newline]
    close = label.rfind(")")
    start = label.rfind("(", 0, close) if close > 0 else -1
    eq = label.rfind(" = ", 0, start) if start > 0 else -1
    return eq, start, close


def parse_op_label(label: str) -> tuple[str, str, list[str]]:
    """``name = Op(a, b)`` -> (name, op, inputs); ``("unknown", "unknown", [])`` otherwise."""
    eq, start, close = _split_op_label(label)
    if eq < 0:
        return "unknown", "unknown", []
    inputs = label[start + 1 : close]
    return label[:eq], label[eq + 3 : start], inputs.split(", ") if inputs else []


def parse_kernel_label(label: str, node_name: str) -> tuple[str, str]:
    """(node, op) of a GPU-tracer record: ``@@name:op#`` in the label, else the node name."""
    start = label.find("@@")
    end = label.find("#")
    if start >= 0 and end >= 0 and start + 2 < end:
        node_name = label[start + 2 : end]
    fields = [*node_name.split(":"), "unknown"]
    return fields[0], fields[1]


def _is_gputrace_device(device: str) -> bool:
    return "/stream:" in device or "/memcpy" in device


def _graph_or_none(graph: Any) -> Any:
    """A ``tf.Graph`` as is, a GraphDef (ours, TensorFlow's or bytes) parsed, or None."""
    if graph is None or is_tf_graph(graph):
        return graph
    return parse(pb.GraphDef, graph, "graph")


def _step_stats_input(step_stats: Any) -> tuple[Any, bool]:
    """(the StepStats to read, whether lanes are written into it).

    Our message is used as is and gets the lanes (as TensorFlow's ``Timeline``
    writes them into its input); TensorFlow's is read in place and never
    written; anything else is parsed into a message of our own.

    Raises:
        InvalidInputError: not a StepStats message or its bytes.
    """
    if isinstance(step_stats, pb.StepStats):
        return step_stats, True
    descriptor = getattr(type(step_stats), "DESCRIPTOR", None)
    if getattr(descriptor, "full_name", None) == "tensorflow.StepStats" and callable(
        getattr(step_stats, "SerializeToString", None)
    ):
        return step_stats, False
    return parse(pb.StepStats, step_stats, "step_stats"), False


_node_names: Callable[[Any], str] = attrgetter("node_name")
_labels: Callable[[Any], str] = attrgetter("timeline_label")
_starts: Callable[[Any], int] = attrgetter("all_start_micros")
_durs: Callable[[Any], int] = attrgetter("all_end_rel_micros")
_outputs: Callable[[Any], Any] = attrgetter("output")


def _assign_lanes(starts: Sequence[int], durs: Sequence[int]) -> list[int]:
    """Per node: the first lane whose last node ended strictly before it starts."""
    lane_ends = [0]
    lanes = []
    for start, dur in zip(starts, durs):
        if start > lane_ends[0]:
            lane = 0
        else:
            for lane, last in enumerate(lane_ends):  # noqa: B007 (the lane found is used)
                if start > last:
                    break
            else:
                lane = len(lane_ends)
                lane_ends.append(0)
        lane_ends[lane] = start + dur
        lanes.append(lane)
    return lanes


def _op_labels(
    names: Sequence[str], labels: Sequence[str], one_line: bool = False
) -> tuple[list[str], list[str]]:
    """(ops, input texts) from ``name = Op(a, b)`` labels (``RecvTensor``: no inputs;
    ``one_line``: the labels are known to have no newline).

    :func:`_split_op_label` done for all labels at once: ``rpartition`` at the last
    ``)``, then at the last ``(`` before it, then at the last `` = `` before that
    (each mapped over the whole column). Labels that do not match, and
    ``RecvTensor`` nodes, are then set one by one. Labels with a newline (the
    pattern stops there) go through :func:`_split_op_label`.
    """
    if not one_line and "\n" in "".join(labels):
        return _op_labels_one_by_one(names, labels)
    closes = map(str.rpartition, labels, repeat(")"))
    opens = list(map(str.rpartition, map(_first, closes), repeat("(")))
    equals = list(map(str.rpartition, map(_first, opens), repeat(" = ")))
    ops = list(map(_last, equals))
    inputs = list(map(_last, opens))
    unmatched = list(compress(range(len(equals)), map(not_, map(_middle, equals))))
    for index in chain(unmatched, _indices(names, "RecvTensor")):
        ops[index] = "RecvTensor" if names[index] == "RecvTensor" else "unknown"
        inputs[index] = ""
    return ops, inputs


def _op_labels_one_by_one(
    names: Sequence[str], labels: Sequence[str]
) -> tuple[list[str], list[str]]:
    """:func:`_op_labels` label by label."""
    ops: list[str] = []
    inputs: list[str] = []
    for name, label in zip(names, labels):
        eq, start, close = _split_op_label(label)
        if eq < 0 or name == "RecvTensor":
            ops.append("RecvTensor" if name == "RecvTensor" else "unknown")
            inputs.append("")
        else:
            ops.append(label[eq + 3 : start])
            inputs.append(label[start + 1 : close])
    return ops, inputs


def _indices(items: Sequence[str], value: str) -> list[int]:
    """Where ``value`` is in ``items``."""
    if value not in items:
        return []
    return [index for index, item in enumerate(items) if item == value]


_first: Callable[[tuple[str, str, str]], str] = itemgetter(0)
_middle: Callable[[tuple[str, str, str]], str] = itemgetter(1)
_last: Callable[[tuple[str, str, str]], str] = itemgetter(2)


def _output_counts(devices: Sequence[_Device]) -> Iterator[int]:
    """The number of recorded outputs of every node of ``devices``, in order."""
    for dev in devices:
        yield from map(len, map(_outputs, dev.stats.node_stats))


class Timeline:
    """Chrome trace of one step's StepStats (``tensorflow.python.client.timeline``).

    Args:
        step_stats: a StepStats: ours, TensorFlow's, or its serialized bytes.
        graph: the executed graph (``tf.Graph``, a GraphDef or its bytes) or None;
            kept for compatibility, the trace does not use it.

    Raises:
        InvalidInputError: ``step_stats`` or ``graph`` is not such a message.
    """

    def __init__(self, step_stats: Any, graph: Any = None) -> None:
        self._origin_step_stats, self._writes_lanes = _step_stats_input(step_stats)
        self._step_stats: Any = None
        self._graph = _graph_or_none(graph)
        self._chrome_trace = ChromeTraceFormatter()
        self._next_pid = 0
        self._allocators_pid = -1
        self._device_pids: dict[str, int] = {}
        self._tensor_pids: dict[str, int] = {}
        self._tensors: dict[str, _Tensor] = {}
        self._next_flow_id = 0
        self._flow_starts: dict[str, tuple[int, int, int]] = {}
        self._allocator_maximums: dict[str, AllocationMaximum] = {}
        self._pending: list[list[_Device]] = []  # traces whose tensors are not tracked yet

    @property
    def graph(self) -> Any:
        """The graph given to the constructor (GraphDefs as our message)."""
        return self._graph

    def _alloc_pid(self) -> int:
        pid = self._next_pid
        self._next_pid += 1
        return pid

    def _alloc_flow_id(self) -> int:
        flow_id = self._next_flow_id
        self._next_flow_id += 1
        return flow_id

    def _preprocess_op_time(self, op_time: str) -> None:
        """Pick the step stats to draw; stretch ``/job`` ops over their GPU kernels."""
        origin = self._origin_step_stats
        if op_time == "schedule":
            self._step_stats = origin
            return
        stats = pb.StepStats()
        if isinstance(origin, pb.StepStats):
            stats.CopyFrom(origin)
        else:
            stats.ParseFromString(origin.SerializeToString())
        self._step_stats = stats
        kernels: dict[str, tuple[int, int]] = {}
        for dev in stats.dev_stats:
            if "/stream:all" not in dev.device:
                continue
            for kernel in dev.node_stats:
                name, _op = parse_kernel_label(kernel.timeline_label, kernel.node_name)
                start = kernel.all_start_micros
                end = start + kernel.all_end_rel_micros
                first, last = kernels.get(name, (start, end))
                kernels[name] = (min(first, start), max(last, end))
        for dev in stats.dev_stats:
            if "/stream:all" in dev.device or "/job" not in dev.device:
                continue
            for op in dev.node_stats:
                span = kernels.get(op.node_name)
                if span is None:
                    continue
                end = max(span[1], op.all_start_micros + op.all_end_rel_micros)
                if op_time == "gpu":
                    op.all_start_micros = span[0]
                op.all_end_rel_micros = end - op.all_start_micros

    def _allocate_pids(self) -> None:
        self._allocators_pid = self._alloc_pid()
        self._chrome_trace.emit_pid("Allocators", self._allocators_pid)
        for dev in self._step_stats.dev_stats:
            device_pid = self._device_pids[dev.device] = self._alloc_pid()
            tensors_pid = self._tensor_pids[dev.device] = self._alloc_pid()
            self._chrome_trace.emit_pid(dev.device + " Compute", device_pid)
            self._chrome_trace.emit_pid(dev.device + " Tensors", tensors_pid)

    def _read_devices(self, write_lanes: bool) -> list[_Device]:
        """Every device's node columns and lanes (written into the nodes if asked)."""
        devices = []
        for dev in self._step_stats.dev_stats:
            nodes = list(dev.node_stats)  # one wrapper per node for the four reads
            names = list(map(_node_names, nodes))
            labels = list(map(_labels, nodes))
            starts = list(map(_starts, nodes))
            durs = list(map(_durs, nodes))
            lanes = _assign_lanes(starts, durs)
            if write_lanes:
                for stats, lane in zip(nodes, lanes):
                    stats.thread_id = lane
            device = dev.device
            # shown names, ops and inputs are parts of these (or "unknown"):
            plain = _is_plain(chain(names, labels))
            if _is_gputrace_device(device):
                kernels = [parse_kernel_label(*pair) for pair in zip(labels, names)]
                shown = [kernel[0] for kernel in kernels]
                ops = [kernel[1] for kernel in kernels]
                inputs = [""] * len(names)
            else:
                shown = names
                ops, inputs = _op_labels(names, labels, one_line=plain)
            pids = (self._device_pids[device], self._tensor_pids[device])
            devices.append(
                _Device(dev, *pids, names, starts, durs, lanes, shown, ops, inputs, plain)
            )
        return devices

    def _produce_tensors(self, devices: list[_Device], show_memory: bool) -> None:
        """One tensor per node output, alive from the node's start to its end."""
        trace = self._chrome_trace
        tensors = self._tensors
        flow_starts = self._flow_starts
        for dev in devices:
            device_pid, tensors_pid = dev.device_pid, dev.tensors_pid
            outputs = map(_outputs, dev.stats.node_stats)
            for node, start, dur, tid, node_outputs in zip(
                dev.names, dev.starts, dev.durs, dev.lanes, outputs
            ):
                if not node_outputs:
                    continue
                end = start + dur
                for index, output in enumerate(node_outputs):
                    name = f"{node}:{index}" if index else node
                    desc = output.tensor_description
                    allocation = desc.allocation_description
                    oid = len(tensors)
                    tensors[name] = _Tensor(
                        oid,
                        start,
                        tensors_pid,
                        allocation.allocator_name,
                        allocation.requested_bytes,
                        end,
                    )
                    flow_starts[name] = (end, device_pid, tid)
                    if show_memory:
                        trace.emit_obj_create("Tensor", name, start, tensors_pid, tid, oid)
                        snapshot = {"tensor_description": str(desc).replace('"', "")}
                        trace.emit_obj_snapshot(
                            "Tensor", name, end - 1, tensors_pid, tid, oid, snapshot
                        )

    def _flow_starts_only(self, devices: list[_Device]) -> None:
        """Where each output is produced, without tracking the tensors (yet)."""
        flow_starts = self._flow_starts
        for dev in devices:
            counts = list(map(len, map(_outputs, dev.stats.node_stats)))
            origins = zip(map(add, dev.starts, dev.durs), repeat(dev.device_pid), dev.lanes)
            extra = (
                [
                    (f"{node}:{index}", origin)
                    for node, count, origin in zip(dev.names, counts, origins)
                    for index in range(1, count)
                ]
                if max(counts, default=0) > 1
                else []
            )
            if extra and not {name for name, _origin in extra}.isdisjoint(dev.names):
                self._flow_starts_in_order(dev, counts)
                continue
            origins = zip(map(add, dev.starts, dev.durs), repeat(dev.device_pid), dev.lanes)
            flow_starts.update(zip(compress(dev.names, counts), compress(origins, counts)))
            flow_starts.update(extra)

    def _flow_starts_in_order(self, dev: _Device, counts: list[int]) -> None:
        """:meth:`_flow_starts_only` of a device where output names collide with
        node names: written in TensorFlow's order, so the same one wins."""
        flow_starts = self._flow_starts
        for node, start, dur, tid, count in zip(dev.names, dev.starts, dev.durs, dev.lanes, counts):
            origin = (start + dur, dev.device_pid, tid)
            for index in range(count):
                flow_starts[f"{node}:{index}" if index else node] = origin

    def _show_flows_lazily(self, devices: list[_Device]) -> bool:
        """Op events and flows, reading a node's outputs only when a flow depends on it.

        A flow is drawn from an input's producer when that is on another lane or
        device, so most inputs need no check that the producer really recorded the
        output. This applies when nothing can shadow a tensor name: no earlier
        trace on this timeline, node names unique over all devices and without
        ``:`` (so ``node:k`` is only ever output ``k`` of ``node``). Returns False,
        having done nothing, when it does not apply.
        """
        if self._flow_starts or self._tensors:
            return False
        names = list(chain.from_iterable(dev.names for dev in devices))
        positions = dict(zip(names, range(len(names))))
        if len(positions) != len(names) or ":" in "\n".join(names):
            return False
        firsts = list(accumulate([len(dev.names) for dev in devices[:-1]], initial=0))
        lanes = list(chain.from_iterable(dev.lanes for dev in devices))
        pids = list(chain.from_iterable(repeat(dev.device_pid, len(dev.names)) for dev in devices))
        counts: dict[int, int] = {}

        def resolve(name: str) -> tuple[int, int] | None:
            """(position of the producer, output index) that ``name`` would be."""
            position = positions.get(name)
            if position is not None:
                return position, 0
            base, colon, digits = name.rpartition(":")
            if colon and digits.isascii() and digits.isdigit() and digits[0] != "0":
                position = positions.get(base)
                if position is not None:
                    return position, int(digits)
            return None

        every_count: list[int] = []  # all nodes' output counts, once many are needed
        one_by_one = len(names) // 4  # reads before one pass over all nodes is cheaper

        def produced(position: int, index: int) -> bool:
            """Whether the producer at ``position`` recorded output ``index``."""
            if every_count:
                return index < every_count[position]
            count = counts.get(position)
            if count is None:
                if len(counts) >= one_by_one:
                    every_count.extend(_output_counts(devices))
                    return index < every_count[position]
                number = bisect_right(firsts, position) - 1
                node = devices[number].stats.node_stats[position - firsts[number]]
                count = counts[position] = len(node.output)
            return index < count

        def source(name: str, pid: int, tid: int) -> tuple[str, int] | None:
            """(tensor name, producer position) of an input that gets a flow."""
            found = resolve(name)
            cut = name.rfind("/_")
            if cut <= 0:  # the name is final
                if found is None:
                    return None
                position, output = found
                if pids[position] == pid and lanes[position] == tid:
                    return None  # no flow, whether or not the output was recorded
                return (name, position) if produced(position, output) else None
            if found is None or not produced(*found):  # TensorFlow cuts a "/_N" suffix
                name = name[:cut]
                found = resolve(name)
                if found is None or not produced(*found):
                    return None
            return name, found[0]

        columns = _FlowSources(
            pids,
            lanes,
            list(chain.from_iterable(dev.starts for dev in devices)),
            list(chain.from_iterable(dev.durs for dev in devices)),
        )
        get = positions.get
        for dev in devices:
            pid = dev.device_pid
            targets: list[int] = []
            flow_names: list[str] = []
            sources: list[int] = []
            for index, (text, tid) in enumerate(zip(dev.inputs, dev.lanes)):
                if not text:
                    continue
                for input_name in text.split(", "):
                    position = get(input_name)
                    if position is not None and "/_" not in input_name:
                        if lanes[position] == tid and pids[position] == pid:
                            continue  # the common case: the producer is on the same lane
                        if not produced(position, 0):
                            continue
                        name = input_name
                    else:
                        hit = source(input_name, pid, tid)
                        if hit is None:
                            continue
                        name, position = hit
                        if pids[position] == pid and lanes[position] == tid:
                            continue
                    targets.append(index)
                    flow_names.append(name)
                    sources.append(position)
            first_id = self._next_flow_id
            self._next_flow_id += len(targets)
            self._chrome_trace._events.append(
                _FlowingOps(dev, targets, flow_names, sources, columns, first_id)
            )
        return True

    def _show_compute(
        self, devices: list[_Device], show_dataflow: bool, track: bool, emit: bool = True
    ) -> None:
        """Op events (``emit``); tensor uses from the labels' inputs (``track``); flows."""
        trace = self._chrome_trace
        flow_starts = self._flow_starts
        tensors = self._tensors
        for dev in devices:
            size = len(dev.names)
            done = 0  # op events emitted so far
            if show_dataflow or track:
                pid = dev.device_pid
                lookup = flow_starts.get
                for index, (text, tid) in enumerate(zip(dev.inputs, dev.lanes)):
                    if not text:
                        continue
                    start = dev.starts[index]
                    for name in text.split(", "):
                        origin = lookup(name)
                        if origin is None:
                            cut = name.rfind("/_")  # a Recv inserted by partitioning
                            if cut > 0:
                                name = name[:cut]
                                origin = lookup(name)
                            if origin is None:
                                if emit:
                                    log.debug("Can't find tensor %s - removed by CSE?", name)
                                continue
                        if track:
                            tensor = tensors[name]
                            end = start + dev.durs[index] - 1
                            if end > tensor.last_unref:
                                tensor.last_unref = end
                        if show_dataflow and (origin[1] != pid or origin[2] != tid):
                            trace._emit_op_run(dev, done, index + 1)
                            done = index + 1
                            flow_id = self._alloc_flow_id()
                            trace._emit_flow(name, flow_id, origin, (start, pid, tid))
            if emit:
                trace._emit_op_run(dev, done, size)

    def _track_pending(self) -> None:
        """Do the tensor bookkeeping that earlier calls without ``show_memory`` left."""
        pending, self._pending = self._pending, []
        for devices in pending:
            self._produce_tensors(devices, show_memory=False)
            self._show_compute(devices, show_dataflow=False, track=True, emit=False)

    def _show_memory_counters(self) -> None:
        """Tensor deletions, then one cumulative counter series per allocator."""
        trace = self._chrome_trace
        allocations: dict[str, list[tuple[int, int, str]]] = {}
        for name, tensor in self._tensors.items():
            last = tensor.last_unref
            trace.emit_obj_delete("Tensor", name, last, tensor.pid, 0, tensor.object_id)
            series = allocations.get(tensor.allocator)
            if series is None:
                series = allocations[tensor.allocator] = []
            series.append((tensor.create_time, tensor.num_bytes, name))
            series.append((last, -tensor.num_bytes, name))
        maximums: dict[str, AllocationMaximum] = {}
        pid = self._allocators_pid
        for allocator, series in allocations.items():
            series.sort()
            total = best_total = 0
            best_index = -1
            for index, (ts, num_bytes, _name) in enumerate(series):
                total += num_bytes
                if total > best_total:
                    best_total, best_index = total, index
                trace.emit_counter("Memory", allocator, pid, ts, allocator, total)
            maximums[allocator] = _maximum(series, best_index, best_total)
        self._allocator_maximums = maximums

    def analyze_step_stats(
        self, show_dataflow: bool = True, show_memory: bool = True, op_time: str = "schedule"
    ) -> StepStatsAnalysis:
        """Build the trace (added to this timeline's trace so far) and analyse memory.

        Args:
            show_dataflow: add flow arrows from producers to consumers.
            show_memory: add tensor lifetime events and allocator counters.
            op_time: ``"schedule"`` (as recorded), ``"gpu"`` (ops span their GPU
                kernels) or ``"all"`` (from scheduling to the last kernel's end).

        Returns:
            The trace formatter and the per-allocator maximums.
        """
        with _collection_paused():
            return self._analyze(show_dataflow, show_memory, op_time)

    def _analyze(self, show_dataflow: bool, show_memory: bool, op_time: str) -> StepStatsAnalysis:
        """:meth:`analyze_step_stats`, without its pause of garbage collection."""
        self._track_pending()
        self._preprocess_op_time(op_time)
        self._allocate_pids()
        write_lanes = self._writes_lanes and op_time == "schedule"
        devices = self._read_devices(write_lanes)
        if show_memory:
            self._produce_tensors(devices, show_memory=True)
            self._show_compute(devices, show_dataflow, track=True)
            self._show_memory_counters()
        else:
            if not show_dataflow:
                self._show_compute(devices, show_dataflow=False, track=False)
            elif not self._show_flows_lazily(devices):
                self._flow_starts_only(devices)
                self._show_compute(devices, show_dataflow=True, track=False)
            self._pending.append(devices)
        return StepStatsAnalysis(self._chrome_trace, self._allocator_maximums)

    def generate_chrome_trace_format(
        self, show_dataflow: bool = True, show_memory: bool = False, op_time: str = "schedule"
    ) -> str:
        """The trace as indented JSON text (see :meth:`analyze_step_stats`)."""
        analysis = self.analyze_step_stats(
            show_dataflow=show_dataflow, show_memory=show_memory, op_time=op_time
        )
        return analysis.chrome_trace.format_to_string(pretty=True)


@contextmanager
def _collection_paused() -> Iterator[None]:
    """Cyclic garbage collection off inside (as it was before, after).

    Building a trace creates many objects and frees none that form cycles, so a
    collection in between finds nothing to free; in a process holding a large
    graph, the passes it triggers over the older objects cost a noticeable part
    of a step's trace (about a sixth with ``show_memory``).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _maximum(series: list[tuple[int, int, str]], index: int, total: int) -> AllocationMaximum:
    """The maximum reached at ``series[index]``, with the tensors alive then."""
    if index < 0:
        return AllocationMaximum(0, 0, set())
    alive: set[str] = set()
    for _ts, num_bytes, name in series[: index + 1]:
        if num_bytes < 0:
            alive.discard(name)
        else:
            alive.add(name)
    return AllocationMaximum(series[index][0], total, alive)
