"""An XSpace of many small steps: right answers, bounded outputs, linear work.

The capture is a JAX CPU loop of :data:`STEPS` tiny steps in
``StepTraceAnnotation("train")`` (``tests/jax_many_steps.py``, made once per
test process in a child process). The checks count work, never time it: the
all-steps sums are walked a bounded number of times however many steps there
are, the step parts of the input pipeline come from one pass over the events
(no per-step pass), and what the batched paths give equals what the per-step
ones give.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cli.runner import invoke
from tests.integration.step_captures import _child, _require
from tests.unit.test_step_batch import snapshot
from tfprof_lite.analysis.steptime import step_times
from tfprof_lite.formats.xspace.read import input as xspace_input
from tfprof_lite.formats.xspace.read.load import load_model
from tfprof_lite.model import profile, step_batch, step_ingest, step_sums

STEPS = 3000
#: The mean step time may differ from the loop's own by this share (tracing
#: overhead falls inside both; measured: under 1%).
MEAN_TOLERANCE = 0.1
#: The summaries stay this short however many steps there are.
MAX_LINES = 300
MAX_REPORT_BYTES = 4 << 20

_MADE: dict[str, dict[str, Any]] = {}


@pytest.fixture(scope="module")
def capture() -> dict[str, Any]:
    """The capture's ``capture.json`` (see ``tests/jax_many_steps.py``)."""
    if "loop" not in _MADE:
        _require("jax")
        out = _child([str(Path(__file__).parents[1] / "jax_many_steps.py")], "many_steps",
                     (str(STEPS),))  # fmt: skip
        _MADE["loop"] = json.loads((out / "capture.json").read_text())
    return _MADE["loop"]


def test_steps_and_mean_step_time(capture: dict[str, Any]) -> None:
    model = load_model(capture["xspace"])
    assert sorted(model.steps) == list(range(STEPS))
    report = step_times(model)
    assert len(report.steps) == STEPS
    seconds = capture["step_seconds"]
    # the steps cut by the trace's start are not averaged: nor are their loop times
    mine = [s for i, s in enumerate(seconds) if i not in model.cut_steps]
    loop_mean = statistics.mean(mine) * 1e6
    assert report.mean_micros == pytest.approx(loop_mean, rel=MEAN_TOLERANCE)
    walls = sum(s.wall_micros for s in report.steps) / 1e6
    assert walls == pytest.approx(sum(seconds), rel=MEAN_TOLERANCE)


def test_work_does_not_grow_with_steps(
    capture: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    walks: list[int] = []
    passes: list[int] = []
    one_step: list[int] = []
    real_sums, real_parts = step_sums.running_sums, xspace_input._parts
    real_ingest = step_ingest.ingest_step

    def walk(*args: Any) -> Any:
        walks.append(1)
        return real_sums(*args)

    for module in (step_sums, step_batch):
        monkeypatch.setattr(module, "running_sums", walk)
    monkeypatch.setattr(xspace_input, "_parts", lambda *a: passes.append(1) or real_parts(*a))
    monkeypatch.setattr(profile, "ingest_step", lambda *a: one_step.append(1) or real_ingest(*a))
    model = load_model(capture["xspace"])
    assert len(model.steps) == STEPS
    # the steps come in one batch: no step by itself, the sums walked at most
    # once, every step's parts from one pass over the event table
    assert len(one_step) <= 1 and len(walks) <= 1
    assert not passes
    assert model.trace_input is not None and len(model.trace_input.steps) == STEPS


def test_batched_model_equals_per_step_model(
    capture: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    batched = snapshot(load_model(capture["xspace"]))
    monkeypatch.setattr(step_batch, "BATCH_ROWS", 1)  # every step by add_step
    assert snapshot(load_model(capture["xspace"])) == batched


def test_step_parts_equal_per_step_passes(
    capture: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    got: list[tuple[dict[int, Any], dict[int, Any]]] = []
    real = xspace_input._all_parts

    def both(table: Any, cls: Any, numbers: list[int], windows: list[Any]) -> Any:
        batched = real(table, cls, numbers, windows)
        one_by_one = {n: xspace_input._parts(table, cls, *w)
                      for n, w in zip(numbers, windows) if w is not None}  # fmt: skip
        got.append((batched, one_by_one))
        return batched

    monkeypatch.setattr(xspace_input, "_all_parts", both)
    load_model(capture["xspace"])
    ((batched, one_by_one),) = got
    assert len(batched) == STEPS and batched == one_by_one
    assert sum(p["device"] for p in batched.values()) > 0


@pytest.mark.parametrize("command", ["memory", "advise", "overview"])
def test_summaries_are_short(capture: dict[str, Any], command: str) -> None:
    out = invoke(command, capture["xspace"]).output
    assert 0 < out.count("\n") <= MAX_LINES, out[-2000:]


def test_report_size_is_bounded(capture: dict[str, Any], tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    invoke("report", capture["xspace"], "-o", page)
    size = page.stat().st_size
    assert 0 < size <= MAX_REPORT_BYTES, size


def test_tiny_steps_are_host_bound_not_input_bound(capture: dict[str, Any]) -> None:
    """The loop makes no batches (one matmul step on arrays already on the device):
    the host part between its tiny steps is dispatch and syncs, not input."""
    from tfprof_lite.analysis.input_pipeline import LOOP_OVERHEAD_MICROS, input_pipeline
    from tfprof_lite.analysis.overview import overview, recommend

    model = load_model(capture["xspace"])
    report = input_pipeline(model)
    assert not report.host_batches and not report.input_bound
    assert report.mean_share < 0.2
    assert 0 < report.loop_overhead_micros < LOOP_OVERHEAD_MICROS
    # the loop's own record: the steps are short, so is the host part of each
    mean_us = statistics.mean(capture["step_seconds"]) * 1e6
    assert report.loop_overhead_micros < mean_us
    view = overview(model)
    if view.input.parts.get("host", 0.0) >= 0.5:
        assert recommend(view).startswith("host-bound: the loop's own thread between steps")
    assert "input-bound" not in recommend(view)
