"""An XSpace into the profile model: one RunMetadata-like step per traced step.

:func:`convert` builds, for every step the file holds (see
:mod:`tfprof_lite.model.xspace_steps`), the :class:`~tfprof_lite.proto.steps.StepColumns`
a RunMetadata FULL_TRACE of that step would give, and adds them with
:meth:`ProfileModel.add_step`, so every view, analysis, timeline and the
advisor read an XSpace as they read TF1 profiles:

* a TF op executed on a host thread (an event ``<name>:<type>`` whose metadata
  display name is the type, or any such event in files without display names)
  becomes graph node ``<name>`` of op type ``<type>``, with one record on
  ``/job:localhost/replica:0/task:0/device:CPU:0`` per execution;
* a GPU kernel becomes a record on ``/device:GPU:<n>/stream:<line id>`` and on
  ``/device:GPU:<n>/stream:all`` labelled ``<kernel> <kernel_details>``; a copy
  one on ``/device:GPU:<n>/stream:<line id><MemcpyXXX>`` and
  ``/device:GPU:<n>/memcpy`` labelled ``<MemcpyXXX> <memcpy_details>``; any
  other GPU event one on ``/device:GPU:<n>/stream:`` (TensorFlow's own XSpace to
  StepStats conversion);
* a device event belongs to the op that launched it: its ``tf_op`` stat, else
  for an XLA program the framework scope of its HLO instruction (from the
  ``/host:metadata`` plane's HLO protos, :mod:`tfprof_lite.model.xspace_xla`;
  op type: the framework op with the HLO category), else
  ``<hlo_module>/<hlo_op>`` (inside a command buffer, the kernel's own name
  when XLA named it after its HLO instruction: a fusion or a wrapped op),
  else, through ``correlation_id``, the
  TF op around the host launch, else the event's own name;
* each step's root (marker or inferred call) is a record of its own name on
  ``/host:CPU/steps``, a device that carries no time: it spans the step, from
  the end of the previous step (or the root's start for the first step) to the
  last end of the root and of the events launched in it.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from tfprof_lite.model.devices import STEPS_DEVICE, host_device_of, is_tracer_device
from tfprof_lite.model.records import NodeSpec
from tfprof_lite.model.xspace_code import CodeSources, code_sources, defer_code_stacks
from tfprof_lite.model.xspace_events import (
    PLANE_GPU,
    EventTable,
    event_table,
    gpu_ordinal,
)
from tfprof_lite.model.xspace_memory import add_memory
from tfprof_lite.model.xspace_steps import StepRoots, find_steps, outermost, program_of, step_of
from tfprof_lite.model.xspace_xla import xla_ops
from tfprof_lite.proto.steps import StepColumns
from tfprof_lite.proto.xplane import XSpaceColumns

if TYPE_CHECKING:
    from tfprof_lite.model.profile import ProfileModel

__all__ = ["CPU_DEVICE", "STEPS_DEVICE", "XSpaceSteps", "convert", "plan_steps"]

I64 = npt.NDArray[np.int64]

CPU_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"

_TF_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*")
_TF_TYPE = re.compile(r"[A-Z_][a-zA-Z0-9_]*")
# XLA's own kernels are named after their HLO instruction (fusions, wrapped
# single ops); library kernels (cuBLAS, cuDNN, CUTLASS) are not.
_HLO_KERNEL = re.compile(r"(?:[a-z0-9_]*fusion[a-z0-9_.\-]*|wrapped_[a-z0-9_.\-]+)")
_TRAILING_NUMBER = re.compile(r"[._]\d+$")
# An eager iterator read (``next(iter(dataset))`` outside a tf.function) has no
# "<name>:<type>" event, only the eager runtime's "EagerLocalExecute: <type>".
_EAGER_INPUT = re.compile(r"EagerLocalExecute: (IteratorGetNext[A-Za-z0-9_]*)")


@dataclass
class _Row:
    device: str
    name: str
    label: str
    start_ps: int
    end_ps: int


@dataclass
class XSpaceSteps:
    """The steps of one XSpace as step columns, and the graph nodes they name.

    ``tracer_ns[i]``: the exact durations (ns) of step ``i``'s GPU tracer
    records, in the order :meth:`ProfileModel.add_step` keeps them.
    """

    numbers: list[int]
    columns: list[StepColumns]
    nodes: list[NodeSpec]
    source: str
    rows: list[list[_Row]] = field(default_factory=list)
    tracer_ns: list[list[int]] = field(default_factory=list)
    code: CodeSources = field(default_factory=CodeSources)


def tf_op_of(name: str, display_name: str, strict: bool) -> tuple[str, str] | None:
    """(op name, op type) when event ``name`` is a TF op (``<name>:<type>``)."""
    op, sep, kind = name.rpartition(":")
    if not sep or not op:
        return None
    if strict and display_name != kind:
        return None
    if _TF_NAME.fullmatch(op) and _TF_TYPE.fullmatch(kind):
        return op, kind
    return None


def _host_op_of(name: str, display_name: str, strict: bool) -> tuple[str, str] | None:
    """(op name, op type) of a host event that is a TF op: a graph op, or an
    eager iterator read (named after its type, as eager ops have no node name)."""
    eager = _EAGER_INPUT.fullmatch(name)
    if eager is not None:
        return eager.group(1), eager.group(1)
    return tf_op_of(name, display_name, strict)


def _hlo_op_type(op: str) -> str:
    """An HLO instruction's name without its numbering (``loop_add_fusion_3`` ->
    ``loop_add_fusion``), the op type until the HLO program says better."""
    return _TRAILING_NUMBER.sub("", op) or op


class _Attribution:
    """Which op each event belongs to."""

    def __init__(self, table: EventTable) -> None:
        cols = table.cols
        self.table = table
        # TF names its ops' metadata by type; in files without display names
        # (older TF) any "<name>:<type>" event is an op. JAX runs no TF ops (its
        # runtime's "<name>:<what>" events are not ops).
        host_planes = {i for i, name in enumerate(cols.plane_name) if name == "/host:CPU"}
        strict = any(
            d for d, p in zip(cols.meta_display_name, cols.meta_plane.tolist()) if p in host_planes
        )
        no_tf = cols.key_of("jax_version") >= 0
        self.tf_ops: dict[int, tuple[str, str]] = {}
        by_line: dict[int, list[int]] = {}
        meta_ops: dict[int, tuple[str, str] | None] = {}
        for event in table.host_events().tolist():
            meta = int(cols.event_meta[event])
            if meta < 0 or no_tf:
                continue
            if meta not in meta_ops:
                meta_ops[meta] = _host_op_of(
                    cols.meta_name[meta], cols.meta_display_name[meta], strict
                )
            found = meta_ops[meta]
            if found is not None:
                self.tf_ops[event] = found
                by_line.setdefault(table.line_of(event), []).append(event)
        # JAX: each execution of an XLA program on a host thread is the host side
        # of its kernels (dispatch, launch), a node of op type XlaModule.
        programs = [e for e in table.host_events().tolist() if no_tf and program_of(table.names[e])]
        self.programs = {e: program_of(table.names[e]) for e in outermost(table, programs)}
        self.lines = {
            line: sorted(events, key=lambda e: int(table.start[e]))
            for line, events in by_line.items()
        }
        self.line_starts = {
            line: [int(table.start[e]) for e in events] for line, events in self.lines.items()
        }
        corr = table.ints["correlation_id"]
        has = table.has_int["correlation_id"]
        host = table.host_events()
        self.launch = {int(corr[e]): int(e) for e in host[has[host]].tolist()}
        self.node_types: dict[str, str] = {name: kind for name, kind in self.tf_ops.values()}
        for module in self.programs.values():
            self.node_types.setdefault(module, "XlaModule")
        self.hlo = xla_ops(table)

    def launch_of(self, event: int) -> int:
        """The host launch event of device event ``event``, or -1."""
        if not self.table.has_int["correlation_id"][event]:
            return -1
        return self.launch.get(int(self.table.ints["correlation_id"][event]), -1)

    def _around(self, host_event: int) -> str:
        """The innermost TF op on the same line around ``host_event``'s start."""
        table = self.table
        line = table.line_of(host_event)
        events = self.lines.get(line)
        if not events:
            return ""
        t = int(table.start[host_event])
        at = bisect.bisect_right(self.line_starts[line], t) - 1
        while at >= 0:
            op = events[at]
            if int(table.end[op]) >= t:
                return self.tf_ops[op][0]
            at -= 1
        return ""

    def op_of(self, event: int, launch: int) -> str:
        """The node name device event ``event`` adds its time to."""
        text = self.table.text
        tf_op = text["tf_op"][event]
        name, _, kind = tf_op.rpartition(":")
        if name and name != "XlaModule":
            self.node_types.setdefault(name, kind or name)
            return name
        mapped = self.hlo.get(event)
        if mapped is not None:
            self.node_types.setdefault(mapped.scope, mapped.type_label)
            return mapped.scope
        hlo_op = text["hlo_op"][event]
        if hlo_op:
            kernel = self.table.names[event]
            if hlo_op.startswith("command_buffer") and _HLO_KERNEL.fullmatch(kernel):
                hlo_op = kernel
            module = text["hlo_module"][event]
            node = f"{module}/{hlo_op}" if module else hlo_op
            self.node_types.setdefault(node, _hlo_op_type(hlo_op))
            return node
        if launch >= 0:
            around = self._around(launch)
            if around:
                return around
        return self.table.names[event]


def _device_rows(table: EventTable, attribution: _Attribution, event: int) -> list[_Row]:
    """The records of GPU event ``event`` (TensorFlow's device names and labels)."""
    cols = table.cols
    line = table.line_of(event)
    ordinal = gpu_ordinal(cols.plane_name[int(cols.line_plane[line])])
    base = f"/device:GPU:{ordinal}"
    name = table.names[event]
    node = attribution.op_of(event, attribution.launch_of(event))
    start, end = int(table.start[event]), int(table.end[event])
    details = table.text["kernel_details"][event]
    if details:
        label = f"{name} {details}"
        stream = f"{base}/stream:{int(cols.line_id[line])}"
        return [
            _Row(stream, node, label, start, end),
            _Row(f"{base}/stream:all", node, label, start, end),
        ]
    copy = table.text["memcpy_details"][event]
    if copy or name.startswith("Memcpy"):
        kind = name if name.startswith("Memcpy") else "Memcpy"
        label = f"{kind} {copy}" if copy else kind
        stream = f"{base}/stream:{int(cols.line_id[line])}<{kind}>"
        return [
            _Row(stream, node, label, start, end),
            _Row(f"{base}/memcpy", node, label, start, end),
        ]
    return [_Row(f"{base}/stream:", node, node, start, end)]


def _micros(origin_ns: int, ps: I64) -> I64:
    """Absolute microseconds of ps offsets from ``origin_ns``."""
    origin_us, rest_ns = divmod(origin_ns, 1000)
    return (origin_us + (ps + rest_ns * 1000) // 1_000_000).astype(np.int64)


def _ordered(rows: list[_Row]) -> tuple[list[_Row], dict[str, int]]:
    """``rows`` grouped by device (devices in first-seen order) and the device index."""
    index: dict[str, int] = {}
    order = sorted(range(len(rows)), key=lambda r: index.setdefault(rows[r].device, len(index)))
    return [rows[r] for r in order], index


def _tracer_ns(rows: list[_Row]) -> list[int]:
    """The durations (ns) of the GPU tracer records among ``rows``, in row order."""
    ordered, _ = _ordered(rows)
    return [(r.end_ps - r.start_ps) // 1000 for r in ordered if is_tracer_device(r.device.lower())]


def _columns(rows: list[_Row], origin_ns: int) -> StepColumns:
    ordered, index = _ordered(rows)
    devices = list(index)
    n = len(ordered)
    start = _micros(origin_ns, np.asarray([r.start_ps for r in ordered], dtype=np.int64))
    end = _micros(origin_ns, np.asarray([r.end_ps for r in ordered], dtype=np.int64))
    zeros = np.zeros(n, dtype=np.int64)
    return StepColumns(
        devices=devices,
        dev=np.asarray([index[r.device] for r in ordered], dtype=np.int32),
        name=[r.name for r in ordered],
        label=[r.label for r in ordered],
        start=start,
        rel=(end - start).astype(np.int64),
        total=zeros,
        peak=zeros.copy(),
        live=zeros.copy(),
        gpu_allocs=np.zeros(n, dtype=np.int32),
        gpu_in_use=zeros.copy(),
        temp=zeros.copy(),
        persist=zeros.copy(),
        has_step_stats=True,
    )


def _grouped(table: EventTable, roots: StepRoots, attribution: _Attribution) -> list[list[_Row]]:
    """The records of every step (device events by launch time, host ops cut at
    the step boundaries) and each step's root record."""
    groups: list[list[_Row]] = [[] for _ in range(max(len(roots), 1))]
    starts = np.asarray([int(table.start[r]) for r in roots.events], dtype=np.int64)
    ends = np.asarray([int(table.end[r]) for r in roots.events], dtype=np.int64)
    device = np.flatnonzero((table.plane_kind == PLANE_GPU) & ~table.derived)
    launches = [attribution.launch_of(int(e)) for e in device]
    times = np.asarray(
        [int(table.start[at if at >= 0 else e]) for e, at in zip(device.tolist(), launches)],
        dtype=np.int64,
    )
    dev_steps: list[int] = step_of(starts, ends, times).tolist() if len(times) else []
    for event, step in zip(device.tolist(), dev_steps):
        if step >= 0:
            groups[step].extend(_device_rows(table, attribution, event))
    named = {e: op for e, (op, _) in attribution.tf_ops.items()}
    named.update(attribution.programs)
    ops = [(named[e], int(table.start[e]), int(table.end[e])) for e in sorted(named)]
    if not roots.events:
        groups[0].extend(_Row(CPU_DEVICE, name, name, s, e) for name, s, e in ops)
    windows = _add_roots(table, roots, groups)
    if roots.events:
        _cut_host_ops(ops, windows, groups)
    return groups


def _cut_host_ops(
    ops: list[tuple[str, int, int]], windows: list[tuple[int, int]], groups: list[list[_Row]]
) -> None:
    """Host op executions into the steps whose time they share. An execution that
    crosses a step's end (a background thread's, say) is cut there: each step
    keeps its part, no step grows past its own span, and what runs between steps
    belongs to none (a RunMetadata, too, holds only what ran in its step)."""
    spans = [
        (start, min(end, windows[i + 1][0]) if i + 1 < len(windows) else end)
        for i, (start, end) in enumerate(windows)
    ]
    starts = [start for start, _ in spans]
    for name, start, end in ops:
        step = max(bisect.bisect_right(starts, start) - 1, 0)
        while step < len(spans):
            low, high = spans[step]
            if low > end:
                break
            piece = (max(start, low), min(end, high))
            if piece[0] < piece[1] or (start == end and low <= start <= high):
                groups[step].append(_Row(CPU_DEVICE, name, name, *piece))
            step += 1


class _LineStarts:
    """The sorted event starts of each host line, built when first asked."""

    def __init__(self, table: EventTable) -> None:
        self.table = table
        self.starts: dict[int, list[int]] = {}

    def first_between(self, root: int, low: int, high: int) -> int:
        """The first start in ``[low, high)`` on ``root``'s line, else ``high``."""
        line = self.table.line_of(root)
        starts = self.starts.get(line)
        if starts is None:
            cols = self.table.cols
            lo, hi = int(cols.line_event_at[line]), int(cols.line_event_at[line + 1])
            starts = self.starts[line] = sorted(self.table.start[lo:hi].tolist())
        at = bisect.bisect_left(starts, low)
        return starts[at] if at < len(starts) and starts[at] < high else high


def _add_roots(
    table: EventTable, roots: StepRoots, groups: list[list[_Row]]
) -> list[tuple[int, int]]:
    """One record per step on the steps device, spanning the step; the spans.

    A step runs to the last end of its root and of its records, from its root's
    start or, when the root's thread worked between the end of the previous
    step and the root (the loop reading its next batch, say), from the first
    event the thread started there.
    """
    windows: list[tuple[int, int]] = []
    previous_end = None
    lines = _LineStarts(table)
    for step, rows in enumerate(groups):
        if roots.events:
            root = roots.events[step]
            name = table.names[root] or "step"
            start, end = int(table.start[root]), int(table.end[root])
        elif rows:
            name = "step"
            start, end = min(r.start_ps for r in rows), max(r.end_ps for r in rows)
        else:
            continue
        end = max([end, *(r.end_ps for r in rows)])
        if previous_end is not None and previous_end < start and roots.events:
            start = lines.first_between(roots.events[step], previous_end, start)
        rows.append(_Row(STEPS_DEVICE, name, name, start, end))
        windows.append((start, end))
        previous_end = end
    return windows


def plan_steps(cols: XSpaceColumns) -> XSpaceSteps:
    """The step columns of every step of ``cols`` and the graph nodes they name."""
    table = event_table(cols)
    roots = find_steps(table)
    attribution = _Attribution(table)
    groups = _grouped(table, roots, attribution)
    numbers = roots.numbers if roots.events else [0]
    nodes = [NodeSpec(name=name, op=kind) for name, kind in attribution.node_types.items()]
    columns = [_columns(rows, cols.origin_ns) for rows in groups]
    tracer = [_tracer_ns(rows) for rows in groups]
    programs = set(attribution.programs.values())
    add_memory(table, attribution.tf_ops, roots.events, columns, nodes, programs)
    code = code_sources(table, attribution)
    return XSpaceSteps(numbers, columns, nodes, roots.source, groups, tracer, code)


def convert(cols: XSpaceColumns, model: ProfileModel) -> XSpaceSteps:
    """Add the ops and steps of ``cols`` to ``model``; records how steps were found
    in ``model.steps_source``."""
    plan = plan_steps(cols)
    if plan.nodes:
        model.add_graph(plan.nodes)
    for number, step_cols, exact in zip(plan.numbers, plan.columns, plan.tracer_ns):
        if len(step_cols):
            execs = model.steps.get(number)
            before = len(execs.kernels) if execs is not None else 0
            model.add_step(number, step_cols)
            # The tracer records keep the file's nanoseconds (the columns hold µs).
            kernels = model.steps[number].kernels
            if len(kernels) == before + len(exact):
                kernels.dur_ns[before:] = exact
    _bind_gpu_devices(model)
    defer_code_stacks(model, plan.code)
    model.steps_source = plan.source
    return plan


_GPU_TRACER_RE = re.compile(r"/device:gpu:(\d+)/")


def _bind_gpu_devices(model: ProfileModel) -> None:
    """Bind each node recorded only on a GPU's tracer devices (an XLA kernel or copy
    has no op record) to that GPU's canonical device, as TensorFlow binds a GPU op,
    so the device views and the accelerator checker see it."""
    for number in model.sorted_steps():
        for nid, devices in model.steps[number].devices.items():
            if model.canonical_device[nid]:
                continue
            for device in devices:
                found = _GPU_TRACER_RE.match(device)
                if found is not None:
                    dev = f"/job:localhost/replica:0/task:0/device:gpu:{found.group(1)}"
                    model.canonical_device[nid] = dev
                    model.host_device[nid] = host_device_of(dev)
                    model.op_types[nid].add(dev)
                    break
