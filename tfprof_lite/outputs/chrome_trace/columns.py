"""A step's nodes as columns, and a device's op events with the flows into them.

Node fields are read into per-device columns (one ``operator.attrgetter`` pass
per field), so few Python objects are kept per node: the garbage collector's
full passes over TensorFlow's objects are what a large step otherwise pays for.
A device's events are one :class:`DeviceOps` item of the trace: its op events
and the :class:`Flows` into them, both written from columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import chain, repeat
from operator import attrgetter
from typing import Any, Callable, NamedTuple

from tfprof_lite.base.lanes import first_free
from tfprof_lite.outputs.chrome_trace.encoder import (
    FLOW_EVENTS,
    PLAIN_OP_EVENT,
    encode_str,
    is_plain,
    op_event_template,
    plain_inputs,
)
from tfprof_lite.outputs.chrome_trace.labels import (
    is_gputrace_device,
    op_labels,
    parse_kernel_label,
)

__all__ = ["NO_FLOWS", "Device", "DeviceOps", "Event", "Flows", "Origin", "read_devices"]

#: A trace event as TensorFlow builds it.
Event = dict[str, Any]
#: Where a flow starts: (pid, tid, ts) of its producer's end.
Origin = tuple[int, int, int]

_node_names: Callable[[Any], str] = attrgetter("node_name")
_labels: Callable[[Any], str] = attrgetter("timeline_label")
_starts: Callable[[Any], int] = attrgetter("all_start_micros")
_durs: Callable[[Any], int] = attrgetter("all_end_rel_micros")


class Device(NamedTuple):
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


def assign_lanes(starts: Sequence[int], durs: Sequence[int]) -> list[int]:
    """Per node: the first lane whose last node ended strictly before it starts,
    lane 0 taken until time 0 (TensorFlow's ``Timeline``;
    :func:`~tfprof_lite.base.lanes.first_free`)."""
    return first_free(starts, durs, strict=True, first_lane_end=0)[0]


def read_devices(
    step_stats: Any, device_pids: dict[str, int], tensor_pids: dict[str, int], write_lanes: bool
) -> list[Device]:
    """Every device's node columns and lanes (written into the nodes if asked)."""
    return [
        _read_device(dev, device_pids[dev.device], tensor_pids[dev.device], write_lanes)
        for dev in step_stats.dev_stats
    ]


def _read_device(dev: Any, device_pid: int, tensors_pid: int, write_lanes: bool) -> Device:
    """One device's columns (see :func:`read_devices`)."""
    nodes = list(dev.node_stats)  # one wrapper per node for the four reads
    names = list(map(_node_names, nodes))
    labels = list(map(_labels, nodes))
    starts = list(map(_starts, nodes))
    durs = list(map(_durs, nodes))
    lanes = assign_lanes(starts, durs)
    if write_lanes:
        for stats, lane in zip(nodes, lanes):
            stats.thread_id = lane
    # shown names, ops and inputs are parts of these (or "unknown"):
    plain = is_plain(chain(names, labels))
    if is_gputrace_device(dev.device):
        kernels = [parse_kernel_label(*pair) for pair in zip(labels, names)]
        shown = [kernel[0] for kernel in kernels]
        ops = [kernel[1] for kernel in kernels]
        inputs = [""] * len(names)
    else:
        shown = names
        ops, inputs = op_labels(names, labels)
    columns = (names, starts, durs, lanes, shown, ops, inputs, plain)
    return Device(dev, device_pid, tensors_pid, *columns)


class Flows(NamedTuple):
    """The flows into a device's nodes, as columns: flow ``k`` (id ``first_id + k``)
    carries tensor ``names[k]`` from ``origins[k]`` to the start of node
    ``targets[k]``; targets are in node order."""

    targets: list[int]
    names: list[str]
    origins: list[Origin]
    first_id: int


#: A device without flows.
NO_FLOWS = Flows([], [], [], 0)


class DeviceOps(NamedTuple):
    """The op events of every node of a device, each followed by the flows into it."""

    dev: Device
    flows: Flows = NO_FLOWS

    def pretty(self, out: list[str], ops: dict[str, str]) -> None:
        """Append the events' indented text to ``out`` (``ops``: op names already
        JSON-encoded in this trace)."""
        op_events = _plain_op_events(self.dev) if self.dev.plain else _op_events(self.dev, ops)
        if self.flows.targets:
            out.extend(_merged(self.flows.targets, op_events, self._flow_texts()))
        else:
            out.extend(op_events)

    def _flow_texts(self) -> list[str]:
        """Each flow's two events as one part of the event list."""
        dev, (targets, names, origins, first_id) = self
        encoded = list(map(encode_str, names))
        ids = range(first_id, first_id + len(targets))
        origin_pids, origin_tids, origin_ts = zip(*origins)
        tids = map(dev.lanes.__getitem__, targets)
        starts = map(dev.starts.__getitem__, targets)
        pid = repeat(dev.device_pid)
        rows = zip(
            encoded, origin_pids, origin_tids, origin_ts, ids, encoded, pid, tids, starts, ids
        )
        return list(map(FLOW_EVENTS.__mod__, rows))

    def events(self) -> Iterator[Event]:
        """Each event as the dict TensorFlow builds."""
        dev, (targets, names, origins, first_id) = self
        ends = [(dev.device_pid, dev.lanes[target], dev.starts[target]) for target in targets]
        flows = [
            [_flow_event("s", name, origin, i), _flow_event("t", name, end, i)]
            for name, origin, end, i in zip(
                names, origins, ends, range(first_id, first_id + len(ends))
            )
        ]
        for item in _merged(targets, _op_event_dicts(dev), flows):
            if isinstance(item, list):
                yield from item
            else:
                yield item


def _merged(
    targets: Sequence[int], op_events: Sequence[Any], flows: Iterable[Any]
) -> Iterator[Any]:
    """The op events with each flow after the event of its target."""
    done = 0
    for target, flow in zip(targets, flows):
        if done <= target:
            yield from op_events[done : target + 1]
            done = target + 1
        yield flow
    yield from op_events[done:]


def _plain_op_events(dev: Device) -> list[str]:
    """The written op events of every node of a device whose strings need no escaping.

    Every event by ``map`` over one template, the inputs of an event written as
    ``"".join`` of keys and names first.
    """
    rows = zip(
        dev.ops,
        repeat(dev.device_pid),
        dev.lanes,
        dev.starts,
        dev.durs,
        dev.shown,
        dev.ops,
        plain_inputs(dev.inputs),
    )
    return list(map(PLAIN_OP_EVENT.__mod__, rows))


def _op_events(dev: Device, ops: dict[str, str]) -> list[str]:
    """The written op events of every node of a device (``ops``: encoded op names).

    The inputs are encoded as one string and split again: the encoding maps
    ``,`` and space to themselves and nothing else to them, so the pieces are the
    encoded inputs.
    """
    pid = dev.device_pid
    no_inputs = op_event_template(0)
    out: list[str] = []
    append = out.append
    for op, tid, ts, dur, node, inputs in zip(
        dev.ops, dev.lanes, dev.starts, dev.durs, dev.shown, dev.inputs
    ):
        encoded_op = ops.get(op)
        if encoded_op is None:
            encoded_op = ops[op] = encode_str(op)
        if not inputs:
            append(no_inputs % (encoded_op, pid, tid, ts, dur, encode_str(node), encoded_op))
            continue
        names = [f'"{name}"' for name in encode_str(inputs)[1:-1].split(", ")]
        template = op_event_template(len(names))
        append(template % (encoded_op, pid, tid, ts, dur, encode_str(node), encoded_op, *names))
    return out


def _op_event_dicts(dev: Device) -> list[Event]:
    """Each op event of a device as the dict TensorFlow builds."""
    pid = dev.device_pid
    out: list[Event] = []
    for op, tid, ts, dur, node, inputs in zip(
        dev.ops, dev.lanes, dev.starts, dev.durs, dev.shown, dev.inputs
    ):
        args: Event = {"name": node, "op": op}
        for index, name in enumerate(inputs.split(", ") if inputs else ()):
            args[f"input{index}"] = name
        out.append(
            {
                "ph": "X",
                "cat": "Op",
                "name": op,
                "pid": pid,
                "tid": tid,
                "ts": ts,
                "dur": dur,
                "args": args,
            }
        )
    return out


def _flow_event(ph: str, name: str, at: Origin, flow_id: int) -> Event:
    """A flow's start (``s``) or end (``t``) event as the dict TensorFlow builds."""
    pid, tid, ts = at
    return {
        "ph": ph,
        "cat": "DataFlow",
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": ts,
        "id": flow_id,
    }
