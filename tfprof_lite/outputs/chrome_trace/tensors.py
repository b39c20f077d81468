"""Tensor lifetimes and allocator totals (``show_memory``).

Every recorded output of a node is a tensor, alive from the node's start to its
end, then to the end of its last use (an input of a later node). Tensors are
keyed by name, as in TensorFlow: a node that runs twice in a step replaces its
earlier tensors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from tfprof_lite.outputs.chrome_trace.columns import Device, Origin
from tfprof_lite.outputs.chrome_trace.flows import known_tensor
from tfprof_lite.outputs.chrome_trace.formatter import ChromeTraceFormatter

__all__ = ["AllocationMaximum", "Tensor", "memory_counters", "produce_tensors", "track_uses"]


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


class Tensor:
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


def produce_tensors(
    devices: Sequence[Device],
    tensors: dict[str, Tensor],
    table: dict[str, Origin],
    trace: ChromeTraceFormatter | None,
) -> None:
    """One tensor per recorded node output into ``tensors``, where it is produced
    into ``table``; with a ``trace``, its creation and snapshot events."""
    for dev in devices:
        device_pid, tensors_pid = dev.device_pid, dev.tensors_pid
        for node, start, dur, tid, node_outputs in zip(
            dev.names,
            dev.starts,
            dev.durs,
            dev.lanes,
            (node.output for node in dev.stats.node_stats),
        ):
            end = start + dur
            for index, output in enumerate(node_outputs):
                name = f"{node}:{index}" if index else node
                desc = output.tensor_description
                allocation = desc.allocation_description
                oid = len(tensors)
                tensors[name] = Tensor(
                    oid,
                    start,
                    tensors_pid,
                    allocation.allocator_name,
                    allocation.requested_bytes,
                    end,
                )
                table[name] = (device_pid, tid, end)
                if trace is not None:
                    trace.emit_obj_create("Tensor", name, start, tensors_pid, tid, oid)
                    snapshot = {"tensor_description": str(desc).replace('"', "")}
                    trace.emit_obj_snapshot(
                        "Tensor", name, end - 1, tensors_pid, tid, oid, snapshot
                    )


def track_uses(devices: Sequence[Device], tensors: dict[str, Tensor], log_missing: bool) -> None:
    """Extend each tensor's life to the end of the last node using it (``log_missing``:
    log the inputs that are no tensor)."""
    for dev in devices:
        for text, start, dur in zip(dev.inputs, dev.starts, dev.durs):
            if not text:
                continue
            end = start + dur - 1
            for input_name in text.split(", "):
                name = known_tensor(input_name, tensors, log_missing)
                if name is not None:
                    tensor = tensors[name]
                    if end > tensor.last_unref:
                        tensor.last_unref = end


def memory_counters(
    trace: ChromeTraceFormatter, tensors: dict[str, Tensor], pid: int
) -> dict[str, AllocationMaximum]:
    """Tensor deletions, then one cumulative counter series per allocator (process
    ``pid``); returns each allocator's maximum."""
    allocations: dict[str, list[tuple[int, int, str]]] = {}
    for name, tensor in tensors.items():
        last = tensor.last_unref
        trace.emit_obj_delete("Tensor", name, last, tensor.pid, 0, tensor.object_id)
        series = allocations.get(tensor.allocator)
        if series is None:
            series = allocations[tensor.allocator] = []
        series.append((tensor.create_time, tensor.num_bytes, name))
        series.append((last, -tensor.num_bytes, name))
    maximums: dict[str, AllocationMaximum] = {}
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
    return maximums


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
