"""A profile as a window of timed events, with its steps as spans over it.

An XSpace holds every event the profiler saw between its start and its stop;
the steps (:mod:`tfprof_lite.formats.xspace.read.steps`) are spans over that window
and need not cover it: a kernel may run before the first step, after the last,
or between two. The per-step records of the model (``ProfileModel.steps``)
keep only what falls inside a step; :class:`EventWindow` keeps the rest too,
for the analyses that count over the whole window (kernel statistics, the
overview's step coverage, the op statistics, the memory curve).

Built once per XSpace by its conversion (:mod:`tfprof_lite.formats.xspace.read.window`)
and kept as ``ProfileModel.event_window``; ``None`` for a TF1 RunMetadata
profile, whose steps are all there is.

Times are nanoseconds since the Unix epoch (the file's origin plus each
event's offset), durations exact nanoseconds (picoseconds floored), as the
GPU tracer records of the steps keep them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from tfprof_lite.base.arrays import I64, empty_i64
from tfprof_lite.model.step_records import LANE_ALL_STREAMS, LANE_COPIES, LANE_GPU_ACTIVITY, Lane

__all__ = [
    "outside_lane",
    "window_lane",
    "DATASET_TYPE",
    "KIND_COPY",
    "KIND_KERNEL",
    "KIND_NAMES",
    "KIND_OTHER",
    "DeviceEvents",
    "EventWindow",
    "HostOps",
    "MemoryEvents",
]

I8 = npt.NDArray[np.int8]

#: A device event's kind (``DeviceEvents.kind``): a kernel (it has launch
#: details), a copy (``Memcpy*`` or copy details), or any other GPU activity.
KIND_KERNEL, KIND_COPY, KIND_OTHER = 0, 1, 2
KIND_NAMES = ("kernel", "memcpy", "other")
#: The lane that counts a device event of each kind: a kernel on all streams, a
#: copy on the copies, other activity on the GPU's activity lane.
_LANE_KINDS = {KIND_KERNEL: LANE_ALL_STREAMS, KIND_COPY: LANE_COPIES, KIND_OTHER: LANE_GPU_ACTIVITY}
#: The op type of a tf.data iterator's host event (``Iterator::...``).
DATASET_TYPE = "Dataset"


@functools.cache
def window_lane(gpu: int, kind: int) -> str:
    """The device string of the lane that counts a device event of ``kind`` on
    GPU ``gpu`` (``/device:GPU:<gpu>/stream:all``, ``/memcpy`` or ``/stream:``), as
    the steps' records name it (:meth:`Lane.device`; made once per pair)."""
    return Lane(_LANE_KINDS[kind], gpu).device()


def outside_lane(gpu: int, kind: int) -> str:
    """``<window_lane> (outside steps)``: the lane the traces draw a device event
    of ``kind`` outside every step on."""
    return f"{window_lane(gpu, kind)} (outside steps)"


@dataclass
class DeviceEvents:
    """Every GPU event of the window (kernels, copies, other activity), in
    columns by event, ordered as the file lists them.

    ``gpu``: the GPU ordinal (``/device:GPU:<n>``); ``stream``: the line id the
    event sits on; ``kind``: :data:`KIND_KERNEL`, :data:`KIND_COPY` or
    :data:`KIND_OTHER`; ``name``: the event's name (the kernel, ``MemcpyH2D``...);
    ``details``: its ``kernel_details`` (launch configuration: registers, shared
    memory, grid, block, occupancy) or ``memcpy_details``, ``""`` when absent;
    ``start_ns``/``dur_ns``: exact times; ``op``/``op_type``: the op the event
    adds its time to, as the steps' records name it (``op_type`` ``""`` when the
    conversion gave the node no type of its own); ``hlo_op``/``program``: its
    XLA instruction and program (``hlo_op`` and ``hlo_module`` stats, ``""``
    when absent); ``step``: the index of the step (into
    ``EventWindow.step_numbers``) whose records hold it, -1 when none does.
    """

    gpu: I64 = field(default_factory=empty_i64)
    stream: I64 = field(default_factory=empty_i64)
    kind: I8 = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    name: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    start_ns: I64 = field(default_factory=empty_i64)
    dur_ns: I64 = field(default_factory=empty_i64)
    op: list[str] = field(default_factory=list)
    op_type: list[str] = field(default_factory=list)
    hlo_op: list[str] = field(default_factory=list)
    program: list[str] = field(default_factory=list)
    step: I64 = field(default_factory=empty_i64)

    def __len__(self) -> int:
        return len(self.start_ns)

    def outside(self) -> npt.NDArray[np.bool_]:
        """Whether each event falls outside every step."""
        return self.step < 0


@dataclass
class HostOps:
    """Every host op event of the window, in columns by event (by line, then
    start): TF ops (``<name>:<type>`` events), tf.data iterator events
    (``Iterator::...``, op type :data:`DATASET_TYPE`), XLA programs' host
    executions (op type ``XlaModule``) and XLA CPU ops.

    ``name``/``op_type``: the op (an iterator's event name); ``line``: the
    index of its line (thread) in :attr:`lines` (``plane/line`` names);
    ``start_ns``/``dur_ns``: exact times; ``self_ns``: the duration less that
    of the op events nested directly inside it on the same line;
    ``step``: the index of the step (into ``EventWindow.step_numbers``) its
    start falls in (as the steps' memory records are placed), -1 when none.
    """

    name: list[str] = field(default_factory=list)
    op_type: list[str] = field(default_factory=list)
    line: I64 = field(default_factory=empty_i64)
    lines: list[str] = field(default_factory=list)
    start_ns: I64 = field(default_factory=empty_i64)
    dur_ns: I64 = field(default_factory=empty_i64)
    self_ns: I64 = field(default_factory=empty_i64)
    step: I64 = field(default_factory=empty_i64)

    def __len__(self) -> int:
        return len(self.start_ns)


@dataclass
class MemoryEvents:
    """Every allocator event of the window (``MemoryAllocation`` and
    ``MemoryDeallocation`` host events), by time, in columns.

    ``allocator`` indexes :attr:`allocators`; ``delta``: signed bytes (the
    allocation's bytes, negative for a free); ``in_use``: the bytes in use the
    allocator reported after the event (its ``bytes_allocated`` plus
    ``bytes_reserved``: what it held before the window too); ``op``: the
    event's ``tf_op`` stat (``""`` when absent); ``step``: as
    :attr:`HostOps.step`.
    """

    allocators: list[str] = field(default_factory=list)
    allocator: I64 = field(default_factory=empty_i64)
    time_ns: I64 = field(default_factory=empty_i64)
    delta: I64 = field(default_factory=empty_i64)
    in_use: I64 = field(default_factory=empty_i64)
    op: list[str] = field(default_factory=list)
    step: I64 = field(default_factory=empty_i64)

    def __len__(self) -> int:
        return len(self.time_ns)


@dataclass
class EventWindow:
    """One profile's window: its bounds, its steps' spans and its GPU events.

    ``start_ns``/``end_ns``: the first start and last end of any event of the
    file (host or device); ``step_numbers``, ``step_start_ns``,
    ``step_end_ns``: each step's number and span, by start (a step spans its
    root event, its work's end and the device events its records hold);
    ``device``: :class:`DeviceEvents`; ``host``: :class:`HostOps`;
    ``memory``: :class:`MemoryEvents`.
    """

    start_ns: int = 0
    end_ns: int = 0
    step_numbers: list[int] = field(default_factory=list)
    step_start_ns: I64 = field(default_factory=empty_i64)
    step_end_ns: I64 = field(default_factory=empty_i64)
    device: DeviceEvents = field(default_factory=DeviceEvents)
    host: HostOps = field(default_factory=HostOps)
    memory: MemoryEvents = field(default_factory=MemoryEvents)

    @property
    def duration_ns(self) -> int:
        """The window's length."""
        return max(self.end_ns - self.start_ns, 0)

    def covered_ns(self) -> int:
        """Time of the window inside at least one step (overlapping spans
        counted once, clipped to the window)."""
        if not len(self.step_start_ns):
            return 0
        order = np.argsort(self.step_start_ns, kind="stable")
        starts = np.clip(self.step_start_ns[order], self.start_ns, self.end_ns).tolist()
        ends = np.clip(self.step_end_ns[order], self.start_ns, self.end_ns).tolist()
        total, reach = 0, self.start_ns
        for start, end in zip(starts, ends):
            start = max(start, reach)
            if end > start:
                total += end - start
                reach = end
        return total

    def coverage(self) -> float:
        """The share (0 to 1) of the window its steps cover; 0 for an empty window."""
        length = self.duration_ns
        return self.covered_ns() / length if length else 0.0

    def outside_steps(self) -> int:
        """How many device events fall outside every step."""
        return int(self.device.outside().sum())
