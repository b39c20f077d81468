"""Kernel rows over an XSpace's whole window against XProf 2.24.2's kernel_stats.

On both H100 samples, as recorded (step markers) and with their markers
stripped (steps inferred, a few GPU events then fall outside every step), and
on a JAX CPU capture made in a child process (no kernels: nothing to compare,
but the window and the overview must hold). Every kernel row's count equals
XProf's, and its total too within :data:`TOTAL_TOL_US` per row: both sum the
events' exact nanoseconds (ours: ``total_micros`` is the ns sum / 1000 with 3
decimals), so they differ only by float rounding.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests import xspace_oracle as oracle
from tests.integration.step_captures import jax_loop
from tests.integration.test_xspace_steps_real import _stripped
from tests.xspace_data import JAX_CASES, jax_file
from tfprof_lite.analysis.kernels import kernel_stats
from tfprof_lite.analysis.overview import overview
from tfprof_lite.analysis.steptime import step_times
from tfprof_lite.formats.xspace.read.load import load_model
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.proto import messages as pb

#: Per row, ours and XProf's total may differ by this (float rounding of ns / 1000).
TOTAL_TOL_US = 0.001
#: XProf's kernel rows and launches on the samples (tests/integration/test_xprof_oracle.py).
JAX_KERNELS = {"jax_h100_mlp": (37, 304), "jax_h100_transformer_bf16": (96, 2952)}


@pytest.fixture(autouse=True)
def _xprof() -> None:
    oracle.require_xprof()


def _file(case: str, stripped: bool, tmp_path: Path) -> Path:
    if not stripped:
        return jax_file(case)
    path = tmp_path / f"{case}.xplane.pb"
    path.write_bytes(_stripped(jax_file(case)))
    return path


def _kernel_rows(model: ProfileModel) -> dict[tuple[Any, ...], list[Any]]:
    """Our kernel rows keyed as XProf's (kernel and launch configuration; ours are
    also split by the op that launched them)."""
    rows: dict[tuple[Any, ...], list[Any]] = defaultdict(lambda: [0, 0.0])
    for row in kernel_stats(model).kernels:
        if row.kind == "kernel":
            shared = (row.static_shared_bytes or 0) + (row.dynamic_shared_bytes or 0)
            key = (row.kernel, row.grid, row.block, row.registers_per_thread, shared)
            rows[key][0] += row.count
            rows[key][1] += row.total_micros
    return rows


@pytest.mark.parametrize("stripped", [False, True], ids=["markers", "stripped"])
@pytest.mark.parametrize("case", JAX_CASES)
def test_every_kernel_row_equals_xprofs(case: str, stripped: bool, tmp_path: Path) -> None:
    path = _file(case, stripped, tmp_path)
    theirs = oracle.kernel_rows(oracle.xprof_tool(path, "kernel_stats"))
    assert (len(theirs), sum(r.count for r in theirs)) == JAX_KERNELS[case]
    model = load_model(str(path))
    assert model.steps_source.startswith("inferred" if stripped else "step markers")
    ours = _kernel_rows(model)
    expected = {
        (r.kernel, r.grid, r.block, r.registers_per_thread, r.shared_mem_bytes): r for r in theirs
    }
    assert set(ours) == set(expected)
    for key, row in expected.items():
        assert ours[key][0] == row.count, key
        assert ours[key][1] == pytest.approx(row.total_us, abs=TOTAL_TOL_US), key


def _device_events(path: Path) -> dict[str, int]:
    """Events per name on the file's GPU planes, derived lines (XLA Ops...) left
    out, read with the message classes (not the columnar decoder)."""
    space = pb.XSpace()
    space.ParseFromString(path.read_bytes())
    found: dict[str, int] = defaultdict(int)
    for plane in space.planes:
        if plane.name.startswith("/device:GPU:"):
            for line in plane.lines:
                if line.name in ("Steps", "XLA Modules", "XLA Ops", "Framework Ops", "Source code"):
                    continue
                for event in line.events:
                    found[plane.event_metadata[event.metadata_id].name] += 1
    return dict(found)


@pytest.mark.parametrize("case", JAX_CASES)
def test_stripped_markers_lose_no_gpu_event(case: str, tmp_path: Path) -> None:
    """Without markers the copies around the inferred steps fall outside them: the
    window still holds every GPU event of the file, the kernel and copy rows are
    the marked file's, and the steps' own records are short by exactly those."""
    marked = load_model(str(jax_file(case)))
    path = _file(case, True, tmp_path)
    inferred = load_model(str(path))
    window = inferred.event_window
    assert window is not None and marked.event_window is not None
    held: dict[str, int] = defaultdict(int)
    for name in window.device.name:
        held[name] += 1
    assert dict(held) == _device_events(path)
    assert marked.event_window.outside_steps() == 0
    outside = [n for n, s in zip(window.device.name, window.device.step.tolist()) if s < 0]
    assert sorted(outside) == ["MemcpyD2D", "MemcpyD2D", "MemcpyH2D", "MemcpyH2D"]

    def counts(model: ProfileModel) -> dict[tuple[str, str], int]:
        rows: dict[tuple[str, str], int] = defaultdict(int)
        for row in kernel_stats(model).kernels:
            rows[(row.kind, row.kernel)] += row.count
        return dict(rows)

    assert counts(inferred) == counts(marked)
    inferred.event_window = None  # the steps' records alone
    short = counts(inferred)
    assert short[("memcpy", "MemcpyHtoD")] == counts(marked)[("memcpy", "MemcpyHtoD")] - 2
    assert short[("memcpy", "MemcpyDtoD")] == counts(marked)[("memcpy", "MemcpyDtoD")] - 2


@pytest.mark.parametrize("mode", ["markers", "plain"])
def test_jax_cpu_capture_has_a_window_and_no_kernel(mode: str) -> None:
    capture = jax_loop(mode)
    theirs = oracle.kernel_rows(oracle.xprof_tool(capture.xplane, "kernel_stats"))
    model = load_model(str(capture.xplane))
    window = model.event_window
    assert theirs == [] and window is not None and len(window.device) == 0
    report = kernel_stats(model)
    assert report.kernels == [] and report.to_text().startswith("no GPU kernel records")
    view = overview(model)
    assert view.step_coverage is not None and 0 < view.step_coverage <= 1
    walls = sum(s.wall_micros for s in step_times(model).steps)
    # The steps lie in the window; they need not fill it (start and stop of the trace).
    assert walls <= window.duration_ns / 1000 + len(model.sorted_steps())
    assert view.step_coverage == pytest.approx(window.covered_ns() / window.duration_ns, abs=1e-6)
