"""The devices a step's nodes ran on, read from its (node, device) pairs, equal
those of the per-node device sets (:attr:`StepExecs.devices`)."""

from __future__ import annotations

import pytest

import tfprof_lite
from tests.unit.cli import profiles
from tests.xspace_data import JAX_CASES, jax_file
from tfprof_lite.analysis.overview import _STEPS_DEVICE, _step_markers
from tfprof_lite.model.profile import ProfileModel


def _models() -> list[ProfileModel]:
    return [profiles.profiler().model] + [
        tfprof_lite.Profiler.load(str(jax_file(case))).model for case in JAX_CASES
    ]


@pytest.mark.parametrize("at", range(1 + len(JAX_CASES)))
def test_used_devices_and_step_markers_equal_the_device_sets(at: int) -> None:
    model = _models()[at]
    union: dict[int, set[str]] = {}
    for execs in model.steps.values():
        sets = execs.devices
        used = execs.used_devices()
        assert len(used) == len(set(used))
        assert set(used) == {dev for devs in sets.values() for dev in devs}
        for nid, devs in sets.items():
            union.setdefault(nid, set()).update(devs)
    markers = {nid for nid, devs in union.items() if devs == {_STEPS_DEVICE}}
    assert _step_markers(model) == markers
    # The JAX captures' ``train`` step markers are the steps' spans, no nodes.
    assert not markers
    assert "train" not in model.names
    assert all((execs.span is not None) == (at > 0) for execs in model.steps.values())


@pytest.mark.parametrize("at", range(1 + len(JAX_CASES)))
def test_latest_steps_in_first_seen_order(at: int) -> None:
    from tfprof_lite.advisor.accelerator import _latest_steps

    model = _models()[at]
    want: dict[int, int] = {}
    for step in model.sorted_steps():
        for nid in model.steps[step].devices:
            want[nid] = step
    got = _latest_steps(model)
    assert list(got.items()) == list(want.items()) and got
