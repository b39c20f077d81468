"""The trace viewer's records: every traced step on one axis, in columns.

Contract of :func:`laid_out` (read by :func:`tfprof_lite.report.trace.trace_data`):
per record its device (``lane``, an index into ``devices``), ``start`` on the
shifted axis, ``dur``, node (``node``: a node id, or ``-1 - k`` for the k-th
tracer key in ``tracer_keys``) and kind code (an index into :data:`KINDS`), in
step order and, within a step, op time records (in the step's order) before the
GPU tracer records (in theirs). Steps are laid out one after another as
:mod:`tfprof_lite.outputs.steps_trace` does (a step that would overlap the
previous one is shifted after it, :data:`STEP_GAP_MICROS` later); ``steps`` lists
``[step, start, end]`` on that axis.

Tracer records are those of devices without op time in the step (``stream:N``,
``memcpy``, ``sync``) that have a start, each at least 1 µs long, keyed by
(``"kernel"``, kernel name, raw node name); what a record is, is read once per
distinct (device, name, label).

An XSpace's GPU events outside every step (``ProfileModel.event_window``)
follow the steps' records, at their own times, on lanes named ``<device>
(outside steps)`` (as :mod:`tfprof_lite.outputs.steps_trace` draws them),
keyed as tracer records by their kernel and the op they belong to.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tfprof_lite.analysis.kernels import KIND_KERNEL, KIND_MEMCPY, KIND_SYNC, kernel_name
from tfprof_lite.base.arrays import I64, empty_i64
from tfprof_lite.model.execs import KIND_ACCELERATOR, StepExecs
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.window import KIND_COPY, EventWindow, outside_lane

__all__ = ["KINDS", "STEP_GAP_MICROS", "LaidOut", "laid_out"]


#: Gap between a step and the next when the next had to be shifted.
STEP_GAP_MICROS = 10
#: Record kinds: tfprof's CPU and accelerator time, then GPU tracer records.
KINDS = ("cpu", "accelerator", KIND_KERNEL, KIND_MEMCPY, KIND_SYNC)
_Columns = tuple[I64, I64, I64, I64, I64]  # lane, start, dur, node, kind


@dataclass
class LaidOut:
    """The records of every step in columns (see the module docstring)."""

    devices: list[str] = field(default_factory=list)
    lane: I64 = field(default_factory=empty_i64)
    start: I64 = field(default_factory=empty_i64)
    dur: I64 = field(default_factory=empty_i64)
    node: I64 = field(default_factory=empty_i64)
    kind: I64 = field(default_factory=empty_i64)
    steps: list[list[int]] = field(default_factory=list)
    tracer_keys: list[tuple[str, str, str]] = field(default_factory=list)


def _tracer_kind(dev: str, label: str) -> int:
    """The kind code of a GPU tracer record on device ``dev``."""
    tail = dev.rsplit("/", 1)[-1]
    if tail == "memcpy" or "<" in tail or label.lower().startswith("memcpy"):
        return KINDS.index(KIND_MEMCPY)
    return KINDS.index(KIND_SYNC if tail == "sync" else KIND_KERNEL)


class _Layout:
    """Lanes and tracer keys met so far, and what each tracer record is."""

    def __init__(self) -> None:
        self.lanes: dict[str, int] = {}
        self.keys: dict[tuple[str, str, str], int] = {}
        #: (device, name, label) -> its row in ``read`` (lane, node code, kind code).
        self.said: dict[tuple[str, str, str], int] = {}
        self.read: list[tuple[int, int, int]] = []
        self._table = np.zeros((0, 3), dtype=np.int64)  # ``read`` as an array
        #: The last step's records and what they are (rows of ``read``).
        self._last: tuple[list[tuple[str, str, str]], I64] = ([], self._table)

    def lane(self, dev: str) -> int:
        return self.lanes.setdefault(dev, len(self.lanes))

    def _read(self, triple: tuple[str, str, str]) -> tuple[int, int, int]:
        dev, name, label = triple
        code = _tracer_kind(dev, label)
        key = ("kernel", kernel_name(label, name, KINDS[code]), name)
        node = -1 - self.keys.setdefault(key, len(self.keys))
        return self.lane(dev), node, code

    def times(self, execs: StepExecs) -> _Columns:
        """The step's op time records."""
        times = execs.times
        lanes = np.asarray([self.lane(d) for d in execs.device_names], dtype=np.int64)
        return (
            lanes[times["dev"]],
            times["start"].astype(np.int64),
            times["dur"].astype(np.int64),
            times["node"].astype(np.int64),
            (times["kind"] == KIND_ACCELERATOR).astype(np.int64),
        )

    def tracer(self, execs: StepExecs, taken: I64) -> _Columns:
        """The step's tracer records on devices other than ``taken`` (lanes)."""
        cols = execs.kernels
        triples = list(zip(cols.dev, cols.name, cols.label))
        n = len(triples)
        if triples != self._last[0]:  # (a training loop's steps repeat their records)
            said = self.said
            for triple in dict.fromkeys(triples):
                if triple not in said:
                    said[triple] = len(self.read)
                    self.read.append(self._read(triple))
            if len(self._table) != len(self.read):
                self._table = np.asarray(self.read, dtype=np.int64).reshape(len(self.read), 3)
            rows = np.asarray([said[t] for t in triples], dtype=np.int64).reshape(n)
            self._last = (triples, self._table[rows])
        read = self._last[1]
        start = np.asarray(cols.start, dtype=np.int64).reshape(n)
        keep = (start > 0) & ~np.isin(read[:, 0], taken)
        dur = np.maximum(np.asarray(cols.dur, dtype=np.int64).reshape(n)[keep], 1)
        return read[keep, 0], start[keep], dur, read[keep, 1], read[keep, 2]


def _last_end(start: I64, dur: I64) -> int:
    """The latest end of some records (in Python integers when past int64)."""
    if int(start.max()) + int(dur.max()) <= np.iinfo(np.int64).max:
        return int((start + dur).max())
    ends: list[int] = [s + d for s, d in zip(start.tolist(), dur.tolist())]
    return max(ends)


def _outside(window: EventWindow, layout: _Layout) -> _Columns:
    """The window's GPU events outside every step (see the module docstring)."""
    device = window.device
    rows = np.flatnonzero(device.step < 0)
    gpu, kind = device.gpu[rows].tolist(), device.kind[rows].tolist()
    lanes = [layout.lane(outside_lane(g, k)) for g, k in zip(gpu, kind, strict=True)]
    codes = [KINDS.index(KIND_MEMCPY if k == KIND_COPY else KIND_KERNEL) for k in kind]
    keys = layout.keys
    nodes = [-1 - keys.setdefault(("kernel", device.name[r], device.op[r]), len(keys))
             for r in rows.tolist()]  # fmt: skip
    return (
        np.asarray(lanes, dtype=np.int64).reshape(-1), device.start_ns[rows] // 1000,
        np.maximum(device.dur_ns[rows] // 1000, 1), np.asarray(nodes, dtype=np.int64).reshape(-1),
        np.asarray(codes, dtype=np.int64).reshape(-1),
    )  # fmt: skip


def laid_out(model: ProfileModel) -> LaidOut:
    """Every step's records on one axis (see the module docstring)."""
    layout = _Layout()
    out = LaidOut()
    parts: list[_Columns] = []
    cursor: int | None = None
    for step in model.sorted_steps():
        execs = model.steps[step]
        own = layout.times(execs)
        if len(execs.kernels):
            tracer = layout.tracer(execs, np.unique(own[0], return_index=True)[0])
            cols = tuple(np.concatenate([a, b]) for a, b in zip(own, tracer))
        else:  # (no GPU tracer record: a CPU profile's steps)
            cols = own
        lane, start, dur, node, kind = cols
        if not len(lane):
            continue
        first, last = int(start.min()), _last_end(start, dur)
        shift = 0 if cursor is None or first >= cursor else cursor - first
        parts.append((lane, start + shift, dur, node, kind))
        out.steps.append([step, first + shift, last + shift])
        cursor = last + shift + STEP_GAP_MICROS
    if model.event_window is not None:
        outside = _outside(model.event_window, layout)
        if len(outside[0]):
            parts.append(outside)
    if parts:
        out.lane, out.start, out.dur, out.node, out.kind = (
            np.concatenate(col) for col in zip(*parts)
        )
    out.devices = list(layout.lanes)
    out.tracer_keys = list(layout.keys)
    return out
