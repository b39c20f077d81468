"""Step time: per-step wall time across all devices versus the sum of op times.

For each traced step: ``wall_micros`` = latest end minus earliest start over every
record of the step (any device); ``op_micros`` = sum of op durations (CPU and
accelerator time, as tfprof counts them); ``busy_micros`` = time during which at
least one op ran; ``parallelism`` = op time / busy time. Over steps:
mean, population standard deviation, min, max, p50, p90 of the wall time.
:func:`outliers` names the steps slower than :data:`OUTLIER_FACTOR` times the
median (a warm-up step of 45 ms among 5 ms steps), which lift the mean.

The wall time spans the step's own span too (``StepExecs.span``: an XSpace's
step marker or inferred call, which is no record), as
:meth:`~tfprof_lite.model.execs.StepExecs.wall_span` does. Every step is
measured at once over the steps' columns joined (:func:`_measure`), linear in
records and steps; a profile whose values the batched path cannot take exactly
(a zero start or end, a negative duration, times too far apart) is measured
one step at a time (:func:`_one_step`), with equal results.

A step of an XSpace cut by the trace's start or stop (``ProfileModel.cut_steps``,
:mod:`tfprof_lite.model.xspace_cut`), or the whole profile of one without
steps, is listed with ``cut`` saying why and left out of the statistics.

tfprof itself only reports one step (or a per-node average) at a time.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from tfprof_lite.analysis.intervals import union_length
from tfprof_lite.base.shared import shared
from tfprof_lite.base.units import format_time
from tfprof_lite.model.execs import StepExecs
from tfprof_lite.model.profile import ProfileModel

__all__ = [
    "OUTLIER_FACTOR",
    "StepTime",
    "StepTimeReport",
    "complete",
    "outliers",
    "percentile",
    "step_times",
]

#: A step is an outlier when its wall time exceeds this many times the median.
OUTLIER_FACTOR = 2.0

I64 = npt.NDArray[np.int64]
#: The batched busy time keys (step, time) into one int64 below this.
_KEY_LIMIT = 1 << 62


@dataclass(frozen=True)
class StepTime:
    """Timing of one traced step (microseconds); ``cut``: why it is no whole
    step (empty for a whole one)."""

    step: int
    wall_micros: int
    op_micros: int
    busy_micros: int
    parallelism: float
    devices: int
    cut: str = ""


@dataclass
class StepTimeReport:
    """Per-step timings and statistics over the whole steps (``cut`` ones are
    listed, not counted)."""

    steps: list[StepTime] = field(default_factory=list)
    mean_micros: float = 0.0
    stddev_micros: float = 0.0
    min_micros: int = 0
    max_micros: int = 0
    p50_micros: float = 0.0
    p90_micros: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)

    def to_text(self) -> str:
        """A small table plus the summary line."""
        lines = ["step   wall        op time     busy        parallelism  devices"]
        for s in self.steps:
            lines.append(
                f"{s.step:<6} {format_time(s.wall_micros):<11} {format_time(s.op_micros):<11} "
                f"{format_time(s.busy_micros):<11} {s.parallelism:<12.2f} {s.devices}"
                + (f"  ({s.cut}: left out)" if s.cut else "")
            )
        whole = complete(self)
        if not whole:
            lines.append("no whole steps: no wall time statistics")
            return "\n".join(lines) + "\n"
        lines.append(
            f"wall time over {len(whole)} steps: mean {format_time(int(self.mean_micros))}, "
            f"stddev {format_time(int(self.stddev_micros))}, min {format_time(self.min_micros)}, "
            f"max {format_time(self.max_micros)}, p50 {format_time(int(self.p50_micros))}, "
            f"p90 {format_time(int(self.p90_micros))}"
        )
        return "\n".join(lines) + "\n"


def percentile(values: list[int], pct: float) -> float:
    """Linear-interpolated percentile (``pct`` in 0..100) of ``values``."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = (len(ordered) - 1) * pct / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _one_step(model: ProfileModel, step: int) -> StepTime | None:
    """One step measured alone (the reference for :func:`_measure`)."""
    execs = model.steps[step]
    span = execs.wall_span()
    if span is None:
        return None
    start, end = span
    intervals = [(s, s + d) for s, d in zip(execs.t_start, execs.t_dur)]
    busy = union_length(intervals)
    op_time = sum(execs.t_dur)
    devices = execs.used_devices()
    return StepTime(
        step=step,
        wall_micros=end - start,
        op_micros=op_time,
        busy_micros=busy,
        parallelism=round(op_time / busy, 4) if busy else 0.0,
        devices=len(devices),
    )


class _Joined:
    """Every step's columns joined (``at``: each column's rows' step index)."""

    def __init__(self, steps: list[StepExecs]) -> None:
        def join(arrays: list[I64]) -> tuple[I64, I64]:
            sizes = np.asarray([len(a) for a in arrays], dtype=np.int64).reshape(len(arrays))
            at = np.repeat(np.arange(len(arrays), dtype=np.int64), sizes)
            joined = np.concatenate(arrays).astype(np.int64) if arrays else np.zeros(0, np.int64)
            return joined, at

        self.n = len(steps)
        self.t_start, self.t_at = join([e.times["start"] for e in steps])
        self.t_dur, _ = join([e.times["dur"] for e in steps])
        self.s_start, self.s_at = join([e.spans["start"] for e in steps])
        self.s_end, _ = join([e.spans["end"] for e in steps])
        self.dev, self.d_at = join([e.pairs["dev"] for e in steps])
        spans = [e.span for e in steps]
        self.has_span = np.asarray([s is not None for s in spans], dtype=bool).reshape(self.n)
        self.span = np.asarray([(s.start, s.end) if s else (0, 0) for s in spans],
                               dtype=np.int64).reshape(self.n, 2)  # fmt: skip

    def exact(self) -> bool:
        """Whether the batched measures equal the per-step ones here."""
        if (self.s_start == 0).any() or (self.s_end == 0).any() or (self.t_dur < 0).any():
            return False
        if not len(self.t_start):
            return True
        width = self.width()
        return width * self.n < _KEY_LIMIT and int(self.t_dur.max()) * len(self.t_dur) < _KEY_LIMIT

    def width(self) -> int:
        """A bound on the time records' ends, from their first start, plus one."""
        return int(self.t_start.max()) + int(self.t_dur.max()) - int(self.t_start.min()) + 1


def _walls(j: _Joined) -> tuple[I64, I64]:
    """Each step's wall time and whether it has one (a start or a span)."""
    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    first = np.full(j.n, big, dtype=np.int64)
    last = np.full(j.n, small, dtype=np.int64)
    np.minimum.at(first, j.s_at, j.s_start)
    np.maximum.at(last, j.s_at, j.s_end)
    has = np.zeros(j.n, dtype=bool)
    has[j.s_at] = True
    first = np.where(j.has_span, np.minimum(first, j.span[:, 0]), first)
    last = np.where(j.has_span, np.maximum(last, j.span[:, 1]), last)
    has |= j.has_span
    return np.where(has, last - first, 0), has


def _busy(j: _Joined) -> I64:
    """Each step's busy time: the union of its time records, for all steps at
    once (records by step then start; each adds what runs past the latest end
    of the step's records before it)."""
    busy = np.zeros(j.n, dtype=np.int64)
    if not len(j.t_start):
        return busy
    low, width = int(j.t_start.min()), j.width()
    start = j.t_start - low
    end = start + j.t_dur
    order = np.lexsort((start, j.t_at))
    at, start, end = j.t_at[order], start[order], end[order]
    reach = np.maximum.accumulate(at * width + end) - at * width  # (keys rise by step)
    before = np.empty_like(reach)
    before[0] = -1
    before[1:] = reach[:-1]
    before[np.flatnonzero(np.diff(at)) + 1] = -1  # a step's first record
    np.add.at(busy, at, np.maximum(end - np.maximum(start, before), 0))
    return busy


def _devices(j: _Joined) -> I64:
    """How many devices each step's nodes ran on (its distinct device codes)."""
    keep = j.dev >= 0
    codes, at = j.dev[keep], j.d_at[keep]
    width = int(codes.max()) + 1 if len(codes) else 1
    present = np.zeros(j.n * width, dtype=bool)
    present[at * width + codes] = True
    counts: I64 = present.reshape(j.n, width).sum(axis=1).astype(np.int64)
    return counts


def _measure(model: ProfileModel, steps: list[int]) -> list[StepTime | None]:
    """:func:`_one_step` of every step of ``steps``, batched where exact."""
    joined = _Joined([model.steps[s] for s in steps])
    if not joined.exact():
        return [_one_step(model, s) for s in steps]
    walls, has = _walls(joined)
    busy = _busy(joined)
    ops = np.zeros(joined.n, dtype=np.int64)
    np.add.at(ops, joined.t_at, joined.t_dur)
    devices = _devices(joined)
    out: list[StepTime | None] = []
    rows = zip(steps, has.tolist(), walls.tolist(), ops.tolist(), busy.tolist(), devices.tolist())
    for step, found, wall, op_time, busy_time, used in rows:
        out.append(
            StepTime(step, wall, op_time, busy_time,
                     round(op_time / busy_time, 4) if busy_time else 0.0, used)
            if found else None
        )  # fmt: skip
    return out


def step_times(model: ProfileModel) -> StepTimeReport:
    """Step timings of every traced step of ``model`` (one report shared within
    a :func:`~tfprof_lite.base.shared.sharing` block: read-only)."""
    return shared("step_times", model, lambda: _step_times(model))


def complete(report: StepTimeReport) -> list[StepTime]:
    """The whole steps of ``report`` (not cut), in step order."""
    return [s for s in report.steps if not s.cut]


def _step_times(model: ProfileModel) -> StepTimeReport:
    report = StepTimeReport()
    cut = model.cut_steps
    ordered = model.sorted_steps()
    for step, timing in zip(ordered, _measure(model, ordered), strict=True):
        if timing is not None:
            report.steps.append(replace(timing, cut=cut.get(step, "")))
    walls = [s.wall_micros for s in complete(report)]
    if walls:
        mean = sum(walls) / len(walls)
        report.mean_micros = mean
        report.stddev_micros = math.sqrt(sum((w - mean) ** 2 for w in walls) / len(walls))
        report.min_micros = min(walls)
        report.max_micros = max(walls)
        report.p50_micros = percentile(walls, 50)
        report.p90_micros = percentile(walls, 90)
    return report


def outliers(report: StepTimeReport, factor: float = OUTLIER_FACTOR) -> list[StepTime]:
    """The whole steps of ``report`` whose wall time is above ``factor`` times
    the median wall time, in step order."""
    limit = factor * report.p50_micros
    return [s for s in complete(report) if s.wall_micros > limit] if report.p50_micros else []
