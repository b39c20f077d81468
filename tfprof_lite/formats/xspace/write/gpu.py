"""The GPU planes of an exported XSpace, from a profile's GPU tracer records.

One ``/device:GPU:<n>`` plane per GPU (plane id n), one line per stream
(``Stream #<id>``). The records come from each step's
:class:`~tfprof_lite.model.execs.KernelColumns` (RunMetadata with FULL_TRACE):

* kernels on ``/device:GPU:N/stream:<id>`` become events named by their
  kernel, with ``kernel_details`` (``regs:… static_shared:… dynamic_shared:…
  grid:… block:… occ_pct:…``, rebuilt from the label's launch
  configuration), ``tf_op`` (``name:type`` of the launching op, when one is
  known) and ``correlation_id``;
* copies on ``/device:GPU:N/stream:<id><MemcpyH2D>`` become ``MemcpyH2D``
  (``MemcpyD2H``...) events with ``memcpy_details``;
* without per-stream records (older formats) the ``stream:all`` and
  ``memcpy`` records are used, on lines ``stream:all`` and ``memcpy``;
* ``cuStreamSynchronize`` records (``/sync``: the host waiting for the GPU,
  part of the step) go on a line ``sync``; records on a bare ``stream:``
  (memsets, no stream id) are not written;
* :func:`add_step_bounds` adds, on a line ``Steps`` of every GPU
  plane, a zero-length ``Step begin`` and ``Step end`` at each step's first
  start and last end, so the device span XProf takes for the step time is
  the step's wall time.

A step without tracer records (a profile loaded from a ProfileProto) writes
its accelerator times per op instead, one event per op execution named by
the op, with ``tf_op``. Every written event gets a new ``correlation_id``;
:class:`GpuRecord` tells the host plane where to put the matching launch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tfprof_lite.analysis.kernel_launch import LaunchConfig, split_label
from tfprof_lite.analysis.kernels import KIND_KERNEL, KIND_MEMCPY, KIND_SYNC, kernel_name
from tfprof_lite.base.device_names import STREAM, gpu_ordinal, tracer_parts
from tfprof_lite.formats.xspace.write.planes import PS_PER_US, PlaneBuilder, StatValue
from tfprof_lite.model.cluster import task_of
from tfprof_lite.model.execs import KIND_ACCELERATOR, KernelColumns
from tfprof_lite.model.profile import ProfileModel

__all__ = [
    "STEP_BOUNDS_LINE",
    "GpuPlanes",
    "GpuRecord",
    "add_step_bounds",
    "details_text",
    "gpu_records",
]

_BYTES_RE = re.compile(r"(?:bytes|size):(\d+)|(\d+) bytes")
_ALL_LINE, _MEMCPY_LINE, _SYNC_LINE = 1 << 20, (1 << 20) + 1, (1 << 20) + 2
_BOUNDS_LINE = (1 << 20) + 3
#: Name of the GPU line holding each step's zero-length bound events: the name
#: of XProf's own derived step line (whose line id differs), which tfprof_lite's
#: XSpace reader skips as repeating other events.
STEP_BOUNDS_LINE = "Steps"
#: Kind of a step-bound record (its launch is a ``cudaLaunchKernel``).
KIND_STEP_BOUND = "step_bound"


@dataclass(frozen=True)
class GpuRecord:
    """One written device event: its step, start (µs), correlation id and kind."""

    step: int
    start_us: int
    correlation_id: int
    kind: str


@dataclass
class GpuPlanes:
    """The GPU planes and the records written on them."""

    planes: list[PlaneBuilder] = field(default_factory=list)
    records: list[GpuRecord] = field(default_factory=list)


def details_text(config: LaunchConfig) -> str:
    """``kernel_details`` as the GPU tracer writes it (unknown fields left out)."""
    parts = [
        ("regs", config.registers_per_thread),
        ("static_shared", config.static_shared_bytes),
        ("dynamic_shared", config.dynamic_shared_bytes),
        ("grid", config.grid),
        ("block", config.block),
        ("occ_pct", None if config.occupancy_pct is None else f"{config.occupancy_pct:g}"),
    ]
    return " ".join(f"{key}:{value}" for key, value in parts if value is not None)


class _Writer:
    def __init__(self, model: ProfileModel, origin_ns: int, task: str | None) -> None:
        self.model = model
        self.task = task
        self.origin_ns = origin_ns
        self.out = GpuPlanes()
        self._planes: dict[int, PlaneBuilder] = {}

    def plane(self, ordinal: int) -> PlaneBuilder:
        got = self._planes.get(ordinal)
        if got is None:
            got = self._planes[ordinal] = PlaneBuilder(
                ordinal, f"/device:GPU:{ordinal}", self.origin_ns
            )
            self.out.planes.append(got)
        return got

    def add(
        self,
        step: int,
        where: tuple[int, int, str],
        name: str,
        times: tuple[int, int],
        kind: str,
        stats: dict[str, StatValue],
    ) -> None:
        """One device event (``where``: GPU, line id, line name; ``times``: start µs, ns)."""
        ordinal, line_id, line_name = where
        corr = len(self.out.records) + 1
        plane = self.plane(ordinal)
        line = plane.line(line_id, line_name)
        stats = {**stats, "correlation_id": corr}
        plane.add_ps(line, name, times[0] * PS_PER_US, times[1] * 1000, stats)
        self.out.records.append(GpuRecord(step, times[0], corr, kind))

    def tf_op(self, name: str) -> str:
        """``name:type`` of the op a record's ``node_name`` names, or ""."""
        op, sep, rest = name.partition(":")
        nid = self.model.index.get(op)
        if nid is not None and self.model.ops[nid] != op:
            return f"{op}:{self.model.ops[nid]}"
        return f"{op}:{rest.split('#', 1)[0]}" if sep and rest else ""


def _kind(sub: str, name: str, label: str) -> str:
    if "<" in sub or sub == "memcpy":
        return KIND_MEMCPY
    if " regs:" in label:
        return KIND_KERNEL
    if ":memcpy" in name.lower() or label.lower().startswith("memcpy"):
        return KIND_MEMCPY
    return KIND_KERNEL


def _placed(cols: KernelColumns) -> list[tuple[int, int, int, str]]:
    """(record, GPU, line id, line name) of the records to write."""
    parsed = []
    per_stream: set[int] = set()
    for i, dev in enumerate(cols.dev):
        parts = tracer_parts(dev)
        gpu = gpu_ordinal(dev)
        if parts is None or gpu is None:
            continue
        ordinal, sub = gpu, parts[1]
        stream = STREAM.fullmatch(sub)
        if stream is not None:
            per_stream.add(ordinal)
            parsed.append((i, ordinal, int(stream.group(1)), f"Stream #{stream.group(1)}"))
        elif sub.lower() == "stream:all":
            parsed.append((i, ordinal, -_ALL_LINE, "stream:all"))
        elif sub.lower() == "memcpy":
            parsed.append((i, ordinal, -_MEMCPY_LINE, "memcpy"))
        elif sub.lower() == "sync":
            parsed.append((i, ordinal, _SYNC_LINE, "sync"))
    return [
        (i, ordinal, abs(line), name)
        for i, ordinal, line, name in parsed
        if line == _SYNC_LINE or (line >= 0) == (ordinal in per_stream)
    ]


def _tracer_step(writer: _Writer, step: int, cols: KernelColumns) -> None:
    for i, ordinal, line_id, line_name in _placed(cols):
        dev, name, label = cols.dev[i], cols.name[i], cols.label[i]
        if writer.task is not None and task_of(dev) != writer.task:
            continue
        parts = tracer_parts(dev)
        sub = parts[1].lower() if parts else ""
        kind = KIND_SYNC if sub == "sync" else _kind(sub, name, label)
        kernel, config = split_label(label) if label else ("", LaunchConfig())
        bare = kind == KIND_KERNEL and bool(kernel) and kernel == name
        op = "" if bare else writer.tf_op(name)
        stats: dict[str, StatValue] = {"tf_op": op} if op else {}
        if kind == KIND_SYNC:
            shown = name
        elif kind == KIND_MEMCPY:
            shown = kernel_name(label, name + sub[sub.find("<") :] if "<" in sub else name, kind)
            stats["memcpy_details"] = _memcpy_details(label)
        else:
            shown = kernel_name(label, name, kind, bool(op))
            stats["kernel_details"] = details_text(config)
        times = (cols.start[i], cols.dur_ns[i])
        writer.add(step, (ordinal, line_id, line_name), shown, times, kind, stats)


def _memcpy_details(label: str) -> str:
    if "kind_src:" in label or "size:" in label:
        return label.split(" ", 1)[1] if " " in label else label
    match = _BYTES_RE.search(label)
    return f"size:{int(match.group(1) or match.group(2))}" if match else ""


def _profile_step(writer: _Writer, step: int) -> None:
    execs = writer.model.steps[step]
    model = writer.model
    for nid, kind, dev, start, dur in zip(
        execs.t_node, execs.t_kind, execs.t_dev, execs.t_start, execs.t_dur
    ):
        gpu = gpu_ordinal(dev)
        if kind != KIND_ACCELERATOR or gpu is None:
            continue
        if writer.task is not None and task_of(dev) != writer.task:
            continue
        stats: dict[str, StatValue] = {"tf_op": f"{model.names[nid]}:{model.ops[nid]}"}
        where = (gpu, _ALL_LINE, "stream:all")
        writer.add(step, where, model.names[nid], (start, dur * 1000), KIND_KERNEL, stats)


def add_step_bounds(gpu: GpuPlanes, spans: dict[int, tuple[int, int]]) -> int:
    """Two zero-length events per step on each GPU plane, at the step's first
    start and last end (µs), on line ``Steps``; returns how many.

    With a GPU, XProf's step time is the span of the step's device events
    (the device ``Steps`` line it derives from its groups), not the host step
    root: without the bounds a step whose host ops start before its first
    kernel (or end after its last) looks shorter there. Each bound gets a
    correlation id (:class:`GpuRecord` of kind :data:`KIND_STEP_BOUND`), so its
    launch inside the step root puts it into the step's group.
    """
    count = 0
    for plane in list(gpu.planes):
        line = plane.line(_BOUNDS_LINE, STEP_BOUNDS_LINE)
        for step in sorted(spans):
            for edge, at in (("begin", spans[step][0]), ("end", spans[step][1])):
                corr = len(gpu.records) + 1
                stats: dict[str, StatValue] = {"correlation_id": corr}
                plane.add_ps(line, f"Step {edge}", at * PS_PER_US, 0, stats)
                gpu.records.append(GpuRecord(step, at, corr, KIND_STEP_BOUND))
                count += 1
    return count


def gpu_records(model: ProfileModel, origin_ns: int, task: str | None = None) -> GpuPlanes:
    """The GPU planes of ``model``'s traced steps (see the module docstring); with
    ``task``, only the records of that task's devices."""
    writer = _Writer(model, origin_ns, task)
    for step in model.sorted_steps():
        cols = model.steps[step].kernels
        if len(cols):
            _tracer_step(writer, step, cols)
        else:
            _profile_step(writer, step)
    return writer.out
