"""A profile as an XSpace that XProf (TensorBoard's Profile tab) opens.

:func:`build_xspace` turns a :class:`~tfprof_lite.model.profile.ProfileModel`
into the bytes of one ``<host>.xplane.pb``; writing is the caller's (the
facade and the CLI, through :mod:`tfprof_lite.base.writing`). What goes in:

* ``/host:CPU`` (plane id 49, as TensorFlow's host plane): every op
  execution on the host side (``<node_name>:<op_type>``, the op's CPU record,
  which for a GPU op is its scheduling on the host) with stats ``shape`` and
  ``output_bytes``, on lanes per device (``<device> #<lane>``, packed by
  :func:`~tfprof_lite.formats.xspace.write.planes.pack_lanes`: events of one lane
  never overlap, so XProf nests none in another; with per-execution thread ids,
  which the model does not keep yet, lanes per thread, ``<device> thread
  <tid>``, where an event nests only inside one it ran within on that thread).
  One line ``Step markers``
  holds one event ``train`` per step (stats ``step_num`` and ``_r=1``, which
  makes it a step root for XProf) spanning the step, and inside it one launch
  event (``cudaLaunchKernel`` / ``cudaMemcpyAsync``) per GPU kernel or copy,
  with the device event's ``correlation_id``. A line ``Memory`` holds the
  allocator timeline as ``MemoryAllocation`` / ``MemoryDeallocation`` events
  (:mod:`tfprof_lite.formats.xspace.write.memory`).
* ``/device:GPU:<n>`` (plane id n): one line per stream (``Stream #<id>``),
  kernels named by kernel with ``kernel_details``, ``tf_op`` and
  ``correlation_id``; copies (``MemcpyH2D``...) with ``memcpy_details``
  (:mod:`tfprof_lite.formats.xspace.write.gpu`); a line ``Steps`` with a
  zero-length ``Step begin`` and ``Step end`` at each step's first start and
  last end (launched inside the step root), since with a GPU XProf times a
  step by its device events.
* ``Task Environment``: ``profile_start_time`` and ``profile_stop_time`` (ns).

Line timestamps are 0 and event offsets count from ``profile_start_time``
(the convention of newer profilers), 1 µs before the first record (XProf
takes a zero-length event at time 0 for an empty span). No ``group_id`` stat is
declared anywhere, so XProf groups steps itself: the ``_r`` roots, the producer and
consumer context stats (``_p``/``_pt`` on a step root, ``_c``/``_ct`` on each
op of the step, which puts the ops on other lines into the step) and the
correlation ids (a device event joins its launch, inside the step root).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from tfprof_lite.base.lanes import first_free
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.formats.xspace.write.gpu import GpuRecord, add_step_bounds, gpu_records
from tfprof_lite.formats.xspace.write.memory import add_memory_events
from tfprof_lite.formats.xspace.write.planes import PS_PER_US, PlaneBuilder, pack_lanes
from tfprof_lite.model.cluster import task_of
from tfprof_lite.model.execs import KIND_CPU
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.proto import messages as pb

__all__ = [
    "HOST_PLANE_ID",
    "STEP_EVENT",
    "build_xspace",
    "host_name",
    "profile_span",
    "run_name",
    "xspace_files",
]

HOST_PLANE_ID = 49
SUFFIX = ".xplane.pb"
#: Name of the step-root event of each step.
STEP_EVENT = "train"
_STEPS_LINE = 1
_MEMORY_LINE = 2
_FIRST_OP_LINE = 100
_LAUNCH_PS = 1000
#: The profile starts this long before its first record: XProf takes a zero-length
#: event at time 0 for an empty span (a step's ``Step begin`` would not count).
_ORIGIN_LEAD_US = 1
#: Context type of the step-to-op links (TensorFlow's executor context).
_CONTEXT_TYPE = 2


def _context_id(step: int) -> int:
    """The producer/consumer context id linking step ``step``'s ops to its root."""
    return step + 1


_LAUNCH_NAMES = {
    "kernel": "cudaLaunchKernel",
    "memcpy": "cudaMemcpyAsync",
    "sync": "cuStreamSynchronize",
}


def profile_span(model: ProfileModel) -> tuple[int, int]:
    """(first start, last end) in microseconds over every traced step."""
    spans = [s for s in (model.steps[n].wall_span() for n in model.sorted_steps()) if s]
    if not spans:
        raise InvalidInputError(
            "the profile has no timed op executions to write as an XSpace: "
            "trace steps with RunOptions(trace_level=FULL_TRACE)"
        )
    return min(s[0] for s in spans), max(s[1] for s in spans)


def _shape_text(model: ProfileModel, nid: int) -> str:
    shapes = model.output_shapes[nid]
    return ";".join("(" + ",".join(str(d) for d in shapes[slot]) + ")" for slot in sorted(shapes))


def _output_bytes(model: ProfileModel, step: int) -> dict[int, int]:
    mem = model.steps[step].mem
    out: dict[int, int] = {}
    for nid, nbytes in zip(mem["node"].tolist(), mem["output_bytes"].tolist()):
        out.setdefault(nid, nbytes)
    return out


def _lane_name(dev: str, thread: int, lane: int) -> str:
    """``<device> #<lane>`` (no thread id), else ``<device> thread <tid>`` (``#<lane>``
    after the first lane of that thread)."""
    if not thread:
        return f"{dev or 'ops'} #{lane}"
    return f"{dev or 'ops'} thread {thread}" + (f" #{lane}" if lane else "")


def _cpu_records(model: ProfileModel, task: str | None) -> dict[str, list[tuple[int, ...]]]:
    """Per device, (start, dur, node, step, thread) of every CPU-side op execution."""
    out: dict[str, list[tuple[int, ...]]] = {}
    for step in model.sorted_steps():
        execs = model.steps[step]
        # thread ids: only where the model keeps them (NodeExecStats.thread_id)
        threads = getattr(execs, "t_thread", None)
        if threads is None:
            threads = [0] * len(execs.t_start)
        for dev, start, dur, nid, kind, thread in zip(
            execs.t_dev, execs.t_start, execs.t_dur, execs.t_node, execs.t_kind, threads
        ):
            if kind == KIND_CPU and (task is None or task_of(dev) == task):
                out.setdefault(dev, []).append((start, dur, nid, step, int(thread)))
    return out


def _host_ops(plane: PlaneBuilder, model: ProfileModel, task: str | None) -> int:
    """Every CPU-side op execution on lanes per device (and thread); returns how many."""
    line_ids: dict[tuple[str, int, int], int] = {}
    out_bytes: dict[int, dict[int, int]] = {}
    count = 0
    for dev, records in sorted(_cpu_records(model, task).items()):
        lanes = pack_lanes(
            [r[0] for r in records], [r[1] for r in records], [r[4] for r in records]
        )
        for thread, lane in sorted(set(lanes)):  # line ids in lane order
            key = (dev, thread, lane)
            line_ids[key] = plane.line(_FIRST_OP_LINE + len(line_ids), _lane_name(*key))
        for (start, dur, nid, step, _), (thread, lane) in zip(records, lanes):
            if step not in out_bytes:
                out_bytes[step] = _output_bytes(model, step)
            name = f"{model.names[nid]}:{model.ops[nid]}"
            stats = _op_stats(model, nid, step, out_bytes[step])
            plane.add(line_ids[dev, thread, lane], name, start, dur, stats)
            count += 1
    return count


def _op_stats(
    model: ProfileModel, nid: int, step: int, out_bytes: dict[int, int]
) -> dict[str, int | float | str]:
    stats: dict[str, int | float | str] = {"_ct": _CONTEXT_TYPE, "_c": _context_id(step)}
    shape = _shape_text(model, nid)
    if shape:
        stats["shape"] = shape
    nbytes = out_bytes.get(nid)
    if nbytes:
        stats["output_bytes"] = nbytes
    return stats


def _steps(plane: PlaneBuilder, model: ProfileModel, launches: dict[int, list[GpuRecord]]) -> None:
    """One step root per step, the GPU launches of the step inside it."""
    spans = [(model.steps[s].wall_span(), s) for s in model.sorted_steps()]
    found = sorted((span, step) for span, step in spans if span is not None)
    lanes, _ = first_free([a for (a, _), _ in found], [max(b - a, 0) for (a, b), _ in found])
    for ((start, end), step), lane in zip(found, lanes, strict=True):
        line = plane.line(
            _STEPS_LINE + 10 * lane, "Step markers" if not lane else f"Step markers #{lane}"
        )
        stats = {"step_num": step, "_r": 1, "_pt": _CONTEXT_TYPE, "_p": _context_id(step)}
        plane.add(line, STEP_EVENT, start, end - start, stats)
        _launches(plane, line, launches.get(step, []), start, end)


def _launches(
    plane: PlaneBuilder, line: int, records: Iterable[GpuRecord], start: int, end: int
) -> None:
    """Launch events (1 ns each, never overlapping) at their device event's start,
    kept inside the step root."""
    low, high = start * PS_PER_US, end * PS_PER_US
    cursor = low
    for rec in sorted(records, key=lambda r: (r.start_us, r.correlation_id)):
        at = min(max(rec.start_us * PS_PER_US, cursor), max(high - _LAUNCH_PS, low))
        name = _LAUNCH_NAMES.get(rec.kind, "cudaLaunchKernel")
        plane.add_ps(line, name, at, _LAUNCH_PS, {"correlation_id": rec.correlation_id})
        cursor = at + _LAUNCH_PS


def _step_spans(model: ProfileModel) -> dict[int, tuple[int, int]]:
    """step -> (first start, last end) in µs, of every step with timed records."""
    spans = {step: model.steps[step].wall_span() for step in model.sorted_steps()}
    return {step: span for step, span in spans.items() if span is not None}


def _task_environment(start_ns: int, stop_ns: int) -> PlaneBuilder:
    plane = PlaneBuilder(0, "Task Environment", 0)
    for name, value in (("profile_start_time", start_ns), ("profile_stop_time", stop_ns)):
        plane.plane.stats.add(metadata_id=plane.stat_id(name), uint64_value=value)
    return plane


def build_xspace(model: ProfileModel, host: str = "localhost", task: str | None = None) -> bytes:
    """The serialized XSpace of ``model`` (see the module docstring).

    ``task`` (a cluster profile's ``/job:J/replica:R/task:T``) keeps only the ops
    and GPU records of that task's devices, and leaves the allocator timeline
    out (allocators are not per task); steps span the whole cluster step.
    """
    start, end = profile_span(model)
    origin_ns = (start - _ORIGIN_LEAD_US) * 1000
    host_plane = PlaneBuilder(HOST_PLANE_ID, "/host:CPU", origin_ns)
    gpu = gpu_records(model, origin_ns, task)
    add_step_bounds(gpu, _step_spans(model))
    by_step: dict[int, list[GpuRecord]] = {}
    for rec in gpu.records:
        by_step.setdefault(rec.step, []).append(rec)
    _steps(host_plane, model, by_step)
    _host_ops(host_plane, model, task)
    if task is None:
        add_memory_events(host_plane, host_plane.line(_MEMORY_LINE, "Memory"), model)
    planes = [host_plane, *gpu.planes, _task_environment(origin_ns, end * 1000)]
    space = pb.XSpace(hostnames=[host])
    space.planes.extend(p.finish() for p in planes)
    return bytes(space.SerializeToString())


def host_name(task: str) -> str:
    """The file name (host) of a cluster task: ``/job:worker/replica:0/task:1`` ->
    ``worker-0-1``."""
    parts = [p.split(":", 1)[-1] for p in task.strip("/").split("/")]
    return "-".join(p for p in parts if p) or "localhost"


def run_name(when: float | None = None) -> str:
    """A run directory name from a time, as the profilers name them
    (``YYYY_MM_DD_HH_MM_SS``, UTC)."""
    return time.strftime("%Y_%m_%d_%H_%M_%S", time.gmtime(time.time() if when is None else when))


def xspace_files(
    model: ProfileModel, tasks: list[str] | None = None, host: str | None = None
) -> dict[str, bytes]:
    """``{file name: bytes}``: one ``<host>.xplane.pb`` (``host`` or ``localhost``),
    or one per task of a cluster profile (``tasks``), named by :func:`host_name`."""
    if not tasks:
        return {f"{host or 'localhost'}{SUFFIX}": build_xspace(model, host or "localhost")}
    out = {}
    for task in tasks:
        name = host_name(task)
        out[f"{name}{SUFFIX}"] = build_xspace(model, name, task)
    return out
