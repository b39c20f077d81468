"""Every step measured at once (:mod:`tfprof_lite.analysis.step_join`) equals
every step measured alone.

The overview's idle shares, step markers and environment, the input pipeline's
per-step waiting, its per-op sums, an XSpace's part shares and the report's
step-time table are computed over
all steps' columns joined; each equals its per-step reference on random TF1
profiles, on hand-made edge cases and on the H100 XSpace samples, and a whole
overview equals the one the per-step paths give (``exact()`` forced False).
Steps whose columns are rows of shared arrays are joined by slicing those
arrays; steps whose columns were read (their own) are joined all the same.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

import tfprof_lite
from tests.unit.test_step_spans import CPU, _random_profile, negative_duration_profile
from tests.xspace_data import JAX_CASES, jax_file
from tfprof_lite.advisor import accelerator
from tfprof_lite.analysis import input_pipeline as ip
from tfprof_lite.analysis import overview as ov
from tfprof_lite.analysis import step_join, steptime
from tfprof_lite.model.devices import STEPS_DEVICE
from tfprof_lite.model.execs import KIND_ACCELERATOR, KIND_CPU
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.proto import messages as pb
from tfprof_lite.report import sections


def _old_markers(model: ProfileModel) -> set[int]:
    """The step markers found one step at a time."""
    on_steps: set[int] = set()
    elsewhere: set[int] = set()
    for execs in model.steps.values():
        nodes, codes = execs.pairs["node"], execs.pairs["dev"]
        steps = [c for c, d in enumerate(execs.device_names) if d == "/host:cpu/steps"]
        marked = np.isin(codes, steps)
        on_steps.update(nodes[marked].tolist())
        elsewhere.update(nodes[(codes >= 0) & ~marked].tolist())
    return on_steps - elsewhere


def _old_environment(model: ProfileModel) -> list[str]:
    """The devices found one step at a time."""
    recorded = sorted({d for e in model.steps.values() for d in e.used_devices()})
    return [d for d in recorded if ov.is_canonical_device(d)] or recorded


def _assert_like_per_step(model: ProfileModel) -> None:
    """Each batched measure of ``model`` equals its per-step reference."""
    joined = step_join.joined_steps(model)
    for kind in (KIND_CPU, KIND_ACCELERATOR):
        assert ov._idle(model, kind) == ov._idle_per_step(model, kind)
    assert ov._step_markers(model) == _old_markers(model)
    assert ov._environment(model)[1] == _old_environment(model)
    cut = model.cut_steps
    ref = [
        t if t is None else replace(t, cut=cut.get(s, ""))
        for s, t in ((s, steptime._one_step(model, s)) for s in model.sorted_steps())
    ]
    assert steptime._measured(model, joined, cut) == ref
    is_input = np.asarray(ip._input_nodes(model), dtype=bool)
    steps, per_op = ip._steps(model)
    ref_steps, ref_per_op = ip._steps_one_by_one(model, is_input)
    assert list(per_op.items()) == list(ref_per_op.items())
    trace = model.trace_input
    assert steps == ([] if trace is not None and trace.steps else ref_steps)
    numbers = model.sorted_steps()
    assert sections._step_times(model) == [sections.step_time_of(model, s) for s in numbers]
    latest: dict[int, int] = {}  # each node's last step, one step at a time
    for number in numbers:
        nodes = model.steps[number].pairs["node"]
        present, first = np.unique(nodes, return_index=True)
        for nid in present[np.argsort(first, kind="stable")].tolist():
            latest[nid] = number
    assert list(accelerator._latest_steps(model).items()) == list(latest.items())
    every = {d for d in model.canonical_device if d}
    every.update(d for execs in model.steps.values() for d in execs.used_devices())
    assert sections.devices(model) == (
        sorted(d for d in every if ov.is_canonical_device(d)) or sorted(every)
    )


def _input_profile(seed: int) -> ProfileModel:
    """A random profile with input ops (two iterators, a queue) among others."""
    rng = np.random.default_rng(seed)
    graph = pb.GraphDef()
    ops = ["IteratorGetNext", "MatMul", "QueueDequeueV2", "Add", "IteratorGetNextSync"]
    for i, op in enumerate(ops):
        graph.node.add(name=f"n{i}", op=op)
    prof = tfprof_lite.Profiler(graph)
    for step in rng.permutation(50)[:9].tolist():
        meta = pb.RunMetadata()
        dev = meta.step_stats.dev_stats.add(device=CPU)
        for _ in range(int(rng.integers(0, 10))):
            dev.node_stats.add(
                node_name=f"n{int(rng.integers(len(ops)))}",
                all_start_micros=1_000 + int(rng.integers(0, 3_000)),
                op_end_rel_micros=int(rng.integers(0, 400)),
            )
        prof.add_step(step, meta)
    return prof.model


@pytest.mark.parametrize("seed", range(6))
def test_random_profiles_measure_as_one_step_at_a_time(seed: int) -> None:
    model = _random_profile(seed)
    assert step_join.joined_steps(model).exact()
    _assert_like_per_step(model)


@pytest.mark.parametrize("seed", range(6))
def test_input_waiting_and_per_op_sums_as_one_step_at_a_time(seed: int) -> None:
    model = _input_profile(seed)
    _assert_like_per_step(model)
    steps, per_op = ip._steps(model)
    assert per_op  # input ops ran (the comparison is not an empty one)
    assert any(s.input_micros for s in steps)


def test_a_negative_duration_falls_back_to_the_per_step_path() -> None:
    model = negative_duration_profile("IteratorGetNext")
    assert not step_join.joined_steps(model).exact()
    _assert_like_per_step(model)
    assert ov._idle(model, KIND_CPU) == ov._idle_per_step(model, KIND_CPU) is not None


def test_the_empty_profile() -> None:
    model = tfprof_lite.Profiler(pb.GraphDef()).model
    joined = step_join.joined_steps(model)
    assert joined.n == 0 and joined.exact() and not joined.devices
    _assert_like_per_step(model)
    assert ov._idle(model, KIND_CPU) is None


def _xspace(case: str) -> ProfileModel:
    return tfprof_lite.Profiler.load(str(jax_file(case))).model


@pytest.mark.parametrize("case", JAX_CASES)
def test_xspace_samples_measure_as_one_step_at_a_time(case: str) -> None:
    model = _xspace(case)
    assert len(step_join.joined_steps(model).devices) > 1
    _assert_like_per_step(model)


def test_step_markers_are_the_nodes_only_on_the_steps_device() -> None:
    graph = pb.GraphDef()
    for name in ("train", "x", "y"):
        graph.node.add(name=name, op="StepMarker" if name == "train" else "Add")
    prof = tfprof_lite.Profiler(graph)
    for step in (1, 2):
        meta = pb.RunMetadata()
        steps = meta.step_stats.dev_stats.add(device=STEPS_DEVICE)
        steps.node_stats.add(node_name="train", all_start_micros=10 * step, op_end_rel_micros=50)
        steps.node_stats.add(node_name="x", all_start_micros=10 * step, op_end_rel_micros=50)
        cpu = meta.step_stats.dev_stats.add(device=CPU if step == 1 else CPU.lower())
        cpu.node_stats.add(node_name="x" if step == 1 else "y", all_start_micros=20 * step,
                           op_end_rel_micros=5)  # fmt: skip
        prof.add_step(step, meta)
    model = prof.model
    assert ov._step_markers(model) == {0} == _old_markers(model)
    assert ov._environment(model)[1] == [CPU.lower()] == _old_environment(model)
    _assert_like_per_step(model)


@pytest.mark.parametrize("case", JAX_CASES)
def test_shared_rows_join_as_the_steps_own_columns(case: str) -> None:
    """Joined by slicing the shared arrays, or with some steps' columns read
    first (their own), the columns are those of each step end to end."""
    model = _xspace(case)
    ordered = model.sorted_steps()
    steps = [model.steps[s] for s in ordered]
    made = [set(vars(e)) for e in steps]  # a deferred step's parts made so far
    sliced = step_join.JoinedSteps(steps, ordered)
    assert [set(vars(e)) for e in steps] == made  # the join made none
    steps[1].times["start"], steps[2].pairs["node"], steps[-1].spans["end"]  # own columns
    mixed = step_join.JoinedSteps(steps, ordered)
    expect = {
        "t_start": np.concatenate([e.times["start"] for e in steps]),
        "t_node": np.concatenate([e.times["node"] for e in steps]),
        "s_end": np.concatenate([e.spans["end"] for e in steps]),
        "p_node": np.concatenate([e.pairs["node"] for e in steps]),
    }
    for joined in (sliced, mixed):
        for name, want in expect.items():
            assert getattr(joined, name).tolist() == want.tolist(), name
        names = [joined.devices[c] if c >= 0 else None for c in joined.p_dev.tolist()]
        assert names == [e.device_names[c] if c >= 0 else None
                         for e in steps for c in e.pairs["dev"].tolist()]  # fmt: skip


@pytest.mark.parametrize("case", JAX_CASES)
def test_xspace_part_shares_as_one_step_at_a_time(case: str) -> None:
    model = _xspace(case)
    trace = model.trace_input
    assert trace is not None and trace.steps
    ordered = sorted(trace.steps)
    rows = [trace.steps[n] for n in ordered]
    walls = [sum(p.values()) for p in rows]
    keys = list(trace.steps[next(iter(trace.steps))])
    for whole in ({n for n in ordered if n not in model.cut_steps}, set(ordered[:2])):
        got = ip._part_sums(keys, ordered, rows, walls, whole)
        assert got is not None
        assert json.dumps(got) == json.dumps(ip._part_sums_per_step(keys, ordered, rows,
                                                                    walls, whole))  # fmt: skip


def test_part_shares_the_batch_cannot_take_are_added_per_step() -> None:
    rows = [{"input": 3, "idle": 7}, {"input": 1, "idle": 2, "host": 5}]
    assert ip._part_sums(["input", "idle"], [1, 2], rows, [10, 8], {1, 2}) is None
    big = [{"input": 2**60, "idle": 1}, {"input": 0, "idle": 0}]
    walls = [2**60 + 1, 0]
    assert ip._part_sums(["input", "idle"], [1, 2], big, walls, {1, 2}) is None
    same = [{"input": 3, "idle": 7}, {"idle": 0, "input": 0}, {"input": 1, "idle": 1}]
    got = ip._part_sums(["input", "idle"], [1, 2, 3], same, [10, 0, 2], {1, 3})
    assert got == ip._part_sums_per_step(["input", "idle"], [1, 2, 3], same, [10, 0, 2], {1, 3})
    assert got == {"input": (0.3 + 0.5) / 2, "idle": 0.7 / 2 + 0.5 / 2}


@pytest.mark.parametrize("case", JAX_CASES)
def test_an_overview_equals_the_per_step_one(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    batched = ov.overview(_xspace(case))
    monkeypatch.setattr(step_join.JoinedSteps, "exact", lambda self: False)
    monkeypatch.setattr(ip, "_part_sums", lambda *args: None)
    alone = ov.overview(_xspace(case))
    assert batched.to_text() == alone.to_text()
    assert json.dumps(batched.to_dict()) == json.dumps(alone.to_dict())


def test_loop_overhead_is_not_input() -> None:
    """A mean host part per step under LOOP_OVERHEAD_MICROS is the loop's dispatch
    and syncs: not counted as input; over it, batch making as before."""
    from tfprof_lite.analysis.input_pipeline import (
        LOOP_OVERHEAD_MICROS,
        InputReport,
        _loop_overhead,
    )

    short = InputReport(host_batches=True)
    _loop_overhead(short, [40, 60])
    assert not short.host_batches and short.loop_overhead_micros == 50.0
    assert short.to_dict()["loop_overhead_micros"] == 50.0
    long = InputReport(host_batches=True)
    _loop_overhead(long, [LOOP_OVERHEAD_MICROS, 5000])
    assert long.host_batches and long.loop_overhead_micros == 0.0
    assert "loop_overhead_micros" not in long.to_dict()
