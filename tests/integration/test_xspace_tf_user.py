"""What a user sees on the real TensorFlow 2.21 CPU captures (overview, advice)."""

from __future__ import annotations

import pytest

from tests.integration.xspace_captures import INPUT_SLEEP_S, tf_capture
from tfprof_lite.analysis.input_pipeline import input_pipeline
from tfprof_lite.analysis.overview import overview
from tfprof_lite.formats.xspace.read.load import load_model


def test_eager_iterator_read_is_input_time() -> None:
    """A tf.data loop whose elements sleep is input-bound: its eager ``IteratorGetNext``
    (only an ``EagerLocalExecute`` event in the file) is an input op of each step."""
    cap = tf_capture("input_bound")
    model = load_model(str(cap.xplane))
    report = input_pipeline(model)
    assert report.verdict == "input-bound"
    assert [op for _, op, _ in report.top_ops] == ["IteratorGetNext"]
    host_mean_s = sum(s.wall_s for s in cap.traced_steps) / len(cap.traced_steps)
    # Each step waits at least the element's sleep, most of the host-measured step.
    for step in report.steps:
        assert step.input_micros >= 0.9 * INPUT_SLEEP_S * 1e6
    assert report.mean_share >= 0.9 * INPUT_SLEEP_S / host_mean_s
    assert overview(model).recommendation.startswith("the program is input-bound")


@pytest.mark.parametrize("case", ["session_markers", "session_plain", "keras_fit"])
def test_compute_loops_are_not_input_bound(case: str) -> None:
    """The loops without a tf.data pipeline read no input."""
    report = input_pipeline(load_model(str(tf_capture(case).xplane)))
    assert report.verdict == "not input-bound"
    assert report.top_ops == []


@pytest.mark.parametrize(
    ("case", "marker"), [("session_markers", "train"), ("session_plain", "SessionRun")]
)
def test_overview_top_ops_leave_out_step_markers(case: str, marker: str) -> None:
    """The step marker is no op type: it is each step's span, never a node."""
    model = load_model(str(tf_capture(case).xplane))
    assert marker not in model.names
    assert {execs.span.name for execs in model.steps.values() if execs.span} == {marker}
    rows = overview(model).top_ops
    assert rows and all(row.nodes_run > 0 for row in rows)
    assert marker not in {row.op for row in rows}
