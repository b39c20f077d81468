"""Memory profile: per step and allocator, bytes in use over time, the peak and
what is live at the peak.

Source, per step, best first:

* **allocation records** (RunMetadata): every ``AllocatorMemoryUsed`` of every
  op, with its ``allocation_records`` (time, signed bytes; negative = free) and
  the op's output tensors (shape, dtype, allocator). The timeline is the running
  sum of the records of one allocator, one point per distinct time.
* **per-op bytes** (an allocator without allocation records, or a step loaded
  from a ProfileProto, which keeps neither allocator names nor CPU allocation
  records nor output tensor shapes): the ProfileProto's GPU allocation records
  where present, otherwise an approximation (the op's requested bytes allocated
  at its start, all but its residual bytes freed at its end), grouped per
  device. Shapes then come from the graph. The report says so in ``notes`` and
  per allocator (``exact``).

Frees of memory allocated before the step (or before the first record) would
drive the sum below zero: the lowest point is lifted to zero and that amount is
``baseline_bytes``. At the peak, each op holds the net of its records up to the
peak time (``by_op``: ops holding bytes, with their output tensors; ``by_scope``:
the same grouped by name scope; both keep the largest ``top``); ``live_bytes``
sums every op holding bytes and ``before_step_bytes`` is the rest of the peak
(baseline not yet freed minus what ops freed of it), so
``live_bytes + before_step_bytes == peak_bytes``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from tfprof_lite.analysis.memory_tensors import LiveTensor, ProfileTensors
from tfprof_lite.analysis.step_join import gathered
from tfprof_lite.base.shared import shared
from tfprof_lite.base.units import step_ranges
from tfprof_lite.model.allocator_columns import AllocatorColumns
from tfprof_lite.model.decode import memory_detail
from tfprof_lite.model.dtypes import dtype_name
from tfprof_lite.model.execs import StepExecs
from tfprof_lite.model.profile import ProfileModel

if TYPE_CHECKING:
    from tfprof_lite.analysis.memory_window import WindowMemory

from tfprof_lite.analysis.memory_text import step_text

__all__ = [
    "AllocatorMemory",
    "LiveOp",
    "LiveScope",
    "LiveTensor",
    "MemoryReport",
    "StepMemory",
    "memory_profile",
    "peak_step",
    "step_ranges",
]

#: The note when no step has memory records (RunMetadata, saved profiles).
NO_MEMORY = "no memory records: trace steps with FULL_TRACE (RunOptions.trace_level=3)"
#: The note when an XSpace (a model whose ``steps_source`` is set) has none.
NO_XSPACE_MEMORY = (
    "no memory records: the profile has no allocator events (GPU allocators write "
    "them; TensorFlow's CPU allocator only with TF_CPU_ALLOCATOR_USE_BFC=true)"
)

#: Label of the top-level name scope (nodes whose names have no ``/``).
TOP_SCOPE = "(top level)"


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class LiveOp:
    """An op holding memory at the peak: its net bytes and its output tensors."""

    name: str
    op: str
    scope: str
    bytes: int
    tensors: list[LiveTensor]


@dataclass(frozen=True)
class LiveScope:
    """A name scope's ops holding memory at the peak; ``tensors``: the largest few."""

    scope: str
    bytes: int
    ops: int
    tensors: list[LiveTensor]


@dataclass
class AllocatorMemory:
    """One allocator (or device, when allocator names are not kept) in one step.

    Times are microseconds since the step's first record; ``timeline`` holds
    ``(micros, bytes in use)`` points, the first at time 0. ``live_bytes`` and
    ``live_ops`` cover every op holding memory at the peak; ``by_op`` and
    ``by_scope`` list the largest few.
    """

    allocator: str
    exact: bool
    timeline: list[tuple[int, int]] = field(default_factory=list)
    peak_bytes: int = 0
    peak_micros: int = 0
    baseline_bytes: int = 0
    before_step_bytes: int = 0
    allocations: int = 0
    frees: int = 0
    max_in_use_bytes: int = 0
    live_bytes: int = 0
    live_ops: int = 0
    by_op: list[LiveOp] = field(default_factory=list)
    by_scope: list[LiveScope] = field(default_factory=list)


@dataclass
class StepMemory:
    """The memory profile of one step: one entry per allocator."""

    step: int
    start_micros: int
    source: str
    allocators: list[AllocatorMemory] = field(default_factory=list)


@dataclass
class MemoryReport:
    """Memory profiles of the traced steps, with notes on what the data lacked."""

    steps: list[StepMemory] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: An XSpace's whole window per allocator (allocations outside the steps too).
    window: WindowMemory | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (timelines as ``[micros, bytes]`` pairs; ``window``, with
        ``[ns, bytes]`` pairs, only when there is one)."""
        doc = asdict(self)
        doc.pop("window")
        if self.window is not None:
            doc["window"] = self.window.to_dict()
        for step, step_doc in zip(self.steps, doc["steps"]):
            for alloc, alloc_doc in zip(step.allocators, step_doc["allocators"]):
                alloc_doc["timeline"] = [list(p) for p in alloc.timeline]
        return doc

    def to_text(self) -> str:
        """Per step and allocator: the peak, what is live then, by op and by scope."""
        lines: list[str] = []
        if not self.steps:
            lines.append("no memory records")
        for step in self.steps:
            lines.extend(step_text(step))
        lines += [f"note: {text}" for text in self.notes]
        return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- series


@dataclass
class _Series:
    """Signed byte events of one allocator in one step, and what explains them."""

    label: str
    exact: bool
    nodes: list[int] = field(default_factory=list)
    times: list[int] = field(default_factory=list)
    deltas: list[int] = field(default_factory=list)
    tensors: dict[int, list[LiveTensor]] = field(default_factory=dict)
    max_in_use: int = 0
    #: Builds a node's tensors on first use when ``tensors`` lacks it (None: none).
    lazy_tensors: Callable[[int], list[LiveTensor]] | None = None

    def add(self, node: int, micros: int, delta: int) -> None:
        """One event."""
        self.nodes.append(node)
        self.times.append(micros)
        self.deltas.append(delta)

    def tensors_of(self, nid: int) -> list[LiveTensor]:
        """The output tensors recorded for ``nid`` (built now if lazy)."""
        got = self.tensors.get(nid)
        if got is None and self.lazy_tensors is not None:
            got = self.tensors[nid] = self.lazy_tensors(nid)
        return got or []


def _tensor(model: ProfileModel, cols: AllocatorColumns, i: int) -> LiveTensor:
    nid, slot = cols.o_node[i], cols.o_slot[i]
    shape = cols.o_shape[i]
    dims = list(shape) if shape is not None else model.output_shapes[nid].get(slot)
    size = max(cols.o_requested[i], cols.o_allocated[i])
    return LiveTensor(model.names[nid], slot, dims, dtype_name(cols.o_dtype[i]), size)


def _record_series(model: ProfileModel, execs: StepExecs) -> list[_Series]:
    """One series per allocator named in the step's kept NodeExecStats."""
    cols = execs.allocator_columns(memory_detail)
    series = [_Series(name, exact=True) for name in cols.names]
    for nid, aid, micros, nbytes in zip(cols.a_node, cols.a_alloc, cols.a_micros, cols.a_bytes):
        series[aid].add(nid, micros, nbytes)
    for i, aid in enumerate(cols.u_alloc):
        s = series[aid]
        s.max_in_use = max(s.max_in_use, cols.u_in_use[i])
    for s in series:
        if not s.times:
            _approximate_from_use(s, cols, cols.index[s.label])
    unnamed: dict[int, list[LiveTensor]] = {}
    for i, aid in enumerate(cols.o_alloc):
        if cols.o_allocated[i] or cols.o_requested[i]:
            owner = series[aid].tensors if cols.names[aid] else unnamed
            owner.setdefault(cols.o_node[i], []).append(_tensor(model, cols, i))
    for s in series:
        for nid, tensors in unnamed.items():
            s.tensors.setdefault(nid, tensors)
    return [s for s in series if s.times or s.max_in_use]


def _approximate_from_use(s: _Series, cols: AllocatorColumns, aid: int) -> None:
    """An allocator without allocation records: total bytes at the op's start,
    all but the live bytes freed at its end."""
    s.exact = False
    for i, alloc in enumerate(cols.u_alloc):
        if alloc == aid and cols.u_total[i]:
            s.add(cols.u_node[i], cols.u_start[i], cols.u_total[i])
            s.add(cols.u_node[i], cols.u_end[i], cols.u_live[i] - cols.u_total[i])


def _profile_series(model: ProfileModel, execs: StepExecs) -> list[_Series]:
    """Series per device from what a ProfileProto keeps (see the module docstring).

    Reads the step's memory columns directly; a node's tensors (from its first
    memory record) are built only for the nodes a report lists."""
    by_dev: dict[str, _Series] = {}
    tensors = ProfileTensors(model, execs)

    def series_of(nid: int, exact: bool) -> _Series:
        dev = model.canonical_device[nid] or "unknown device"
        s = by_dev.get(dev)
        if s is None:
            s = by_dev[dev] = _Series(f"{dev} (allocator not kept)", exact=True)
            s.lazy_tensors = tensors.of
        s.exact = s.exact and exact
        return s

    allocations = execs.allocations
    for nid, events in allocations.items():
        s = series_of(nid, True)
        for event in events:
            s.add(nid, event.alloc_micros, event.alloc_bytes)
    mem = execs.mem
    all_start = execs.all_start
    for nid, in_use, requested, residual, micros in zip(
        mem["node"].tolist(),
        mem["allocator_bytes_in_use"].tolist(),
        mem["requested_bytes"].tolist(),
        mem["residual_bytes"].tolist(),
        mem["memory_micros"].tolist(),
    ):
        recorded = nid in allocations
        s = series_of(nid, recorded)
        if in_use > s.max_in_use:
            s.max_in_use = in_use
        if not recorded and requested:
            s.add(nid, all_start.get(nid, micros), requested)
            s.add(nid, micros, residual - requested)
    return [s for s in by_dev.values() if s.times]


# --------------------------------------------------------------------------- profile


def _timeline(s: _Series, start: int) -> tuple[list[tuple[int, int]], list[int], int]:
    """Points ``(micros since origin, bytes)`` (the first, at 0, before any
    record), the absolute time of each point, and the baseline."""
    per_time: dict[int, int] = {}
    for micros, delta in zip(s.times, s.deltas):
        per_time[micros] = per_time.get(micros, 0) + delta
    running, lowest, sums = 0, 0, []
    for micros in sorted(per_time):
        running += per_time[micros]
        lowest = min(lowest, running)
        sums.append((micros, running))
    base = -lowest
    origin = min(start, sums[0][0]) if sums else start
    points = [(0, base)] + [(micros - origin, base + total) for micros, total in sums]
    return points, [origin - 1] + [micros for micros, _ in sums], base


def _peak_index(points: list[tuple[int, int]]) -> int:
    """Index of the first highest point."""
    best = 0
    for i, point in enumerate(points):
        if point[1] > points[best][1]:
            best = i
    return best


def _held_at(s: _Series, until: int) -> dict[int, int]:
    """Net bytes per node over the events at or before absolute time ``until``."""
    held: dict[int, int] = {}
    for nid, micros, delta in zip(s.nodes, s.times, s.deltas):
        if micros <= until:
            held[nid] = held.get(nid, 0) + delta
    return held


def _scope_of(name: str, depth: int | None) -> str:
    parts = name.split("/")[:-1]
    if depth is not None:
        parts = parts[:depth]
    return "/".join(parts) or TOP_SCOPE


def _live_ops(
    model: ProfileModel, s: _Series, held: dict[int, int], depth: int | None
) -> list[LiveOp]:
    ops = [
        LiveOp(
            name=model.names[nid],
            op=model.ops[nid],
            scope=_scope_of(model.names[nid], depth),
            bytes=nbytes,
            tensors=s.tensors_of(nid),
        )
        for nid, nbytes in held.items()
        if nbytes > 0
    ]
    return sorted(ops, key=lambda op: (-op.bytes, op.name))


def _live_scopes(ops: list[LiveOp], per_scope: int = 3) -> list[LiveScope]:
    grouped: dict[str, list[LiveOp]] = {}
    for op in ops:
        grouped.setdefault(op.scope, []).append(op)
    scopes = []
    for scope, members in grouped.items():
        tensors = sorted((t for op in members for t in op.tensors), key=lambda t: -t.bytes)
        total = sum(op.bytes for op in members)
        scopes.append(LiveScope(scope, total, len(members), tensors[:per_scope]))
    return sorted(scopes, key=lambda sc: (-sc.bytes, sc.scope))


def _allocator_memory(
    model: ProfileModel, s: _Series, start: int, depth: int | None
) -> AllocatorMemory:
    points, when, base = _timeline(s, start)
    index = _peak_index(points)
    peak_rel, peak_bytes = points[index]
    ops = _live_ops(model, s, _held_at(s, when[index]), depth)
    return AllocatorMemory(
        allocator=s.label,
        exact=s.exact,
        timeline=points,
        peak_bytes=peak_bytes,
        peak_micros=peak_rel,
        baseline_bytes=base,
        before_step_bytes=peak_bytes - sum(op.bytes for op in ops),
        allocations=sum(1 for d in s.deltas if d > 0),
        frees=sum(1 for d in s.deltas if d < 0),
        max_in_use_bytes=s.max_in_use,
        live_bytes=sum(op.bytes for op in ops),
        live_ops=len(ops),
        by_op=ops,  # memory_profile keeps the first ``top``
        by_scope=_live_scopes(ops),
    )


def _recorded(model: ProfileModel, steps: list[int]) -> list[bool]:
    """Per step, whether it has anything for a memory profile: a kept memory
    record, an allocation record or requested bytes (each record on a canonical
    device has a memory row, mostly zeros); every step's columns read at once."""
    every = [model.steps[s] for s in steps]
    requested, at = gathered(every, "mem", "requested_bytes")
    found = np.zeros(len(every), dtype=bool)
    found[at[requested != 0]] = True
    found[gathered(every, "allocs", "node")[1]] = True
    rest = np.flatnonzero(~found).tolist()
    found[rest] = [bool(every[i].raw_stats) for i in rest]
    return [bool(f) for f in found.tolist()]


def _step_memory(
    model: ProfileModel, step: int, depth: int | None, recorded: bool = True
) -> tuple[StepMemory, str | None]:
    """One step's profile and a note on its source (None when nothing to add;
    :func:`memory_profile` names the steps a note applies to)."""
    execs = model.steps[step]
    span = execs.wall_span()  # (the step's own span included: an XSpace's marker)
    start = span[0] if span is not None else 0
    if not recorded:  # (:func:`_recorded`)
        return StepMemory(step, start, "no memory records"), None
    note = None
    if execs.raw_stats:
        series, source = _record_series(model, execs), "allocation records"
        if any(not s.exact for s in series):
            note = "some allocators have no allocation records; approximated"
    else:
        series, source = _profile_series(model, execs), "per-op bytes"
        if series:
            note = (
                "no allocator data (a ProfileProto keeps no allocator names, "
                "CPU allocation records or tensor shapes); per-device timeline from "
                "per-op bytes, shapes and dtypes from the graph"
            )
    if not series:
        source = "no memory records"
    out = StepMemory(step, start, source)
    out.allocators = [_allocator_memory(model, s, start, depth) for s in series]
    out.allocators.sort(key=lambda a: (-a.peak_bytes, a.allocator))
    return out, note


def memory_profile(
    model: ProfileModel, step: int | None = None, top: int = 10, scope_depth: int | None = None
) -> MemoryReport:
    """The memory profile of every traced step (or of ``step`` only).

    Computed once for every ``top`` within a :func:`~tfprof_lite.base.shared.sharing` block.

    Args:
        model: the profile.
        step: one step number, or None for every step.
        top: how many ops and scopes to list per allocator.
        scope_depth: group ``by_scope`` on the first N name-scope levels
            (None: the op's full scope).
    """
    full = shared(
        ("memory_profile", step, scope_depth), model, lambda: _all(model, step, scope_depth)
    )
    cut = [
        [replace(a, by_op=a.by_op[:top], by_scope=a.by_scope[:top]) for a in s.allocators]
        for s in full.steps
    ]
    steps = [replace(s, allocators=allocs) for s, allocs in zip(full.steps, cut)]
    return MemoryReport(steps, list(full.notes), full.window)


def _all(model: ProfileModel, step: int | None, scope_depth: int | None) -> MemoryReport:
    report = MemoryReport()
    steps = model.sorted_steps() if step is None else [s for s in model.sorted_steps() if s == step]
    noted: dict[str, list[int]] = {}
    for number, recorded in zip(steps, _recorded(model, steps), strict=True):
        profile, note = _step_memory(model, number, scope_depth, recorded)
        report.steps.append(profile)
        if note:
            noted.setdefault(note, []).append(number)
    for note, numbers in noted.items():  # one note for every step it applies to
        which = step_ranges(numbers)
        report.notes.append(f"step{'s' if len(numbers) > 1 else ''} {which}: {note}")
    from tfprof_lite.analysis.memory_window import window_memory  # (read only here)

    window = window_memory(model) if step is None else None
    report.notes += window.lines() if window is not None else []  # allocations outside steps too
    report.window = window
    if window is None and not any(s.allocators for s in report.steps):
        report.notes.append(NO_XSPACE_MEMORY if model.steps_source else NO_MEMORY)
    return report


def peak_step(report: MemoryReport) -> int | None:
    """The step of ``report`` with the highest peak of any allocator (the first
    of equal ones); None when no step has memory records."""
    best: tuple[int, int] | None = None
    for step in report.steps:
        peak = max((a.peak_bytes for a in step.allocators), default=-1)
        if peak >= 0 and (best is None or peak > best[0]):
            best = (peak, step.step)
    return None if best is None else best[1]
