"""Steps found in real captures, against the loops' own timers.

JAX CPU loops with and without ``StepTraceAnnotation`` (a staging program run
twice per step), a loop at irregular times, programs run once each, Keras 3
``fit`` without batch markers (``tests/integration/step_captures.py``), and
the H100 samples with their step markers stripped. The truth is the loop's
``time.perf_counter()`` per step, from the end of the previous step.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.step_captures import Capture, jax_loop, keras_fit
from tests.xspace_data import JAX_CASES, data_dir, jax_file
from tfprof_lite.analysis.overview import overview
from tfprof_lite.analysis.steptime import complete, step_times
from tfprof_lite.formats.xspace.read import conversion as xspace
from tfprof_lite.formats.xspace.read import cut as xspace_cut
from tfprof_lite.formats.xspace.wire import decode as xplane
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.proto import messages as pb

#: A step's time may differ from the loop's by this share, or by ABS_US: the
#: loop reads its clock a little after the step's work ends (after
#: ``block_until_ready``, in Keras' batch callbacks), later in some steps than
#: in others on a busy machine.
REL, ABS_US = 0.05, 400
#: On a busy machine (the other test worker, the capture's own threads) the
#: loop's clock also takes in a scheduling hiccup between two traced calls,
#: which no step holds: one step in ten may miss REL (a late timer read between
#: two steps puts both off, by opposite amounts: one hiccup); the mean may not.
OUTLIERS = 10


def _model(raw: bytes) -> ProfileModel:
    model = ProfileModel()
    xspace.convert(xplane.decode_xspace(raw), model)
    return model


def _close(ours: float, loop: float) -> bool:
    return abs(ours - loop) <= max(REL * loop, ABS_US)


def _hiccups(ours: list[int], loop: list[float]) -> int:
    """How many of the loop's times a scheduling hiccup put off: a step that
    misses the loop's time, except that two neighbours missing by opposite
    amounts that add up to the loop's pair (the loop's timer read late between
    them) are one hiccup."""
    count, i = 0, 0
    while i < len(ours):
        if _close(ours[i], loop[i]):
            i += 1
            continue
        pair = i + 1 < len(ours) and not _close(ours[i + 1], loop[i + 1])
        if pair and _close(ours[i] + ours[i + 1], loop[i] + loop[i + 1]):
            i += 1  # (the neighbour is the same hiccup)
        count += 1
        i += 1
    return count


def _check_against_loop(model: ProfileModel, capture: Capture, numbers: list[int]) -> None:
    """Step ``numbers[i]`` is traced iteration ``i``; the first one began before
    the trace (its timer includes the profiler's start) and is cut; every other
    one lasts what the loop measured, and so does their mean."""
    traced = list(capture.traced)
    assert model.sorted_steps() == numbers and len(numbers) == len(traced)
    assert model.cut_steps == {numbers[0]: xspace_cut.CUT_AT_START}
    report = step_times(model)
    whole = complete(report)
    assert [s.step for s in whole] == numbers[1:]
    loop = [capture.seconds[i] * 1e6 for i in traced[1:]]
    ours = [s.wall_micros for s in whole]
    bad = [(n, o, round(t)) for n, o, t in zip(numbers[1:], ours, loop) if not _close(o, t)]
    assert _hiccups(ours, loop) <= len(loop) // OUTLIERS, (bad, ours, loop)
    assert report.mean_micros == pytest.approx(sum(loop) / len(loop), rel=0.03)
    view = overview(model)
    assert view.steps == len(numbers) - 1
    assert view.avg_step_micros == pytest.approx(report.mean_micros, abs=0.1)


def test_jax_loop_without_markers_one_step_per_iteration_not_per_staging_run() -> None:
    capture = jax_loop("plain")
    model = _model(capture.xplane.read_bytes())
    source = model.steps_source
    assert source.startswith("inferred: 12 runs of XLA program jit_train_step, one per step ("), (
        source
    )
    assert source.endswith("; jit_stage runs 2 times per step)"), source
    _check_against_loop(model, capture, list(range(len(capture.traced))))


def test_jax_loop_with_markers() -> None:
    capture = jax_loop("markers")
    model = _model(capture.xplane.read_bytes())
    assert model.steps_source == "step markers (train)"
    _check_against_loop(model, capture, list(capture.traced))


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        ("irregular", "XLA program jit_train_step ran at irregular times (12 runs"),
        ("once", "no XLA program ran 3 times or more (jit_train_step: 2 runs)"),
    ],
)
def test_jax_without_regular_repeats_reports_no_steps_and_why(mode: str, why: str) -> None:
    model = _model(jax_loop(mode).xplane.read_bytes())
    assert model.steps_source.startswith(f"no steps found: no step markers, and {why}")
    assert model.cut_steps == {0: xspace_cut.NOT_A_STEP}
    view = overview(model)
    assert view.steps == 0 and "average step time: n/a" in view.to_text()
    assert view.recommendation.startswith("no steps were found")


@pytest.mark.tf
def test_keras_fit_without_batch_markers_one_step_per_batch() -> None:
    capture = keras_fit()
    model = _model(capture.xplane.read_bytes())
    assert model.steps_source.startswith(
        f"inferred: {len(capture.traced)} Keras multi_step_on_iterator calls, one per step ("
    )
    # The first batch's call follows fit's own setup in the trace: cut.
    _check_against_loop(model, capture, list(range(len(capture.traced))))


def _stripped(path: Path) -> bytes:
    """The XSpace at ``path`` without its step markers (host events with
    ``step_num`` or ``_r`` stats)."""
    space = pb.XSpace()
    space.ParseFromString(path.read_bytes())
    for plane in space.planes:
        marker = {k for k, m in plane.stat_metadata.items() if m.name in ("step_num", "_r")}
        for line in plane.lines:
            kept = [e for e in line.events if not any(s.metadata_id in marker for s in e.stats)]
            del line.events[:]
            line.events.extend(kept)
    return bytes(space.SerializeToString())


@pytest.mark.parametrize("case", JAX_CASES)
def test_h100_samples_without_markers_give_the_marked_steps(case: str) -> None:
    """The inferred steps of a sample stripped of its markers are the marked ones:
    as many, the first cut in both, each within a few % of the loop's timer."""
    meta = json.loads((data_dir() / case / "meta.json").read_text())
    marked = _model(jax_file(case).read_bytes())
    inferred = _model(_stripped(jax_file(case)))
    assert inferred.steps_source.startswith("inferred: 8 runs of XLA program jit_train_step")
    assert inferred.steps_source.endswith("; jit_stage runs 2 times per step)")
    traced = meta["traced_steps"]
    assert marked.cut_steps == {traced[0]: xspace_cut.CUT_AT_START}
    assert inferred.cut_steps == {0: xspace_cut.CUT_AT_START}
    loop = [meta["host_step_s"][n] * 1e6 for n in traced[1:]]
    for model in (marked, inferred):
        report = step_times(model)
        walls = [s.wall_micros for s in complete(report)]
        assert len(walls) == len(loop) == 7
        # The transformer's first whole step holds 0.5 ms of host work (freeing
        # buffers) of the step before it, which ran past its kernels: 5.4% off.
        assert all(abs(w - t) <= 0.06 * t for w, t in zip(walls, loop)), (walls, loop)
        assert report.mean_micros == pytest.approx(sum(loop) / len(loop), rel=0.01)
