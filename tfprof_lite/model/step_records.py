"""The model's typed ingest contract for many steps' records at once.

A producer that reads steps out of a window of events (an XSpace,
:mod:`tfprof_lite.formats.xspace.read.rows`) hands them to the model as one
:class:`StepRecords`: every record of every step in columns, grouped by step,
then by lane (first seen in the step first), then in the order the producer
added them. Nothing in it is a TensorFlow 1 device string, a timeline label
or a serialized message:

* a record's **lane** is a parsed :class:`Lane` (the host, a GPU and one of its
  streams, its copy lanes...);
* its **role** says what it is (:data:`ROLE_OP`, :data:`ROLE_KERNEL`,
  :data:`ROLE_COPY`, :data:`ROLE_ACTIVITY`);
* its node, its kernel (or copy kind) and its launch configuration (the
  file's ``kernel_details`` / ``memcpy_details``) are ids into one table of
  strings, each distinct value once;
* its times are exact: picosecond offsets from ``origin_ns``.

:func:`tfprof_lite.model.step_batch.add_records` adds them to a
:class:`~tfprof_lite.model.profile.ProfileModel` as tfprof's ``AddStep`` would
the RunMetadata of each step: the model renders each lane's device string and
each kernel record's label itself, once per distinct value, for the views that
show them as TensorFlow 1 did.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from tfprof_lite.base.arrays import I32, I64, empty_i32, empty_i64
from tfprof_lite.model.memory_records import MemoryRecords
from tfprof_lite.model.step_spans import StepSpan

__all__ = [
    "HOST_DEVICE",
    "LANE_ALL_STREAMS",
    "LANE_COPIES",
    "LANE_COPY",
    "LANE_GPU",
    "LANE_GPU_ACTIVITY",
    "LANE_HOST",
    "LANE_STREAM",
    "ROLE_ACTIVITY",
    "ROLE_COPY",
    "ROLE_KERNEL",
    "ROLE_OP",
    "Lane",
    "StepRecords",
    "micros",
]

I8 = npt.NDArray[np.int8]

#: The host's device, where host ops run.
HOST_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"

#: Lane kinds: the host; a GPU stream (kernels, and copies' first record);
#: all streams of a GPU (every kernel's second record); a stream's copies;
#: all copies of a GPU; any other activity of a GPU; the GPU itself (the
#: device of memory records of a GPU allocator that no op's record holds).
LANE_HOST, LANE_STREAM, LANE_ALL_STREAMS, LANE_COPY, LANE_COPIES, LANE_GPU_ACTIVITY, LANE_GPU = (
    range(7)
)

#: Record roles: an op run on the host; a GPU kernel; a GPU copy; other GPU
#: activity (a sync, a memset...).
ROLE_OP, ROLE_KERNEL, ROLE_COPY, ROLE_ACTIVITY = range(4)


@dataclass(frozen=True)
class Lane:
    """Where a record ran: ``kind`` (``LANE_*``), the GPU ``ordinal`` and
    ``stream`` (line id) where they apply, and a copy lane's ``copy`` kind
    (``MemcpyHtoD``...)."""

    kind: int
    ordinal: int = 0
    stream: int = 0
    copy: str = ""

    def device(self) -> str:
        """The device string TensorFlow 1's GPU tracer gives this lane."""
        if self.kind == LANE_HOST:
            return HOST_DEVICE
        if self.kind == LANE_GPU:
            return f"/job:localhost/replica:0/task:0/device:GPU:{self.ordinal}"
        gpu = f"/device:GPU:{self.ordinal}"
        if self.kind == LANE_STREAM:
            return f"{gpu}/stream:{self.stream}"
        if self.kind == LANE_ALL_STREAMS:
            return f"{gpu}/stream:all"
        if self.kind == LANE_COPY:
            return f"{gpu}/stream:{self.stream}<{self.copy}>"
        if self.kind == LANE_COPIES:
            return f"{gpu}/memcpy"
        return f"{gpu}/stream:"


@dataclass
class StepRecords:
    """Every record of many steps (see the module docstring).

    Per step ``i``: ``numbers[i]``, its rows ``bounds[i]:bounds[i + 1]`` and its
    own span ``spans[i]`` (None: none). Per row: ``lane`` (into ``lanes``),
    ``role`` (``ROLE_*``), ``node`` (the node's name, into ``texts``),
    ``kernel`` (a kernel's or copy's name, into ``texts``; -1: none),
    ``details`` (its launch configuration or copy details as the file gives
    them, into ``texts``; -1: none) and ``start_ps``/``end_ps`` (offsets from
    ``origin_ns``). ``memory``: the steps' memory records (None: none), each
    placed in its step as the model reads a RunMetadata's
    (:mod:`tfprof_lite.model.record_memory`).
    """

    numbers: list[int] = field(default_factory=list)
    bounds: I64 = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    lanes: list[Lane] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    lane: I32 = field(default_factory=empty_i32)
    role: I8 = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    node: I32 = field(default_factory=empty_i32)
    kernel: I32 = field(default_factory=empty_i32)
    details: I32 = field(default_factory=empty_i32)
    origin_ns: int = 0
    start_ps: I64 = field(default_factory=empty_i64)
    end_ps: I64 = field(default_factory=empty_i64)
    spans: list[StepSpan | None] = field(default_factory=list)
    memory: MemoryRecords | None = None

    def __len__(self) -> int:
        return len(self.lane)

    @property
    def steps(self) -> int:
        """How many steps."""
        return len(self.numbers)

    def take(self, first: int, last: int) -> StepRecords:
        """Steps ``first:last`` (views of these columns; the tables shared)."""
        low, high = int(self.bounds[first]), int(self.bounds[last])
        return StepRecords(
            numbers=self.numbers[first:last],
            bounds=self.bounds[first : last + 1] - low,
            lanes=self.lanes,
            texts=self.texts,
            lane=self.lane[low:high],
            role=self.role[low:high],
            node=self.node[low:high],
            kernel=self.kernel[low:high],
            details=self.details[low:high],
            origin_ns=self.origin_ns,
            start_ps=self.start_ps[low:high],
            end_ps=self.end_ps[low:high],
            spans=self.spans[first:last],
            memory=None if self.memory is None else self.memory.of_steps(first, last),
        )

    def micros(self, ps: I64) -> I64:
        """Absolute microseconds (floored) of offsets ``ps``."""
        return micros(self.origin_ns, ps)


def micros(origin_ns: int, ps: I64) -> I64:
    """Absolute microseconds (floored) of picosecond offsets ``ps`` from ``origin_ns``."""
    origin_us, rest_ns = divmod(origin_ns, 1000)
    return (origin_us + (ps + rest_ns * 1000) // 1_000_000).astype(np.int64)
