"""Per-node averages over the whole steps of a profile: cut steps left out.

Contract: :func:`whole_step_stats` is :meth:`ProfileModel.stats` ``(-1)`` (each
node's self values averaged over the steps it ran in) with the steps in
``ProfileModel.cut_steps`` (an XSpace's steps cut by the trace's start or stop)
taken out: the model's running sums less those steps' totals, so the cost is
that of the cut steps, not of every step. With no cut step (every TF1
profile), or when every step is cut, it is ``model.stats(-1)`` itself. Our own
analyses (the overview's top ops) read it; the tfprof views keep tfprof's
all-steps average.
"""

from __future__ import annotations

import numpy as np

from tfprof_lite.model.int64 import unsigned_mean
from tfprof_lite.model.profile import NodeStats, ProfileModel

__all__ = ["whole_step_stats"]


def whole_step_stats(model: ProfileModel) -> NodeStats:
    """The per-node averages over the steps not cut (see the module docstring)."""
    cut = [step for step in model.cut_steps if step in model.steps]
    if not cut or len(cut) >= len(model.steps):
        return model.stats(-1)
    n = len(model.names)
    count, sums = model._running_sums(n)  # noqa: SLF001 - the model's own running sums
    count = count.copy()
    sums = {name: values.copy() for name, values in sums.items()}
    for step in cut:
        totals = model.steps[step].totals(n)
        count -= totals.present.astype(np.int64)
        for name in sums:
            sums[name] -= getattr(totals, name)
    exec_micros = unsigned_mean(sums["accelerator_exec_micros"] + sums["cpu_exec_micros"], count)
    means = {name: unsigned_mean(values, count) for name, values in sums.items()}
    static = np.asarray(model.static_float_ops, dtype=np.int64)
    ran = np.asarray(model.has_execs, dtype=bool)
    float_ops = np.where(ran, static * means["run_count"], static)
    return NodeStats(
        step=-1,
        exec_micros=exec_micros,
        float_ops=float_ops,
        parameters=model.parameters(),
        **means,
    )
