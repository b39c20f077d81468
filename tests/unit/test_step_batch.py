"""Batched step ingestion (:mod:`tfprof_lite.model.step_batch`) against
``add_step`` one step at a time, on the hand-made RunMetadata cases: the two
models must end equal in every node column, every step's columns, kernels and
raw memory records, and every statistic; the all-steps sums are walked at most
once whatever the step count."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.hand_cases import gpu_case, names_case, numbers_case, steps_case
from tests.handmade import HandCase
from tfprof_lite.model import step_batch, step_sums
from tfprof_lite.model.exec_columns import COLUMN_TYPES
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto.graphs import graph_columns_from_message
from tfprof_lite.proto.steps import StepColumns, columns_from_message


def _graph_model(case: HandCase) -> ProfileModel:
    model = ProfileModel()
    graph = pb.GraphDef()
    graph.ParseFromString(case.graph_def)
    model.add_graph_columns(graph_columns_from_message(graph))
    return model


def _steps(case: HandCase) -> list[tuple[int, StepColumns]]:
    out = []
    seen: set[int] = set()
    for step, raw in case.run_metas:
        if step in seen:  # add_steps takes new step numbers only
            continue
        seen.add(step)
        meta = pb.RunMetadata()
        meta.ParseFromString(raw)
        out.append((step, columns_from_message(meta)))
    return out


def snapshot(model: ProfileModel) -> dict[Any, Any]:
    """Everything the readers see of ``model``'s nodes and steps."""
    n = len(model.names)
    out: dict[Any, Any] = {
        "names": list(model.names), "ops": list(model.ops),
        "canonical": list(model.canonical_device), "host": list(model.host_device),
        "has_execs": list(model.has_execs), "covered": sorted(model.covered),
        "types": [sorted(t) for t in model.op_types], "order": list(model.steps),
        "miss_stream": model.miss_accelerator_stream,
    }  # fmt: skip
    for number, execs in model.steps.items():
        step: dict[str, Any] = {"devices": list(execs.device_names),
                                "raw": (list(execs.raw_node), list(execs.raw_stats))}  # fmt: skip
        k = execs.kernels
        step["kernels"] = (k.dev, k.name, k.label, k.start, k.dur, k.dur_ns)
        for group, types in COLUMN_TYPES.items():
            cols = getattr(execs, group)
            step[group] = {name: (cols[name].dtype.str, cols[name].tolist()) for name in types}
        totals = execs.totals(n)
        step["totals"] = {f: getattr(totals, f).tolist() for f in totals.__dataclass_fields__}
        step["memory"] = [vars(m) for m in execs.memory]
        step["devices_of"] = execs.devices
        step["node_spans"] = [(a.dtype.str, a.tolist()) for a in execs.node_spans()]
        present = execs.present_nodes()
        step["present"] = (present.dtype.str, present.tolist())
        step["wall"] = execs.wall_span()
        out[number] = step
    for at in (-1, *model.steps):
        stats = model.stats(at)
        out[("stats", at)] = {
            f: np.asarray(getattr(stats, f)).tolist() for f in stats.__dataclass_fields__
        }
    return out


@pytest.mark.parametrize("make", [gpu_case, steps_case, names_case, numbers_case])
def test_batch_equals_one_step_at_a_time(make: Any) -> None:
    case = make()
    steps = _steps(case)
    one = _graph_model(case)
    for number, cols in steps:
        one.add_step(number, cols)
    batch = _graph_model(case)
    assert step_batch.add_steps(batch, [n for n, _ in steps], [c for _, c in steps])
    assert snapshot(batch) == snapshot(one)


def test_batch_after_steps_and_then_more() -> None:
    """Steps before and after a batch keep the all-steps sums exact."""
    case = gpu_case()
    (first, c0), (second, c1) = _steps(case)
    one = _graph_model(case)
    for number, cols in ((first, c0), (second, c1), (7, c0), (9, c1)):
        one.add_step(number, cols)
    mixed = _graph_model(case)
    mixed.add_step(first, c0)
    assert step_batch.add_steps(mixed, [second, 7], [c1, c0])
    mixed.add_step(9, c1)
    assert snapshot(mixed) == snapshot(one)


def test_declines_numbers_held_or_repeated() -> None:
    case = gpu_case()
    (first, c0), (second, c1) = _steps(case)
    model = _graph_model(case)
    model.add_step(first, c0)
    before = snapshot(model)
    assert not step_batch.add_steps(model, [second, first], [c1, c0])
    assert not step_batch.add_steps(model, [5, 5], [c1, c0])
    assert snapshot(model) == before


def test_sums_are_walked_once_for_many_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counting work, not time: 400 steps, batched or one by one, walk the
    steps for the all-steps sums at most once (a quadratic fold walked them
    once per step)."""
    case = gpu_case()
    (_, c0), (_, c1) = _steps(case)
    walks: list[int] = []
    real = step_sums.running_sums
    monkeypatch.setattr(step_sums, "running_sums", lambda *a: walks.append(1) or real(*a))
    monkeypatch.setattr(step_batch, "running_sums", step_sums.running_sums)
    one = _graph_model(case)
    for number in range(400):
        one.add_step(number, c0 if number % 2 else c1)
    assert len(walks) <= 1
    walks.clear()
    batch = _graph_model(case)
    numbers = list(range(400))
    assert step_batch.add_steps(batch, numbers, [c0 if n % 2 else c1 for n in numbers])
    assert len(walks) <= 1
    assert np.array_equal(batch.stats(-1).exec_micros, one.stats(-1).exec_micros)
    assert int(batch.stats(-1).run_count.max()) > 0
