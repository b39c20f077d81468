"""Op statistics over the whole window: per op type and per op, host and device.

Contract of :func:`op_stats` (a pure function of the model):

* **Window** (an XSpace: ``ProfileModel.event_window``): every op event of the
  window, inside the steps or not. Host rows are the window's host op events
  (:class:`~tfprof_lite.model.window.HostOps`: TF ops by their ``<name>:<type>``
  events, tf.data iterator events as op type ``Dataset``, XLA programs' host
  executions as ``XlaModule``, XLA CPU ops); an occurrence is one event, its
  time the event's duration, its self time that less the op events nested
  directly inside it on the same thread. Device rows are the window's GPU
  events (kernels, copies, other activity) grouped by the op they add their
  time to, as the steps' records name it (``Unknown`` type when the op has
  none; the event's own name when no op is known); an occurrence is one event
  and its self time its duration (device events do not nest).
* **Steps** (a TF1 RunMetadata or saved profile: no window): the steps' records
  summed over every step (``run_count``, the nodes' CPU time on the host and
  accelerator time on the device, self time equal to the time); ``source`` says
  ``steps`` and the text says so.
* ``share``: an op's (or type's) self time over the sum of the self time of
  its side (host or device), idle time left out: XProf's ``framework_op_stats``
  table without its ``IDLE`` rows divides the same way.
* ``outside``: occurrences outside every step (window only).
* Rows by self time, largest first (then side, type, name). ``top`` keeps the
  first N ops of each side in ``ops``; the types and the totals count all.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from tfprof_lite.base.units import format_time
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.window import EventWindow

__all__ = ["UNKNOWN_TYPE", "OpRow", "OpStats", "OpTypeRow", "op_stats"]

#: The op type of device events whose op has none.
UNKNOWN_TYPE = "Unknown"
_SIDES = ("host", "device")
#: The note of a profile without a window.
STEPS_NOTE = (
    "aggregated from the steps' records (the profile has no window of events: a "
    "RunMetadata or saved profile); time outside the steps is not in it"
)


@dataclass(frozen=True)
class OpRow:
    """One op on one side (``host`` or ``device``); times in nanoseconds."""

    side: str
    op_type: str
    name: str
    count: int
    total_ns: int
    self_ns: int
    share: float
    outside: int = 0


@dataclass(frozen=True)
class OpTypeRow:
    """One op type on one side: its ops (``ops`` distinct names) summed."""

    side: str
    op_type: str
    ops: int
    count: int
    total_ns: int
    self_ns: int
    share: float
    outside: int = 0


@dataclass
class OpStats:
    """Per-type and per-op statistics (see the module docstring)."""

    source: str
    window_ns: int = 0
    steps: int = 0
    self_ns: dict[str, int] = field(default_factory=dict)
    types: list[OpTypeRow] = field(default_factory=list)
    ops: list[OpRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)

    def to_text(self) -> str:
        """The per-type table, then the per-op table of each side."""
        head = (
            f"op statistics over the whole window ({format_time(self.window_ns // 1000)}, "
            f"{self.steps} step{'' if self.steps == 1 else 's'}, ops outside the steps included)"
            if self.source == "window"
            else f"op statistics over the {self.steps} traced steps (from the steps' records)"
        )
        lines = [head]
        if not self.types:
            lines.append("no op events")
        for side in _SIDES:
            types = [t for t in self.types if t.side == side]
            if not types:
                continue
            lines.append(f"{side}: {format_time(self.self_ns.get(side, 0) // 1000)} self time")
            lines.append(_row(("ops", "count", "total", "self", "share", "outside", "type", "")))
            lines += [_row(_type_cells(t)) for t in types]
            lines.append(_row(("", "count", "total", "self", "share", "outside", "type", "op")))
            lines += [_row(_op_cells(op)) for op in self.ops if op.side == side]
        lines += [f"note: {text}" for text in self.notes]
        return "\n".join(lines) + "\n"


def _us(ns: int) -> str:
    return format_time(ns // 1000) if ns >= 1000 else f"{ns / 1000:.3f}us"


def _row(cells: tuple[str, ...]) -> str:
    """Right-aligned numbers first, then the type (and name) left-aligned."""
    *numbers, kind, name = cells
    return "  " + " ".join(f"{c:>10}" for c in numbers) + f"  {kind:<24} {name}".rstrip()


def _type_cells(t: OpTypeRow) -> tuple[str, ...]:
    return (str(t.ops), str(t.count), _us(t.total_ns), _us(t.self_ns),
            f"{100 * t.share:.2f}%", str(t.outside), t.op_type, "")  # fmt: skip


def _op_cells(op: OpRow) -> tuple[str, ...]:
    return ("", str(op.count), _us(op.total_ns), _us(op.self_ns),
            f"{100 * op.share:.2f}%", str(op.outside), op.op_type, op.name)  # fmt: skip


# --------------------------------------------------------------------------- rows


@dataclass
class _Sums:
    """Running sums per (side, type, name)."""

    by_op: dict[tuple[str, str, str], list[int]] = field(default_factory=dict)

    def add(self, key: tuple[str, str, str], count: int, total: int, self_: int, out: int) -> None:
        """One op's occurrences, times and occurrences outside the steps."""
        got = self.by_op.setdefault(key, [0, 0, 0, 0])
        got[0] += count
        got[1] += total
        got[2] += self_
        got[3] += out


def _add_columns(sums: _Sums, side: str, types: list[str], names: list[str],
                 columns: tuple[Any, Any, Any]) -> None:  # fmt: skip
    """Events of one side grouped by (type, name) at once (``columns``:
    duration, self time and whether outside the steps, per event)."""
    if not names:
        return
    keys = [f"{t}\0{n}" for t, n in zip(types, names)]
    distinct, inverse = np.unique(np.asarray(keys, dtype=object), return_inverse=True)
    inverse = inverse.reshape(-1)
    dur, self_, outside = columns
    count = np.bincount(inverse, minlength=len(distinct))
    total = np.bincount(inverse, weights=dur, minlength=len(distinct))
    selfs = np.bincount(inverse, weights=self_, minlength=len(distinct))
    outs = np.bincount(inverse, weights=outside, minlength=len(distinct))
    for i, key in enumerate(distinct.tolist()):
        op_type, name = str(key).split("\0", 1)
        sums.add((side, op_type, name), int(count[i]), int(round(total[i])),
                 int(round(selfs[i])), int(round(outs[i])))  # fmt: skip


def _window_sums(window: EventWindow) -> _Sums:
    sums = _Sums()
    host = window.host
    _add_columns(sums, "host", host.op_type, host.name,
                 (host.dur_ns, host.self_ns, (host.step < 0).astype(np.int64)))  # fmt: skip
    dev = window.device
    types = [t or UNKNOWN_TYPE for t in dev.op_type]
    names = [op or name for op, name in zip(dev.op, dev.name)]
    _add_columns(sums, "device", types, names,
                 (dev.dur_ns, dev.dur_ns, (dev.step < 0).astype(np.int64)))  # fmt: skip
    return sums


def _step_sums(model: ProfileModel) -> _Sums:
    """Every step's records: a node that ran is a host row (its CPU time), and
    a device row too where it has accelerator time."""
    sums = _Sums()
    for step in model.sorted_steps():
        stats = model.stats(step)
        runs, cpu, device = stats.run_count, stats.cpu_exec_micros, stats.accelerator_exec_micros
        for node in np.flatnonzero((runs > 0) | (cpu > 0) | (device > 0)).tolist():
            op_type, name = model.ops[node] or UNKNOWN_TYPE, model.names[node]
            count = int(runs[node])
            host_ns, device_ns = int(cpu[node]) * 1000, int(device[node]) * 1000
            sums.add(("host", op_type, name), count, host_ns, host_ns, 0)
            if device_ns:
                sums.add(("device", op_type, name), count, device_ns, device_ns, 0)
    return sums


def _tables(sums: _Sums, top: int | None) -> tuple[dict[str, int], list[OpTypeRow], list[OpRow]]:
    side_self = {side: 0 for side in _SIDES}
    for (side, _, _), got in sums.by_op.items():
        side_self[side] += got[2]

    def share(side: str, value: int) -> float:
        return value / side_self[side] if side_self[side] else 0.0

    ops = [
        OpRow(side, op_type, name, got[0], got[1], got[2], share(side, got[2]), got[3])
        for (side, op_type, name), got in sums.by_op.items()
    ]
    ops.sort(key=lambda r: (-r.self_ns, _SIDES.index(r.side), r.op_type, r.name))
    grouped: dict[tuple[str, str], list[OpRow]] = {}
    for op in ops:
        grouped.setdefault((op.side, op.op_type), []).append(op)
    types = [
        OpTypeRow(side, op_type, len(rows), sum(r.count for r in rows),
                  sum(r.total_ns for r in rows), sum(r.self_ns for r in rows),
                  share(side, sum(r.self_ns for r in rows)), sum(r.outside for r in rows))
        for (side, op_type), rows in grouped.items()
    ]  # fmt: skip
    types.sort(key=lambda r: (-r.self_ns, _SIDES.index(r.side), r.op_type))
    if top is not None:
        kept = {side: 0 for side in _SIDES}
        cut = []
        for op in ops:
            if kept[op.side] < top:
                kept[op.side] += 1
                cut.append(op)
        ops = cut
    return {s: n for s, n in side_self.items() if n or any(t.side == s for t in types)}, types, ops


def op_stats(model: ProfileModel, top: int | None = None) -> OpStats:
    """The op statistics of ``model`` (see the module docstring); ``top``: the
    most ops listed per side (None: all)."""
    window = model.event_window
    if window is not None:
        sums = _window_sums(window)
        out = OpStats("window", window.duration_ns, len(window.step_numbers))
    else:
        sums = _step_sums(model)
        out = OpStats("steps", 0, len(model.steps), notes=[STEPS_NOTE])
    out.self_ns, out.types, out.ops = _tables(sums, top)
    return out
