"""Loading an XSpace in O(steps): one event walk, step columns made in runs of
steps, deferred ``StepExecs`` (formats/xspace/read/rows.py, window.py,
model/step_batch.py, model/execs.py), each equal to the slow way."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from tests import xspace_files
from tfprof_lite.formats.xspace.read import conversion as xspace
from tfprof_lite.formats.xspace.read import load as xspace_load
from tfprof_lite.formats.xspace.read.window import event_window
from tfprof_lite.formats.xspace.wire import decode as xplane
from tfprof_lite.model import step_batch
from tfprof_lite.model.execs import COLUMN_TYPES, StepExecs
from tfprof_lite.model.profile import ProfileModel


def _equal(a: Any, b: Any, where: str = "") -> None:
    """``a`` and ``b`` hold the same values (dataclasses field by field)."""
    if dataclasses.is_dataclass(a):
        assert type(a) is type(b), where
        for f in dataclasses.fields(a):
            _equal(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, np.ndarray):
        assert a.dtype == np.asarray(b).dtype, where
        assert np.array_equal(a, b), where
    else:
        assert a == b, where


@pytest.mark.parametrize("case", xspace_files.jax_cases())
def test_the_plans_window_is_the_window_read_on_its_own(case: str) -> None:
    raw = xspace_files.jax_file(case).read_bytes()
    alone = event_window(xplane.decode_xspace(raw))
    plan = xspace.plan_steps(xplane.decode_xspace(raw), release=True)
    assert plan.window is not None
    assert len(alone.device.name) > 0 and len(alone.host.name) > 0
    _equal(plan.window, alone, "window")


@pytest.mark.parametrize("case", xspace_files.jax_cases())
def test_steps_do_not_depend_on_how_many_are_added_at_once(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = xspace_files.jax_file(case).read_bytes()
    together = xspace_load.model_from_bytes(raw, "x")
    monkeypatch.setattr(step_batch, "BATCH_ROWS", 1)  # every step in a block of its own
    alone = xspace_load.model_from_bytes(raw, "x")
    numbers = together.sorted_steps()
    assert numbers == alone.sorted_steps() and len(numbers) > 1
    assert together.names == alone.names
    for number in numbers:
        _same_parts(_parts(together.steps[number]), _parts(alone.steps[number]))
        assert together.steps[number].span == alone.steps[number].span


def _parts(execs: StepExecs) -> dict[str, Any]:
    out: dict[str, Any] = {
        g: {n: getattr(execs, g)[n] for n in COLUMN_TYPES[g]} for g in COLUMN_TYPES
    }
    out["device_names"] = list(execs.device_names)
    out["raw"] = (list(execs.raw_node), list(execs.raw_stats))
    out["kernels"] = dataclasses.asdict(execs.kernels)
    out["spans"] = execs.node_spans()
    out["present"] = execs.present_nodes()
    out["wall"] = execs.wall_span()
    return out


def _same_parts(a: dict[str, Any], b: dict[str, Any]) -> None:
    for key in a:
        left, right = a[key], b[key]
        if isinstance(left, dict):
            for name in left:
                l_val, r_val = left[name], right[name]
                if isinstance(l_val, np.ndarray):
                    assert np.array_equal(l_val, r_val), (key, name)
                else:
                    assert l_val == r_val, (key, name)
        elif isinstance(left, tuple) and left and isinstance(left[0], np.ndarray):
            assert all(np.array_equal(x, y) for x, y in zip(left, right, strict=True)), key
        elif isinstance(left, np.ndarray):
            assert np.array_equal(left, right), key
        else:
            assert left == right, key


@pytest.mark.parametrize("case", xspace_files.jax_cases())
def test_loaded_steps_are_deferred_and_equal_the_steps_added_one_by_one(case: str) -> None:
    path = xspace_files.jax_file(case)
    model = xspace_load.load_model(str(path))
    numbers = model.sorted_steps()
    assert len(numbers) > 1
    # Loading made no step's times, spans, memory or kernels (binding the GPU
    # kernels' nodes to their GPU reads the pairs of the steps that hold them).
    unread = {"times", "spans", "mem", "outs", "allocs", "kernels", "raw_node"}
    for number in numbers:
        state = model.steps[number].__dict__
        assert "_source" in state and not set(state) & unread
    plan = xspace.plan_steps(xplane.decode_xspace(path.read_bytes()))
    slow = ProfileModel()
    slow.add_graph(plan.nodes)
    for number, cols, exact in zip(plan.numbers, plan.columns, plan.tracer_ns, strict=True):
        slow.add_step(number, cols)
        if len(exact):
            slow.steps[number].kernels.dur_ns = exact.tolist()
    step_batch.add_spans(slow, plan.numbers, plan.spans)
    assert any(len(model.steps[n].kernels) for n in numbers)
    for number in numbers:
        _same_parts(_parts(model.steps[number]), _parts(slow.steps[number]))


def test_a_deferred_step_takes_more_records_as_a_built_one() -> None:
    model = xspace_load.model_from_bytes(xspace_files.jax_file("jax_h100_mlp").read_bytes(), "x")
    number = model.sorted_steps()[0]
    execs = model.steps[number]
    before = len(execs.times)
    version = execs.version
    cols = xspace.plan_steps(
        xplane.decode_xspace(xspace_files.jax_file("jax_h100_mlp").read_bytes())
    ).columns[0]
    model.add_step(number, cols)
    assert model.steps[number] is execs
    assert execs.version > version
    assert len(execs.times) > before
    assert execs.node_spans()[0].size > 0
    with pytest.raises(AttributeError):
        _ = execs.no_such_part  # type: ignore[attr-defined]
