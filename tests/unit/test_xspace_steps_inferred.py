"""Steps of hand-made XSpaces without markers, and steps cut by the trace.

The loops here mimic a JAX training loop on a GPU: each step makes a batch on
the host, runs a staging program on it (``jit_stage``, twice) and the training
step (``jit_train_step``), whose kernel runs on the GPU; the CPU variant runs
its programs' ops on a host thread (XLA's CPU runtime: events with ``run_id``).
Times are in ns from the start of the trace.
"""

from __future__ import annotations

import json
import random

import pytest

from tests.xspace_files import SpaceBuilder
from tfprof_lite.advisor.steptime import StepTimeChecker
from tfprof_lite.analysis.overview import overview
from tfprof_lite.analysis.steptime import complete, step_times
from tfprof_lite.formats.xspace.read import conversion as xspace
from tfprof_lite.formats.xspace.read import cut as xspace_cut
from tfprof_lite.formats.xspace.wire import decode as xplane
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.report.steps import steps_section

DETAILS = "regs:32 static_shared:0 dynamic_shared:0 grid:4,1,1 block:128,1,1"
MS = 1_000_000
STAGE = "CommonPjRtLoadedExecutable::Execute (jit_stage)"
TRAIN = "CommonPjRtLoadedExecutable::Execute (jit_train_step)"


class _Loop:
    """A GPU loop being written: programs run from the python thread, each
    with a kernel (``compute`` ns) launched through ``correlation_id``."""

    def __init__(self) -> None:
        self.b = SpaceBuilder()
        self.py = self.b.line(self.b.host, 1, "python3")
        self.stream = self.b.line(self.b.gpu_plane(), 7, "Stream #7(Compute)")
        self.corr = 0

    def run(self, name: str, start: int, compute: int, module: str) -> None:
        """Program ``name`` executed at ``start``, its kernel right after."""
        self.corr += 1
        b = self.b
        b.event(b.host, self.py, name, start, 400_000)
        b.event(b.host, self.py, "cuLaunchKernel", start + 100_000, 50_000,
                correlation_id=self.corr)  # fmt: skip
        b.event(b.gpu, self.stream, "kernel", start + 300_000, compute, kernel_details=DETAILS,
                correlation_id=self.corr, hlo_module=module)  # fmt: skip

    def step(self, t0: int, stages: int = 2, stage_compute: int = 100_000,
             train_compute: int = 3 * MS, stage_gap: int = 600_000) -> None:  # fmt: skip
        """One iteration: the batch, ``stages`` staging runs, the training step."""
        self.b.event(self.b.host, self.py, "batches", t0, 3 * MS)
        for k in range(stages):
            self.run(STAGE, t0 + 3 * MS + k * stage_gap, stage_compute, "jit_stage")
        self.run(TRAIN, t0 + 5 * MS, train_compute, "jit_train_step")


def _model(raw: bytes) -> ProfileModel:
    model = ProfileModel()
    xspace.convert(xplane.decode_xspace(raw), model)
    return model


def _loop(starts: list[int], **step: int) -> ProfileModel:
    loop = _Loop()
    for t0 in starts:
        loop.step(t0, **step)
    return _model(loop.b.bytes())


def _walls(model: ProfileModel) -> dict[int, int]:
    return {s.step: s.wall_micros for s in step_times(model).steps}


def test_the_training_step_not_the_staging_program_that_runs_twice_as_often() -> None:
    model = _loop([i * 10 * MS for i in range(8)])
    assert model.steps_source == (
        "inferred: 8 runs of XLA program jit_train_step, one per step (confidence high: "
        "step times vary 0%; jit_stage runs 2 times per step)"
    )
    assert model.sorted_steps() == list(range(8))
    # The batch before the first training step began before it: cut.
    assert model.cut_steps == {0: xspace_cut.CUT_AT_START}
    walls = _walls(model)
    # One loop period each, from the end of the previous training step's kernel.
    assert [walls[s] for s in range(1, 8)] == [10_000] * 7
    report = step_times(model)
    assert [s.step for s in complete(report)] == list(range(1, 8))
    assert report.mean_micros == 10_000
    # Every step holds the kernels of its two staging runs and its training step
    # (each on its stream and on stream:all).
    for step in range(1, 8):
        assert len(model.steps[step].kernels) == 6


def test_an_evenly_spaced_staging_program_with_more_compute_is_still_not_the_step() -> None:
    """Staged twice per step, evenly, with more compute in all than the training
    step: the training step runs once every two of its runs and does more per run."""
    model = _loop(
        [i * 10 * MS for i in range(8)],
        stage_compute=2 * MS,
        train_compute=3 * MS,
        stage_gap=5 * MS,
    )
    assert model.steps_source.startswith("inferred: 8 runs of XLA program jit_train_step")


def test_irregular_runs_give_no_steps_and_every_output_says_why() -> None:
    rng = random.Random(0)
    starts, t = [], 0
    for _ in range(10):
        starts.append(t)
        t += int(10 * MS * (1 + 3 * rng.random()))
    model = _loop(starts, stages=0)
    assert model.steps_source.startswith(
        "no steps found: no step markers, and XLA program jit_train_step ran at irregular "
        "times (10 runs, step times would vary"
    )
    assert model.sorted_steps() == [0]
    assert model.cut_steps == {0: xspace_cut.NOT_A_STEP}
    view = overview(model)
    text = view.to_text()
    assert view.steps == 0 and view.avg_step_micros == 0
    assert text.startswith(f"steps: 0 ({model.steps_source}), average step time: n/a\n")
    assert "no steps were found, so there is no step time" in view.recommendation
    data = json.loads(json.dumps(view.to_dict()))
    assert data["steps"] == 0 and data["cut_steps"] == {"0": xspace_cut.NOT_A_STEP}
    advice = StepTimeChecker().check(model)
    assert advice is not None and advice[0].startswith("no whole steps, no step time statistics")
    body = steps_section(model).body
    assert "No whole step, so no wall time per step (no steps found" in body


def test_too_few_repeats_and_no_dominant_program_give_no_steps() -> None:
    model = _loop([0, 10 * MS], stages=0)
    assert model.steps_source == (
        "no steps found: no step markers, and no XLA program ran 3 times or more "
        "(jit_train_step: 2 runs)"
    )
    loop = _Loop()
    for i in range(8):
        loop.run("jit_a:XLA GPU module", i * 10 * MS, 3 * MS, "jit_a")
    for i in range(6):
        loop.run("jit_b:XLA GPU module", i * 13 * MS + 2 * MS, 3 * MS, "jit_b")
    model = _model(loop.b.bytes())
    assert model.steps_source == (
        "no steps found: no step markers, and no XLA program dominates "
        "(jit_a: 8 runs, jit_b: 6 runs)"
    )


def _cpu_loop(steps: int, ran: int) -> bytes:
    """A loop on XLA's CPU runtime: the python thread dispatches
    ``PjitFunction(train_step)`` and waits; the program's ops run on a client
    thread under one ``run_id`` per run. The last ``steps - ran`` dispatches
    had not run when the trace stopped."""
    b = SpaceBuilder()
    py = b.line(b.host, 1, "python")
    client = b.line(b.host, 2, "tf_XLAPjRtCpuClient/1")
    for i in range(steps):
        t0 = MS + i * 6 * MS
        b.event(b.host, py, "$loop.py:10 make_batch", t0, MS)
        b.event(b.host, py, "PjitFunction(train_step)", t0 + MS, 200_000)
        if i >= ran:
            continue
        b.event(b.host, py, "$api.py:2479 block_until_ready", t0 + MS + 300_000, 4 * MS)
        for k, op in enumerate(("dot", "tanh", "reduce")):
            b.event(b.host, client, op, t0 + MS + 500_000 + k * MS, MS, hlo_op=op,
                    hlo_module="jit_train_step", run_id=100 + i)  # fmt: skip
    return b.bytes()


def test_cpu_runs_are_found_by_run_id_and_rooted_at_their_dispatch() -> None:
    model = _model(_cpu_loop(6, ran=5))
    assert model.steps_source.startswith("inferred: 6 runs of XLA program jit_train_step")
    walls = _walls(model)
    # Each step: from the end of the previous step's wait for its result.
    assert [walls[s] for s in range(1, 5)] == [6_000] * 4
    assert model.cut_steps[0] == xspace_cut.CUT_AT_START
    assert model.cut_steps[5] == "cut by the trace's stop: its program had not run yet"
    assert [s.step for s in complete(step_times(model))] == [1, 2, 3, 4]
    # each inferred step's root is its span, no record and no node
    names = {n for s in model.steps.values() for n in s.device_names}
    assert "/host:cpu/steps" not in names
    root = "PjitFunction(train_step)"
    assert root not in model.names
    assert {model.steps[s].span.name for s in model.steps} == {root}  # type: ignore[union-attr]


def test_a_first_marker_with_nothing_before_it_is_whole_and_a_short_last_step_is_cut() -> None:
    b = SpaceBuilder()
    py = b.line(b.host, 1, "python")
    stream = b.line(b.gpu_plane(), 7, "Stream #7(Compute)")
    corr = 0
    for step in range(4):
        t0 = MS + step * 10 * MS
        b.event(b.host, py, "train", t0, 8 * MS, step_num=step, _r=1)
        for k in range(3 if step < 3 else 1):
            corr += 1
            b.event(b.host, py, "cuLaunchKernel", t0 + k * MS, 50_000, correlation_id=corr)
            b.event(b.gpu, stream, "kernel", t0 + k * MS + 100_000, 500_000,
                    kernel_details=DETAILS, correlation_id=corr)  # fmt: skip
    model = _model(b.bytes())
    assert model.steps_source == "step markers (train)"
    assert model.cut_steps == {
        3: "cut by the trace's stop: 1 device events, every other step at least 3"
    }
    view = overview(model)
    assert view.steps == 3 and view.avg_step_micros == 8_000
    assert "step 3 cut by the trace's stop, left out" in view.to_text().splitlines()[0]
    body = steps_section(model).body
    assert 'class="bar cutstep"' in body and 'class="hatch"' in body
    assert "Cut by the trace (left out)" in body and ">3~</td>" in body
    assert "left out" in step_times(model).to_text()


@pytest.mark.parametrize("gap", [0, 2 * MS])
def test_markers_keep_their_step_spans(gap: int) -> None:
    """Marked steps are not inferred ones: each still starts at its thread's first
    event after the previous step (the batch read before the marker)."""
    b = SpaceBuilder()
    py = b.line(b.host, 1, "python")
    for step in range(3):
        t0 = MS + step * 10 * MS
        if gap and step:
            b.event(b.host, py, "batches", t0 - gap, gap)
        b.event(b.host, py, "train", t0, 5 * MS, step_num=step, _r=1)
    model = _model(b.bytes())
    assert _walls(model) == {0: 5_000, 1: 5_000 + gap // 1000, 2: 5_000 + gap // 1000}
    assert model.cut_steps == {}
