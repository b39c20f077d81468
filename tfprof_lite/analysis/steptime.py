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
measured at once over the steps' columns joined
(:class:`~tfprof_lite.analysis.step_join.JoinedSteps`, shared with the overview's
and the input pipeline's measures), linear in records and steps; a profile
whose values the batched path cannot take exactly (a zero start or end, a
negative duration, times too far apart) is measured one step at a time
(:func:`_one_step`), with equal results.

A step of an XSpace cut by the trace's start or stop (``ProfileModel.cut_steps``,
:mod:`tfprof_lite.formats.xspace.read.cut`), or the whole profile of one without
steps, is listed with ``cut`` saying why and left out of the statistics.

tfprof itself only reports one step (or a per-node average) at a time.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from tfprof_lite.analysis.intervals import union_length
from tfprof_lite.analysis.step_join import JoinedSteps, joined_steps
from tfprof_lite.base.shared import shared
from tfprof_lite.base.units import format_time
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


#: The steps' columns joined (kept under this name for the tests).
_Joined = JoinedSteps


def _measure(model: ProfileModel, steps: list[int]) -> list[StepTime | None]:
    """:func:`_one_step` of every step of ``steps``, batched where exact."""
    return _measured(model, JoinedSteps([model.steps[s] for s in steps], steps))


def _measured(model: ProfileModel, joined: JoinedSteps, cut: dict[int, str] | None = None
              ) -> list[StepTime | None]:  # fmt: skip
    """:func:`_measure` of ``joined``'s steps, each with its ``cut`` reason."""
    steps, why = joined.numbers, cut or {}
    if not joined.exact():
        return [
            replace(t, cut=why.get(s, "")) if t is not None and why else t
            for s, t in ((s, _one_step(model, s)) for s in steps)
        ]
    walls, has = joined.walls()
    busy = joined.union()
    ops = np.zeros(joined.n, dtype=np.int64)
    np.add.at(ops, joined.t_at, joined.t_dur)
    devices = joined.devices_used()
    rows = zip(steps, has.tolist(), walls.tolist(), ops.tolist(), busy.tolist(), devices.tolist())
    return [
        StepTime(step, wall, op_time, busy_time,
                 round(op_time / busy_time, 4) if busy_time else 0.0, used, why.get(step, ""))
        if found else None
        for step, found, wall, op_time, busy_time, used in rows
    ]  # fmt: skip


def step_times(model: ProfileModel) -> StepTimeReport:
    """Step timings of every traced step of ``model`` (one report shared within
    a :func:`~tfprof_lite.base.shared.sharing` block: read-only)."""
    return shared("step_times", model, lambda: _step_times(model))


def complete(report: StepTimeReport) -> list[StepTime]:
    """The whole steps of ``report`` (not cut), in step order."""
    return [s for s in report.steps if not s.cut]


def _step_times(model: ProfileModel) -> StepTimeReport:
    report = StepTimeReport()
    measured = _measured(model, joined_steps(model), model.cut_steps)
    report.steps = [timing for timing in measured if timing is not None]
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
