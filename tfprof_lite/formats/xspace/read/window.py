"""An XSpace's :class:`~tfprof_lite.model.window.EventWindow`.

:func:`window_of` builds it from the step conversion's own event table, roots
and attribution (:func:`~tfprof_lite.formats.xspace.read.conversion.plan_steps`
calls it once each device event has its step: the events are walked once);
:func:`event_window` reads a file's columns on their own, with the same rules:
the steps of :func:`~tfprof_lite.formats.xspace.read.steps.find_steps`, each device
event's op from the conversion's attribution
(:mod:`tfprof_lite.formats.xspace.read.conversion`), each device event's step from
:func:`~tfprof_lite.formats.xspace.read.rows.device_steps`. So an event inside a step
is the one that step's records hold, named alike; the others are the events
the steps leave out. It does not depend on how the steps are added to the
model.

The host op events (:class:`~tfprof_lite.model.window.HostOps`: the TF ops of
the conversion's attribution, tf.data iterator events, XLA programs' host
executions and XLA CPU ops) and the allocator events
(:class:`~tfprof_lite.model.window.MemoryEvents`, read as
:func:`~tfprof_lite.formats.xspace.read.memory.memory_stats` reads them) get their
step as the steps' memory records do (:func:`~tfprof_lite.formats.xspace.read.steps.step_of`
of their start, each root ending at its work's end).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from tfprof_lite.formats.xspace.read.attribution import Attribution
from tfprof_lite.formats.xspace.read.events import (
    EventTable,
    distinct_codes,
    event_table,
    gpu_ordinal,
)
from tfprof_lite.formats.xspace.read.memory import MemoryStats, memory_stats
from tfprof_lite.formats.xspace.read.rows import device_steps
from tfprof_lite.formats.xspace.read.steps import StepRoots, find_steps, step_of
from tfprof_lite.formats.xspace.wire.columns import XSpaceColumns
from tfprof_lite.model.window import (
    DATASET_TYPE,
    KIND_COPY,
    KIND_KERNEL,
    KIND_OTHER,
    DeviceEvents,
    EventWindow,
    HostOps,
    MemoryEvents,
)

if TYPE_CHECKING:
    from tfprof_lite.model.profile import ProfileModel

__all__ = ["bind_steps", "event_window", "window_of"]

I64 = npt.NDArray[np.int64]


def event_window(cols: XSpaceColumns) -> EventWindow:
    """The window of ``cols`` read on its own (read only: the columns stay as
    they are); the loaders take the one :func:`window_of` makes from the step
    conversion's own table (``XSpaceSteps.window``).

    What the file lacks (an HLO program that does not parse...) is logged by
    the step conversion that reads the same columns, not twice: the warnings
    of this read are dropped.
    """
    table = event_table(cols)
    with _quiet():
        roots = find_steps(table)
        attribution = Attribution(table)
        steps = device_steps(table, roots, attribution.device, attribution.launch)
    return window_of(table, roots, attribution, steps, memory_stats(table), int(cols.origin_ns))


def window_of(
    table: EventTable,
    roots: StepRoots,
    attribution: Attribution,
    steps: I64,
    found: MemoryStats,
    origin: int,
) -> EventWindow:
    """The window of ``table``: its steps ``roots`` (their ``ends`` set by
    :func:`device_steps`, which gave each device event of ``attribution`` its
    step ``steps``), its allocator events ``found``
    (:func:`~tfprof_lite.formats.xspace.read.memory.memory_stats`); ``origin``:
    the file's origin (ns). Reads them only: ``attribution`` keeps its op types."""
    device = attribution.device
    real = np.flatnonzero(~table.derived)
    low = int(table.start[real].min()) if len(real) else 0
    high = int(table.end[real].max()) if len(real) else 0
    numbers, starts, ends = _spans(table, roots, device, steps, low, high)
    place = _placer(table, roots)
    return EventWindow(
        start_ns=origin + low // 1000,
        end_ns=origin + high // 1000,
        step_numbers=numbers,
        step_start_ns=origin + starts // 1000,
        step_end_ns=origin + ends // 1000,
        device=_device_events(table, attribution, device, steps, origin),
        host=_host_ops(table, attribution, place, origin),
        memory=_memory_events(table, found, place, origin),
    )


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Drop the package's log records while in the block."""
    logger = logging.getLogger("tfprof_lite")
    drop = logging.Filter("tfprof_lite.never")  # (passes only that logger's records)
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


def _spans(
    table: EventTable, roots: StepRoots, device: I64, steps: I64, low: int, high: int
) -> tuple[list[int], I64, I64]:
    """Each step's number and first span (ps): its root, its work's end and the
    device events it holds (:func:`bind_steps` widens it to the step's records);
    without roots, step 0 holds everything: the whole window."""
    if not roots.events:
        return [0], np.asarray([low], dtype=np.int64), np.asarray([high], dtype=np.int64)
    rows = np.asarray(roots.events, dtype=np.int64)
    starts = table.start[rows].astype(np.int64, copy=True)
    ends = np.maximum(table.end[rows], np.asarray(roots.ends, dtype=np.int64))
    mine = steps >= 0
    np.minimum.at(starts, steps[mine], table.start[device[mine]])
    np.maximum.at(ends, steps[mine], table.end[device[mine]])
    return list(roots.numbers), starts, ends


def bind_steps(window: EventWindow, model: ProfileModel) -> EventWindow:
    """``window`` with each step's span widened to the records ``model`` holds
    for it (the host work a step's records take in, such as its input, lies
    outside its root), as the step times read them; ``window`` itself."""
    starts, ends = window.step_start_ns, window.step_end_ns
    for at, number in enumerate(window.step_numbers):
        execs = model.steps.get(number)
        span = execs.wall_span() if execs is not None else None
        if span is not None:  # (whole microseconds)
            starts[at] = min(int(starts[at]), span[0] * 1000)
            ends[at] = max(int(ends[at]), span[1] * 1000)
    return window


def _texts(table: EventTable, stat: str, events: I64) -> list[str]:
    strings = table.cols.strings
    codes = table.codes[stat][events].tolist()
    return [strings[c] if c >= 0 else "" for c in codes]


def _device_events(
    table: EventTable, attribution: Attribution, events: I64, steps: I64, origin: int
) -> DeviceEvents:
    """The columns of the device events ``events`` (kinds as the steps' records
    tell kernels, copies and other activity apart)."""
    cols = table.cols
    lines = cols.event_line[events]
    ordinal = np.asarray([gpu_ordinal(n) for n in cols.plane_name] or [-1], dtype=np.int64)
    names = [table.names[e] for e in events.tolist()]
    details = _texts(table, "kernel_details", events)
    copies = _texts(table, "memcpy_details", events)
    kernel = np.asarray([bool(d) for d in details], dtype=bool).reshape(len(events))
    copy = ~kernel & np.asarray(
        [bool(c) or n.startswith("Memcpy") for c, n in zip(copies, names)], dtype=bool
    ).reshape(len(events))
    kind = np.full(len(events), KIND_OTHER, dtype=np.int8)
    kind[kernel] = KIND_KERNEL
    kind[copy] = KIND_COPY
    said = [d if k else c for d, c, k in zip(details, copies, kernel.tolist())]
    nodes = attribution.nodes
    types = attribution.typed(attribution.node)
    op = [nodes[n][0] for n in attribution.node.tolist()]
    op_type = [types.get(name) or (nodes[n][1] or "") for name, n in
               zip(op, attribution.node.tolist())]  # fmt: skip
    start = table.start[events]
    return DeviceEvents(
        gpu=ordinal[cols.line_plane[lines]].astype(np.int64),
        stream=np.asarray(cols.line_id, dtype=np.int64).reshape(-1)[lines],
        kind=kind,
        name=names,
        details=said,
        start_ns=origin + start // 1000,
        dur_ns=(table.end[events] - start) // 1000,
        op=op,
        op_type=op_type,
        hlo_op=_texts(table, "hlo_op", events),
        program=_texts(table, "hlo_module", events),
        step=steps.astype(np.int64),
    )


def _placer(table: EventTable, roots: StepRoots) -> Callable[[I64], I64]:
    """The step (index) of each time (ps): :func:`step_of` over the roots, each
    ending at its work's end (read once :func:`device_steps` has set them)."""
    rows = np.asarray(roots.events, dtype=np.int64)
    starts = table.start[rows]
    ends = table.end[rows]
    if len(rows):
        ends = np.maximum(ends, np.asarray(roots.ends, dtype=np.int64))

    def place(times: I64) -> I64:
        return step_of(starts, ends, times).astype(np.int64)

    return place


def _op_rows(table: EventTable, attribution: Attribution) -> tuple[I64, list[tuple[str, str]]]:
    """The host op events (rows) and each one's (name, op type)."""
    ops: dict[int, tuple[str, str]] = dict(attribution.tf_ops)
    ops.update({e: (name, kind) for e, (name, kind, _) in attribution.host_xla.items()})
    ops.update({e: (module, "XlaModule") for e, module in attribution.programs.items()})
    cols = table.cols
    host = table.host_events()
    iterators = [m for m, name in enumerate(cols.meta_name) if name.startswith("Iterator::")]
    if iterators:
        metas = cols.event_meta[host]
        mask = np.zeros(len(cols.meta_name) + 1, dtype=bool)
        mask[iterators] = True
        for e in host[mask[metas]].tolist():
            ops.setdefault(e, (cols.meta_name[int(cols.event_meta[e])], DATASET_TYPE))
    rows = np.fromiter(ops, dtype=np.int64, count=len(ops))
    lines = cols.event_line[rows].astype(np.int64)
    order = np.lexsort((-table.end[rows], table.start[rows], lines))
    rows = rows[order]
    return rows, [ops[e] for e in rows.tolist()]


def _self_times(lines: list[int], starts: list[int], ends: list[int]) -> list[int]:
    """Each event's duration less that of the events directly inside it on its
    line (events by line, then start, longer first); an event that overlaps
    another without being inside it is nobody's child."""
    out = [e - s for s, e in zip(starts, ends)]
    stack: list[int] = []
    for i, (line, start, end) in enumerate(zip(lines, starts, ends)):
        while stack and (lines[stack[-1]] != line or start >= ends[stack[-1]]):
            stack.pop()
        if stack and end <= ends[stack[-1]]:
            out[stack[-1]] -= end - start
        stack.append(i)
    return out


def _host_ops(
    table: EventTable, attribution: Attribution, place: Callable[[I64], I64], origin: int
) -> HostOps:
    """The columns of the window's host op events (see :class:`HostOps`)."""
    rows, named = _op_rows(table, attribution)
    if not len(rows):
        return HostOps()
    cols = table.cols
    lines = cols.event_line[rows].astype(np.int64)
    used, line = distinct_codes(lines, len(cols.line_name))
    planes = cols.line_plane
    labels = [f"{cols.plane_name[int(planes[n])]}/{cols.line_name[n] or n}" for n in used.tolist()]
    start, end = table.start[rows], table.end[rows]
    self_ps = np.asarray(
        _self_times(lines.tolist(), start.tolist(), end.tolist()), dtype=np.int64
    ).reshape(len(rows))
    return HostOps(
        name=[name for name, _ in named],
        op_type=[kind for _, kind in named],
        line=line.reshape(-1).astype(np.int64),
        lines=labels,
        start_ns=origin + start // 1000,
        dur_ns=(end - start) // 1000,
        self_ns=self_ps // 1000,
        step=place(start),
    )


def _memory_events(
    table: EventTable, found: MemoryStats, place: Callable[[I64], I64], origin: int
) -> MemoryEvents:
    """The columns of the window's allocator events ``found`` (see :class:`MemoryEvents`)."""
    rows, stats = found.rows, found.stats
    if not len(rows):
        return MemoryEvents()
    strings = table.cols.strings
    texts = [strings[c] if c >= 0 else "" for c in stats["allocator_name"].tolist()]
    names = [t or "unknown allocator" for t in texts]
    allocators = list(dict.fromkeys(names))
    index = {name: i for i, name in enumerate(allocators)}
    nbytes = stats["bytes"].astype(np.int64)
    times = table.start[rows]
    return MemoryEvents(
        allocators=allocators,
        allocator=np.asarray([index[n] for n in names], dtype=np.int64).reshape(len(rows)),
        time_ns=origin + times // 1000,
        delta=np.where(found.is_alloc, nbytes, -nbytes),
        in_use=stats["in_use"].astype(np.int64),
        op=[strings[c] if c >= 0 else "" for c in stats["tf_op"].tolist()],
        step=place(times),
    )
