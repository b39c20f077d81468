"""Per-node averages without the cut steps (:mod:`tfprof_lite.model.whole_steps`).

On the H100 mlp sample, whose first traced step is cut by the trace's start,
the averages equal those computed from the whole steps one by one; without cut
steps (a TF1 profile) they are ``stats(-1)`` itself; and the overview's top
ops read them.
"""

from __future__ import annotations

import numpy as np

from tests.xspace_kernels import jax_file
from tfprof_lite.analysis.overview import overview
from tfprof_lite.formats.xspace.read.load import load_model
from tfprof_lite.model.int64 import unsigned_mean
from tfprof_lite.model.whole_steps import whole_step_stats


def test_equal_to_the_whole_steps_one_by_one() -> None:
    model = load_model(str(jax_file("jax_h100_mlp")))
    assert model.cut_steps and len(model.cut_steps) < len(model.steps)
    whole = [s for s in model.steps if s not in model.cut_steps]
    n = len(model.names)
    per_step = [model.stats(s) for s in whole]
    present = [model.steps[s].totals(n).present.astype(np.int64) for s in whole]
    count = np.sum(present, axis=0)
    summed = np.sum([s.exec_micros for s in per_step], axis=0)
    expected = unsigned_mean(summed, count)
    got = whole_step_stats(model)
    assert np.array_equal(got.exec_micros, expected)
    assert not np.array_equal(got.exec_micros, model.stats(-1).exec_micros)
    # the overview's top ops are per whole step
    top = overview(model, 3).top_ops
    by_type: dict[str, int] = {}
    for nid, op in enumerate(model.ops):
        by_type[op] = by_type.get(op, 0) + int(got.exec_micros[nid])
    assert top[0].self_micros == max(v for k, v in by_type.items() if k == top[0].op)


def test_without_cut_steps_it_is_the_all_steps_average() -> None:
    model = load_model(str(jax_file("jax_h100_mlp")))
    model.cut_steps = {}
    assert whole_step_stats(model) is model.stats(-1)
