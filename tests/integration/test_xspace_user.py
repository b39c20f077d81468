"""What a user sees on the real JAX H100 captures: numbers that must not be empty."""

from __future__ import annotations

import re

import pytest

from tests.xspace_data import JAX_CASES, jax_file
from tfprof_lite.advisor.accelerator import AcceleratorUtilizationChecker, device_windows
from tfprof_lite.formats.xspace.read.load import load_model

GPU0 = "/job:localhost/replica:0/task:0/device:gpu:0"


@pytest.mark.parametrize("case", JAX_CASES)
def test_xla_kernels_are_bound_to_their_gpu(case: str) -> None:
    """Every node with a GPU kernel record is bound to that GPU's canonical device."""
    model = load_model(str(jax_file(case)))
    unbound = [
        model.names[nid]
        for number in model.sorted_steps()
        for nid, devices in model.steps[number].devices.items()
        if any("/device:gpu:0/stream:" in d for d in devices)
        and model.canonical_device[nid] != GPU0
    ]
    assert unbound == []


@pytest.mark.parametrize("case", JAX_CASES)
def test_accelerator_utilization_counts_the_kernels(case: str) -> None:
    """The GPU's busy time is all the kernel time of the last step, so it is not 0.00."""
    model = load_model(str(jax_file(case)))
    last = model.sorted_steps()[-1]
    kernel_us = int(model.steps[last].totals(len(model)).accelerator_exec_micros.sum())
    window = device_windows(model)[GPU0]
    assert kernel_us > 0
    assert window.busy == kernel_us
    [line] = AcceleratorUtilizationChecker().check(model)
    value = float(re.fullmatch(rf"device: {GPU0} (low )?utilization: ([0-9.]+)", line).group(2))  # type: ignore[union-attr]
    assert value == pytest.approx(kernel_us / (window.end - window.start), abs=0.005)
    assert value > 0.0


@pytest.mark.parametrize("case", JAX_CASES)
def test_overview_lists_real_devices_only(case: str) -> None:
    """The overview's devices are the CPU and GPU, not the tracer's streams or steps line."""
    from tfprof_lite.analysis.overview import overview

    view = overview(load_model(str(jax_file(case))))
    assert view.devices == ["/job:localhost/replica:0/task:0/device:cpu:0", GPU0]
    assert view.hosts == ["/job:localhost/replica:0/task:0"]


@pytest.mark.parametrize("case", JAX_CASES)
def test_report_lists_real_devices_only(case: str) -> None:
    """The report's device list and count leave out the tracer's streams and steps line."""
    from tfprof_lite.report.sections import devices

    assert devices(load_model(str(jax_file(case)))) == [
        "/job:localhost/replica:0/task:0/device:cpu:0",
        GPU0,
    ]
