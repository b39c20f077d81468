"""The client ``Timeline`` (``tensorflow.python.client.timeline``): one step as a trace.

TensorFlow's statefulness is kept: the trace formatter, pids, tensors and flow
ids live in the instance, so a second call on the same ``Timeline`` appends to
the first trace. Without ``show_memory`` the per-tensor bookkeeping (allocators,
sizes, last uses) does not change the trace of the call: it is left pending and
done at the start of the next call on the same instance, so repeated calls still
see TensorFlow's state.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from tfprof_lite.base.foreign import is_tf_graph
from tfprof_lite.outputs.chrome_trace.columns import Device, DeviceOps, Origin, read_devices
from tfprof_lite.outputs.chrome_trace.flows import ProducerIndex, record_outputs, table_flows
from tfprof_lite.outputs.chrome_trace.formatter import ChromeTraceFormatter, collection_paused
from tfprof_lite.outputs.chrome_trace.labels import parse_kernel_label
from tfprof_lite.outputs.chrome_trace.tensors import (
    AllocationMaximum,
    Tensor,
    memory_counters,
    produce_tensors,
    track_uses,
)
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto.codec import parse

__all__ = ["StepStatsAnalysis", "Timeline"]


class StepStatsAnalysis(NamedTuple):
    """What :meth:`Timeline.analyze_step_stats` returns.

    Attributes:
        chrome_trace: the :class:`ChromeTraceFormatter` holding the trace.
        allocator_maximums: allocator name -> :class:`AllocationMaximum`
            (filled only with ``show_memory``).
    """

    chrome_trace: ChromeTraceFormatter
    allocator_maximums: dict[str, AllocationMaximum]


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
        self._tensors: dict[str, Tensor] = {}
        self._next_flow_id = 0
        self._flow_starts: dict[str, Origin] = {}  # where each recorded tensor is produced
        self._allocator_maximums: dict[str, AllocationMaximum] = {}
        self._pending: list[list[Device]] = []  # traces whose tensors are not tracked yet

    @property
    def graph(self) -> Any:
        """The graph given to the constructor (GraphDefs as our message)."""
        return self._graph

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
        with collection_paused():
            return self._analyze(show_dataflow, show_memory, op_time)

    def generate_chrome_trace_format(
        self, show_dataflow: bool = True, show_memory: bool = False, op_time: str = "schedule"
    ) -> str:
        """The trace as indented JSON text (see :meth:`analyze_step_stats`)."""
        analysis = self.analyze_step_stats(
            show_dataflow=show_dataflow, show_memory=show_memory, op_time=op_time
        )
        return analysis.chrome_trace.format_to_string(pretty=True)

    def _analyze(self, show_dataflow: bool, show_memory: bool, op_time: str) -> StepStatsAnalysis:
        """:meth:`analyze_step_stats`, without its pause of garbage collection."""
        self._track_pending()
        self._step_stats = _op_time_stats(self._origin_step_stats, op_time)
        self._allocate_pids()
        write_lanes = self._writes_lanes and op_time == "schedule"
        devices = read_devices(self._step_stats, self._device_pids, self._tensor_pids, write_lanes)
        if show_memory:
            self._show_memory(devices, show_dataflow)
        elif show_dataflow:
            self._show_dataflow(devices)
            self._pending.append(devices)
        else:
            for dev in devices:
                self._chrome_trace._emit_device_ops(DeviceOps(dev))
            self._pending.append(devices)
        return StepStatsAnalysis(self._chrome_trace, self._allocator_maximums)

    def _track_pending(self) -> None:
        """Do the tensor bookkeeping that earlier calls without ``show_memory`` left."""
        pending, self._pending = self._pending, []
        for devices in pending:
            produce_tensors(devices, self._tensors, self._flow_starts, trace=None)
            track_uses(devices, self._tensors, log_missing=False)

    def _allocate_pids(self) -> None:
        """The ``Allocators`` process, then two processes per device."""
        self._allocators_pid = self._alloc_pid()
        self._chrome_trace.emit_pid("Allocators", self._allocators_pid)
        for dev in self._step_stats.dev_stats:
            device_pid = self._device_pids[dev.device] = self._alloc_pid()
            tensors_pid = self._tensor_pids[dev.device] = self._alloc_pid()
            self._chrome_trace.emit_pid(dev.device + " Compute", device_pid)
            self._chrome_trace.emit_pid(dev.device + " Tensors", tensors_pid)

    def _alloc_pid(self) -> int:
        pid = self._next_pid
        self._next_pid += 1
        return pid

    def _show_memory(self, devices: list[Device], show_dataflow: bool) -> None:
        """Tensor events, op events (with flows if asked), tensor deletions, counters."""
        trace = self._chrome_trace
        produce_tensors(devices, self._tensors, self._flow_starts, trace)
        track_uses(devices, self._tensors, log_missing=not show_dataflow)
        for dev in devices:
            if show_dataflow:
                flows = table_flows(dev, self._flow_starts, self._next_flow_id)
                self._next_flow_id += len(flows.targets)
                trace._emit_device_ops(DeviceOps(dev, flows))
            else:
                trace._emit_device_ops(DeviceOps(dev))
        pid = self._allocators_pid
        self._allocator_maximums = memory_counters(trace, self._tensors, pid)

    def _show_dataflow(self, devices: list[Device]) -> None:
        """Op events and flows, without tracking tensors (yet)."""
        first = not self._flow_starts and not self._tensors
        index = ProducerIndex.of(devices) if first else None
        if index is None:
            record_outputs(devices, self._flow_starts)
        for dev in devices:
            if index is not None:
                flows = index.flows(dev, self._next_flow_id)
            else:
                flows = table_flows(dev, self._flow_starts, self._next_flow_id)
            self._next_flow_id += len(flows.targets)
            self._chrome_trace._emit_device_ops(DeviceOps(dev, flows))


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


def _op_time_stats(origin: Any, op_time: str) -> Any:
    """The step stats to draw: ``origin`` for ``"schedule"``, else a copy where the
    ops of ``/job`` devices span their ``stream:all`` kernels (from the first
    kernel's start with ``"gpu"``, to the last one's end)."""
    if op_time == "schedule":
        return origin
    stats = pb.StepStats()
    if isinstance(origin, pb.StepStats):
        stats.CopyFrom(origin)
    else:
        stats.ParseFromString(origin.SerializeToString())
    kernels = _kernel_spans(stats)
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
    return stats


def _kernel_spans(stats: Any) -> dict[str, tuple[int, int]]:
    """Node name -> (first start, last end) of its kernels on ``stream:all`` devices."""
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
    return kernels
