"""JobChecker: op time per job and task of a distributed run (a tfprof_lite checker).

TensorFlow lists ``JobChecker`` in ``ALL_ADVICE`` but never released it: its
internal checker runner is a no-op outside Google, so TF produces no entry for it.
This module is tfprof_lite's own checker under that name.

Contract:

* A node belongs to the task of its canonical device (lower-cased, as tfprof keeps
  it) when that starts with ``/job:<job>/replica:<r>/task:<t>``; its time is its
  total (cpu + accelerator) execution time at the checker's ``step`` (default -1:
  the per-node average over the steps it ran in, as the views compute it). Only
  nodes that ran are counted.
* The entry appears only when the profile spans **at least two tasks** (over all
  jobs), or when the option ``always_report`` is ``"true"``. A local, single-task
  run therefore yields no entry, so ``ALL_ADVICE`` output stays identical to TF's.
* One report per job, jobs in name order, tasks in (replica, task) order::

      job: <job>, tasks: <n>, ops: <n>, time: <time> (<share>%), imbalance (max/mean): %.2f
        task: /job:<job>/replica:<r>/task:<t>, ops: <n>, time: <time> (<share>%)
        ...

  ``share`` is ``100 * time / (time of all counted ops + 1e-10)`` (``%.2f``);
  imbalance is the slowest task's time over the mean task time of the job. A job
  with one task says ``imbalance: n/a (single task)``; a job without op time says
  ``imbalance: n/a (no op time)``.
* Ops on devices without a job/task prefix (e.g. ``/device:cpu:0``) get one more
  report: ``not attributed to a task: ops: <n>, time: <time> (<share>%)``.
* With ``always_report`` and no task at all: ``no executed op is placed on a
  /job:<job>/replica:<r>/task:<t> device``.

* Stragglers: per traced step (or only ``step``) and per job with at least two
  tasks, a task's step time is its busy time (the union of its op records: in
  a synchronous step every task's span ends together and the fast ones idle).
  When the busiest task exceeds the median of the others by at least
  :data:`STRAGGLER_SHARE` of it and :data:`STRAGGLER_MICROS`, one more report
  names it: ``straggler: job <job>: <task> is the slowest in <k> of <n>
  steps, <time> (<pct>%) longer busy than the median of the other tasks on
  average``. On a merged cluster profile (``tfprof_lite.merge``) every task's
  records are there, so this names the slow worker.

Options (strings): ``step`` (an integer; must be an added step, or negative for
the average) and ``always_report`` (``true``/``false``).
"""

from __future__ import annotations

from dataclasses import dataclass

from tfprof_lite.advisor.base import Checker
from tfprof_lite.analysis.intervals import union_length
from tfprof_lite.analysis.straggler import STRAGGLER_MICROS, STRAGGLER_SHARE
from tfprof_lite.base.device_names import task_parts
from tfprof_lite.base.units import format_time
from tfprof_lite.errors import InvalidOptionError
from tfprof_lite.model.profile import ProfileModel

__all__ = [
    "NO_TASK_REPORT",
    "STRAGGLER_MICROS",
    "STRAGGLER_SHARE",
    "JobChecker",
    "TaskKey",
    "TaskTime",
    "straggler_reports",
    "task_times",
    "task_busy",
]


NO_TASK_REPORT = "no executed op is placed on a /job:<job>/replica:<r>/task:<t> device"


@dataclass(frozen=True, order=True)
class TaskKey:
    """A task of a distributed run."""

    job: str
    replica: int
    task: int

    def __str__(self) -> str:
        return f"/job:{self.job}/replica:{self.replica}/task:{self.task}"


@dataclass
class TaskTime:
    """Number of ops that ran on a task and their total time (microseconds)."""

    ops: int = 0
    micros: int = 0


def _task_of(device: str) -> TaskKey | None:
    parts = task_parts(device)
    return TaskKey(*parts) if parts is not None else None


def _tasks_named(model: ProfileModel) -> set[TaskKey]:
    """The tasks the nodes' canonical devices name (those of any step's ops among them)."""
    return {key for dev in set(model.canonical_device) if dev and (key := _task_of(dev))}


def _ran(model: ProfileModel, step: int) -> list[int]:
    """Ids of the nodes with a canonical device that ran at ``step`` (-1: any step)."""
    if step >= 0:
        present = model.steps[step].devices
        return [nid for nid in sorted(present) if model.canonical_device[nid]]
    devices = model.canonical_device
    return [nid for nid in range(len(model)) if model.has_execs[nid] and devices[nid]]


def task_times(model: ProfileModel, step: int = -1) -> tuple[dict[TaskKey, TaskTime], TaskTime]:
    """Per task, the ops that ran at ``step`` and their time; plus the unattributed rest."""
    exec_micros = model.stats(step).exec_micros
    tasks: dict[TaskKey, TaskTime] = {}
    other = TaskTime()
    for nid in _ran(model, step):
        key = _task_of(model.canonical_device[nid])
        bucket = other if key is None else tasks.setdefault(key, TaskTime())
        bucket.ops += 1
        bucket.micros += int(exec_micros[nid])
    return tasks, other


def task_busy(model: ProfileModel, step: int) -> dict[TaskKey, int]:
    """Per task the time in ``step`` during which at least one of its ops ran."""
    execs = model.steps[step]
    spans: dict[TaskKey, list[tuple[int, int]]] = {}
    keys = [_task_of(d) for d in execs.device_names]
    codes = execs.times["dev"].tolist()
    for code, start, dur in zip(codes, execs.times["start"].tolist(), execs.times["dur"].tolist()):
        key = keys[code]
        if key is not None:
            spans.setdefault(key, []).append((start, start + dur))
    return {key: union_length(items) for key, items in spans.items()}


def straggler_reports(model: ProfileModel, steps: list[int]) -> list[str]:
    """One report per job whose slowest task lags the others (see the module doc)."""
    slow: dict[str, dict[TaskKey, list[tuple[float, float]]]] = {}
    counted: dict[str, int] = {}
    for step in steps:
        by_job: dict[str, list[tuple[int, TaskKey]]] = {}
        for key, wall in task_busy(model, step).items():
            by_job.setdefault(key.job, []).append((wall, key))
        for job, walls in by_job.items():
            if len(walls) < 2:
                continue
            counted[job] = counted.get(job, 0) + 1
            wall, key = max(walls)
            others = sorted(w for w, k in walls if k != key)
            median = (others[(len(others) - 1) // 2] + others[len(others) // 2]) / 2
            if wall - median >= max(STRAGGLER_MICROS, STRAGGLER_SHARE * median):
                slow.setdefault(job, {}).setdefault(key, []).append((wall - median, median))
    out = []
    for job in sorted(slow):
        for key, vals in sorted(slow[job].items(), key=lambda kv: -len(kv[1])):
            gaps = [gap for gap, _ in vals]
            shares = [gap / (median or 1) for gap, median in vals]
            out.append(
                f"straggler: job {job}: {key} is the slowest in {len(gaps)} of {counted[job]} "
                f"steps, {format_time(int(sum(gaps) / len(gaps)))} "
                f"({100 * sum(shares) / len(shares):.0f}%) longer busy than the median of the "
                "other tasks on average"
            )
    return out


def _share(micros: int, total: int) -> str:
    return f"{format_time(micros)} ({100.0 * micros / (total + 1e-10):.2f}%)"


def _imbalance(times: list[int]) -> str:
    if len(times) == 1:
        return "imbalance: n/a (single task)"
    if sum(times) == 0:
        return "imbalance: n/a (no op time)"
    mean = sum(times) / len(times)
    return f"imbalance (max/mean): {max(times) / mean:.2f}"


def job_report(job: str, tasks: list[tuple[TaskKey, TaskTime]], total: int) -> str:
    """The report of one job: a summary line, then one indented line per task."""
    ops = sum(t.ops for _, t in tasks)
    micros = sum(t.micros for _, t in tasks)
    lines = [
        f"job: {job}, tasks: {len(tasks)}, ops: {ops}, time: {_share(micros, total)}, "
        + _imbalance([t.micros for _, t in tasks])
    ]
    lines += [f"  task: {key}, ops: {t.ops}, time: {_share(t.micros, total)}" for key, t in tasks]
    return "\n".join(lines)


class JobChecker(Checker):
    """Op time, share and imbalance per job and task (tfprof_lite's own checker)."""

    name = "JobChecker"
    option_names = ("always_report", "step")

    def configure(self, options: dict[str, str]) -> None:
        """Parse ``step`` (integer) and ``always_report`` (``true``/``false``)."""
        self.step = -1
        self.always_report = False
        raw_step = options.get("step", "-1")
        try:
            self.step = int(raw_step)
        except (TypeError, ValueError):
            raise InvalidOptionError(
                f"{self.name}: step must be an integer, got {raw_step!r}"
            ) from None
        flag = options.get("always_report", "false")
        if flag not in ("true", "false"):
            raise InvalidOptionError(
                f"{self.name}: always_report must be 'true' or 'false', got {flag!r}"
            )
        self.always_report = flag == "true"

    def check(self, model: ProfileModel) -> list[str] | None:
        """Per-job reports; None (no entry) for a single-task profile by default."""
        if self.step >= 0 and self.step not in model.steps:
            steps = " ".join(str(s) for s in model.sorted_steps()) or "none"
            raise InvalidOptionError(
                f"{self.name}: step {self.step} not found; available steps: {steps}"
            )
        if not self.always_report and len(_tasks_named(model)) < 2:
            return None  # the ops that ran name fewer tasks still: no need to count them
        tasks, other = task_times(model, self.step)
        if len(tasks) < 2 and not self.always_report:
            return None
        total = sum(t.micros for t in tasks.values()) + other.micros
        by_job: dict[str, list[tuple[TaskKey, TaskTime]]] = {}
        for key in sorted(tasks):
            by_job.setdefault(key.job, []).append((key, tasks[key]))
        reports = [job_report(job, items, total) for job, items in by_job.items()]
        if other.ops:
            reports.append(
                f"not attributed to a task: ops: {other.ops}, time: " + _share(other.micros, total)
            )
        if not tasks:
            reports.append(NO_TASK_REPORT)
        traced = [self.step] if self.step >= 0 else model.sorted_steps()
        reports.extend(straggler_reports(model, traced))
        return reports
