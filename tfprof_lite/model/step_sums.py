"""Per-node statistics of a :class:`~tfprof_lite.model.profile.ProfileModel`:
one step's, and the all-steps average kept as running sums.

The running sums (:class:`~tfprof_lite.model.execs.RunningSums`) hold every
step's totals added once. :func:`fold_step` adds the step just ingested in O(1)
when nothing else changed since the sums were last current (checked with
:attr:`StepExecs.changes <tfprof_lite.model.execs.StepExecs>`), so adding N
steps costs O(N), not O(N²); :func:`running_sums` walks the steps once when
anything else may have changed, and starts over when a step it included did.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from tfprof_lite.base.metrics import METRICS
from tfprof_lite.model.execs import RunningSums, StepExecs
from tfprof_lite.model.int64 import unsigned_mean

if TYPE_CHECKING:
    from tfprof_lite.model.profile import ProfileModel

__all__ = ["SUMMED", "NodeStats", "compute_stats", "fold_step", "running_sums"]

IntArray = npt.NDArray[np.int64]

#: The statistics summed from each step's records (the others are derived).
SUMMED = tuple(m.name for m in METRICS if m.per_step)


@dataclass
class NodeStats:
    """Self values of every node for one query step (arrays indexed by node id)."""

    step: int
    run_count: IntArray
    exec_micros: IntArray
    accelerator_exec_micros: IntArray
    cpu_exec_micros: IntArray
    requested_bytes: IntArray
    peak_bytes: IntArray
    residual_bytes: IntArray
    output_bytes: IntArray
    float_ops: IntArray
    parameters: IntArray


def compute_stats(model: ProfileModel, step: int) -> NodeStats:
    """Per-node self values for ``step`` (negative: the per-node average over
    the steps each node ran in)."""
    n = len(model.names)
    if step < 0:
        count, sums = running_sums(model, n)
    else:
        count = np.zeros(n, dtype=np.int64)
        sums = {name: np.zeros(n, dtype=np.int64) for name in SUMMED}
        if step in model.steps:
            totals = model.steps[step].totals(n)
            count = totals.present.astype(np.int64)
            sums = {name: getattr(totals, name) for name in SUMMED}
    exec_micros = sums["accelerator_exec_micros"] + sums["cpu_exec_micros"]
    if step < 0:
        exec_micros = unsigned_mean(exec_micros, count)
        sums = {name: unsigned_mean(sums[name], count) for name in SUMMED}
    static = np.asarray(model.static_float_ops, dtype=np.int64)
    ran = np.asarray(model.has_execs, dtype=bool)
    float_ops = np.where(ran, static * sums["run_count"], static)
    return NodeStats(
        step=step,
        exec_micros=exec_micros,
        float_ops=float_ops,
        parameters=model.parameters(),
        **sums,
    )


def running_sums(model: ProfileModel, n: int) -> tuple[IntArray, dict[str, IntArray]]:
    """Per-node step counts and sums over every step, kept between calls: a
    new step adds its totals once, so the all-steps average costs the same
    after 5 steps or 500; a step that changed makes them start over."""
    run = model._running  # noqa: SLF001 - the model's own running sums
    steps = model.steps
    if run is None or any(s not in steps or steps[s].version != v for s, v in run.included.items()):
        run = model._running = RunningSums(SUMMED)  # noqa: SLF001
    run.pad(n)
    for s, execs in steps.items():
        if run.included.get(s) != execs.version:
            run.add(execs.totals(n))
            run.included[s] = execs.version
    run.seen = StepExecs.changes
    return run.count, run.sums


def fold_step(model: ProfileModel, step: int, execs: StepExecs, before: int, own: int) -> None:
    """Fold step ``step`` (``execs``, just changed) into the running sums.

    ``before``: :attr:`StepExecs.changes` before the step changed; ``own``: the
    step's version then. When the sums were current at ``before``, did not
    include the step, and every change since is the step's own, only its
    totals are added; otherwise :func:`running_sums` checks every step.
    """
    run = model._running  # noqa: SLF001
    alone = StepExecs.changes - before == execs.version - own
    if run is not None and run.seen == before and step not in run.included and alone:
        n = len(model.names)
        run.pad(n)
        run.add(execs.totals(n))
        run.included[step] = execs.version
        run.seen = StepExecs.changes
    else:
        running_sums(model, len(model.names))
