"""Where each step of an XSpace went, and tf.data's own iterator stages.

:func:`trace_input` splits every step's window (its record on the steps
device) into parts, each instant going to the first that holds it:

1. ``input``: waiting for the input pipeline: the iterator's work for the
   step (``IteratorGetNextOp::DoCompute`` on tf.data's consumer thread, an
   ``IteratorGetNext*`` op, ``EagerLocalExecute: IteratorGetNext*``) on any
   thread, and batch transfers of the step's thread (``device_put``,
   ``H2D``, ``TransferToDevice``, ``BufferFromHostBuffer``);
2. ``device``: device compute: GPU kernels, any event of another host thread
   that is not tf.data's (TF ops on the executor's threads, XLA's CPU
   programs), and TF ops or XLA ops on the step's thread itself;
3. ``copies``: GPU copies (memcpy events);
4. ``launch``: the step's thread dispatching programs or launching kernels;
5. ``idle``: the step's thread waiting (``block_until_ready``, ``Await``,
   ``Synchronize``...) while nothing above ran;
6. ``host``: the rest: the step's thread itself at work (Python, NumPy, the
   framework's runtime), traced or not: a thread inside its step is never idle.

The stages: every ``Iterator::...`` event (tf.data's own, on its threads),
clipped to the steps, by its full name: total time and self time (less the
stages nested on the same thread). A ``Prefetch`` stage's time on the
consumer's side is its wait for the thread that runs its input: no self time.
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt

from tfprof_lite.formats.xspace.read.events import PLANE_GPU, PLANE_HOST, EventTable
from tfprof_lite.formats.xspace.read.steps import StepRoots, StepSpan
from tfprof_lite.model.step_spans import TraceInput

__all__ = ["PARTS", "TraceInput", "trace_input"]

I64 = npt.NDArray[np.int64]
#: The parts of a step, in the order each instant is given to them.
PARTS = ("input", "device", "copies", "launch", "idle", "host")
_INPUT, _DEVICE, _COPIES, _LAUNCH, _IDLE = range(5)
_WAIT_INPUT = re.compile(
    r"IteratorGetNextOp::DoCompute|(?:EagerLocalExecute: |.*:)IteratorGetNext\w*|IteratorGetNext\w*"
)
_TRANSFER = re.compile(r".*(?:device_put|H2D|TransferToDevice|BufferFromHostBuffer|MemcpyHtoD).*")
_LAUNCH_RE = re.compile(r".*(?:LaunchKernel|cuLaunch|PjitFunction|ExecuteHelper|Dispatch).*")
_WAIT_RE = re.compile(
    r".*(?:block_until_ready|try_to_block|Await|Synchroni[sz]e|BlockHost|\(wait).*"
)
_TF_OP = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*:[A-Z_][a-zA-Z0-9_]*")
_MEMCPY = re.compile(r"(?i).*memcpy.*|.*memset.*")


def _union(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(spans):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        elif hi > lo:
            out.append((lo, hi))
    return out


def _take(
    spans: list[tuple[int, int]], taken: list[tuple[int, int]]
) -> tuple[int, list[tuple[int, int]]]:
    """The length of ``spans`` outside ``taken``; ``taken`` with them added."""
    mine = _union(spans)
    both = _union(mine + taken)
    return sum(h - lo for lo, h in both) - sum(h - lo for lo, h in taken), both


def _meta_classes(table: EventTable) -> dict[str, npt.NDArray[np.int8]]:
    """Per metadata row, its class as seen from the step's thread and elsewhere."""
    names = table.cols.meta_name
    own = np.full(len(names) + 1, -1, dtype=np.int8)
    other = np.full(len(names) + 1, -1, dtype=np.int8)
    for row, name in enumerate(names):
        if _WAIT_INPUT.fullmatch(name):
            own[row] = other[row] = _INPUT
        elif _TRANSFER.fullmatch(name):
            own[row] = _INPUT
        elif _LAUNCH_RE.fullmatch(name):
            own[row] = _LAUNCH
        elif _WAIT_RE.fullmatch(name):
            own[row] = _IDLE
        elif _TF_OP.fullmatch(name):
            own[row] = _DEVICE
        if other[row] < 0 and not name.startswith(("ThreadpoolListener", "Iterator::")):
            other[row] = _DEVICE
    return {"own": own, "other": other}


def _event_classes(table: EventTable, lines: I64) -> I64:
    """Each event's part (-1: none) for the step threads in ``lines``."""
    cols = table.cols
    classes = _meta_classes(table)
    meta = cols.event_meta.astype(np.int64)
    line = cols.event_line.astype(np.int64)
    own = np.isin(line, lines)
    out = np.where(own, classes["own"][meta], classes["other"][meta]).astype(np.int64)
    data = np.asarray(["tf_data" in n for n in cols.line_name], dtype=bool)
    out[data[line] & (out == _DEVICE)] = -1
    hlo = table.codes.get("hlo_op")
    if hlo is not None and len(hlo.owners):
        owners = hlo.owners.astype(np.int64)
        out[owners[own[owners] & (out[owners] < 0)]] = _DEVICE
    gpu = table.plane_kind == PLANE_GPU
    names = np.asarray([bool(_MEMCPY.fullmatch(n)) for n in cols.meta_name] + [False])
    out[gpu] = np.where(names[meta[gpu]], _COPIES, _DEVICE)
    out[table.derived | ((table.plane_kind != PLANE_HOST) & ~gpu)] = -1
    return out


def _windows(spans: list[StepSpan | None], origin_ns: int) -> list[tuple[int, int] | None]:
    """Each step's window in ps from the file's origin (its span, whole µs)."""
    ps = [None if s is None else (s.start * 1000 - origin_ns, s.end * 1000 - origin_ns)
          for s in spans]  # fmt: skip
    return [None if w is None else (w[0] * 1000, w[1] * 1000) for w in ps]


def _parts(table: EventTable, cls: I64, lo: int, hi: int) -> dict[str, int]:
    hit = np.flatnonzero((table.start < hi) & (table.end > lo) & (cls >= 0))
    starts = np.maximum(table.start[hit], lo).tolist()
    ends = np.minimum(table.end[hit], hi).tolist()
    by: list[list[tuple[int, int]]] = [[] for _ in range(5)]
    for c, s, e in zip(cls[hit].tolist(), starts, ends):
        by[c].append((s, e))
    taken: list[tuple[int, int]] = []
    out: dict[str, int] = {}
    for part, spans in zip(PARTS, by):
        ps, taken = _take(spans, taken)
        out[part] = ps // 1_000_000
    out["host"] = max(0, (hi - lo - sum(h - s for s, h in taken)) // 1_000_000)
    return out


def _all_parts(
    table: EventTable, cls: I64, numbers: list[int], windows: list[tuple[int, int] | None]
) -> dict[int, dict[str, int]]:
    """Every step's parts (:func:`_parts` of each window), in one pass over the
    events when the windows do not overlap: each event meets only the windows
    it overlaps (found by binary search), and each part's union is measured
    over all windows at once."""
    kept = [(n, w) for n, w in zip(numbers, windows) if w is not None]
    found = _disjoint([w for _, w in kept]) if kept else None
    if found is None:
        return {n: _parts(table, cls, *w) for n, w in kept}
    lo, hi = found
    events = np.flatnonzero(cls >= 0)
    start, end = table.start[events], table.end[events]
    first = np.searchsorted(hi, start, side="right")  # the first window ending after it
    count = np.maximum(np.searchsorted(lo, end, side="left") - first, 0)
    which = np.repeat(np.arange(len(events)), count)
    # the window of each (event, window) pair: first + its rank among the pairs
    offsets = np.arange(len(which)) - np.repeat(np.cumsum(count) - count, count)
    win = first[which] + offsets
    span_lo = np.maximum(start[which], lo[win])
    span_hi = np.minimum(end[which], hi[win])
    part = cls[events][which]
    unions = [_unions(win, span_lo, span_hi, part <= k, len(lo)) for k in range(len(PARTS) - 1)]
    taken = np.zeros(len(lo), dtype=np.int64)
    ps: dict[str, list[int]] = {}
    for name, union in zip(PARTS, unions):
        ps[name] = ((union - taken) // 1_000_000).tolist()
        taken = union
    ps["host"] = np.maximum((hi - lo - taken) // 1_000_000, 0).tolist()
    starts = np.asarray([w[0] for _, w in kept], dtype=np.int64)
    rank = np.empty(len(kept), dtype=np.int64)  # each step's window among the sorted ones
    rank[np.argsort(starts, kind="stable")] = np.arange(len(kept))
    out: dict[int, dict[str, int]] = {}
    for (number, _), at in zip(kept, rank.tolist()):
        out[number] = {name: ps[name][at] for name in PARTS}
    return out


def _unions(win: I64, lo: I64, hi: I64, sel: npt.NDArray[np.bool_], n: int) -> I64:
    """Per window ``0 .. n-1``, the length of the union of its spans in ``sel``
    (the windows are disjoint and ascending, every span inside its window)."""
    win, lo, hi = win[sel], lo[sel], hi[sel]
    out = np.zeros(n, dtype=np.int64)
    if not len(win):
        return out
    order = np.lexsort((lo, win))
    win, lo, hi = win[order], lo[order], hi[order]
    reach = np.maximum.accumulate(hi)  # spans of earlier windows end before this one
    prior = np.concatenate([[np.iinfo(np.int64).min], reach[:-1]])
    np.add.at(out, win, np.maximum(reach - np.maximum(lo, prior), 0))
    return out


def _disjoint(windows: list[tuple[int, int]]) -> tuple[I64, I64] | None:
    """The windows' starts and ends by start, when no two overlap (else None)."""
    lo = np.asarray([w[0] for w in windows], dtype=np.int64)
    hi = np.asarray([w[1] for w in windows], dtype=np.int64)
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], hi[order]
    if (hi < lo).any() or (hi[:-1] > lo[1:]).any():
        return None
    return lo, hi


def _inside(windows: list[tuple[int, int]], start: I64, end: I64) -> I64:
    """The time of each span ``start .. end`` inside ``windows`` (summed over them)."""
    found = _disjoint(windows) if windows else None
    if found is None:  # overlapping windows: each span against each window
        return np.asarray(
            [
                sum(max(0, min(e, h) - max(s, lo)) for lo, h in windows)
                for s, e in zip(start.tolist(), end.tolist())
            ],
            dtype=np.int64,
        ).reshape(-1)
    lo, hi = found
    before = np.concatenate([[0], np.cumsum(hi - lo)])

    def covered(t: I64) -> I64:  # window time before t
        at = np.searchsorted(lo, t, side="right") - 1
        pos = np.maximum(at, 0)
        part = np.clip(np.minimum(t, hi[pos]) - lo[pos], 0, None)
        out: I64 = np.where(at >= 0, before[pos] + part, 0)
        return out

    inside: I64 = np.maximum(covered(end) - covered(start), 0)
    return inside


def _stages(table: EventTable, windows: list[tuple[int, int]], into: dict[str, list[int]]) -> None:
    """Add each ``Iterator::`` stage's total and self ps inside ``windows``."""
    names = table.cols.meta_name
    is_stage = np.asarray([n.startswith("Iterator::") for n in names] + [False])
    meta = table.cols.event_meta.astype(np.int64)
    rows = np.flatnonzero(is_stage[meta] & ~table.derived)
    if not len(rows):
        return
    lines = table.cols.event_line[rows].astype(np.int64)
    order = np.lexsort((-table.end[rows], table.start[rows], lines))
    rows = rows[order]
    within = _inside(windows, table.start[rows], table.end[rows]).tolist()
    stack: list[tuple[int, int, str, int]] = []  # line, end, name, self ps
    for ev, inside in zip(rows.tolist(), within):
        line, start, end = table.line_of(ev), int(table.start[ev]), int(table.end[ev])
        while stack and (stack[-1][0] != line or stack[-1][1] <= start):
            _close(stack.pop(), into)
        name = names[int(meta[ev])]
        if stack:  # nested on the same thread: not its parent's own time
            p = stack[-1]
            stack[-1] = (p[0], p[1], p[2], p[3] - inside)
        acc = into.setdefault(name, [0, 0])
        acc[0] += inside
        stack.append((line, end, name, inside))
    while stack:
        _close(stack.pop(), into)


def _close(entry: tuple[int, int, str, int], into: dict[str, list[int]]) -> None:
    _, _, name, own = entry
    if not name.rsplit("::", 1)[-1].startswith("Prefetch"):
        into[name][1] += max(0, own)


def trace_input(
    table: EventTable, roots: StepRoots, numbers: list[int], spans: list[StepSpan | None],
    origin_ns: int,
) -> TraceInput | None:  # fmt: skip
    """The parts of each step and the tf.data stages (None without step roots)."""
    if not roots.events or table.names == []:
        return None
    # (return_index: a bare np.unique imports numpy.ma, some 20 ms)
    lines = np.unique([table.line_of(e) for e in roots.events], return_index=True)[0]
    lines = lines.astype(np.int64)
    cls = _event_classes(table, lines)
    out = TraceInput()
    windows = _windows(spans, origin_ns)
    out.steps = _all_parts(table, cls, numbers, windows)
    stages: dict[str, list[int]] = {}
    _stages(table, [w for w in windows if w is not None], stages)
    out.stages = {k: [t // 1_000_000, s // 1_000_000] for k, (t, s) in stages.items()}
    return out
