"""The TF 2.21 XSpace captures themselves (tests/integration/xspace_captures.py): each
host-measured step lies in the profile's window, on the profile's clock, so that
steps found in the file can be checked against what the host measured."""

from __future__ import annotations

import pytest

from tests.integration import xplane_tf
from tests.integration.xspace_captures import (
    INPUT_SLEEP_S,
    KERAS_PROFILE_BATCH,
    STEPS,
    TF_CASES,
    tf_capture,
)

pytestmark = pytest.mark.tf


@pytest.mark.parametrize("case", TF_CASES)
def test_traced_host_steps_lie_in_the_profile_window(case: str) -> None:
    capture = tf_capture(case)
    start, stop = xplane_tf.profile_window(capture.xplane)
    traced = capture.traced_steps
    first, last = KERAS_PROFILE_BATCH
    assert len(traced) == (last - first + 1 if case == "keras_fit" else STEPS)
    assert capture.xplane.name.endswith(".xplane.pb")
    assert capture.xplane.parent.parent.name == "profile"
    for step in traced:
        assert start <= step.start_ns < step.end_ns <= stop
        assert step.wall_s * 1e9 <= step.end_ns - step.start_ns + 1e6


def test_each_traced_keras_batch_is_one_multi_step_call() -> None:
    """Keras 3 runs one ``multi_step_on_iterator`` call per batch, inside the host's
    timing of that batch (the call XProf does not take for a step)."""
    capture = tf_capture("keras_fit")
    start, _ = xplane_tf.profile_window(capture.xplane)
    calls = [
        (start + e.offset_ps // 1000, start + (e.offset_ps + e.duration_ps) // 1000)
        for e in xplane_tf.events(capture.xplane, "/host:CPU")
        if e.name == "multi_step_on_iterator"
    ]
    assert len(calls) == len(capture.traced_steps)
    for step in capture.traced_steps:
        inside = [c for c in calls if step.start_ns <= c[0] and c[1] <= step.end_ns]
        assert len(inside) == 1


def test_input_bound_steps_wait_for_the_sleep() -> None:
    """No prefetch: every step waits for one element's sleep."""
    capture = tf_capture("input_bound")
    assert all(step.wall_s >= INPUT_SLEEP_S for step in capture.traced_steps)
