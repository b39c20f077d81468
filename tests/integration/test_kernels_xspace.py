"""GPU kernel statistics on the real kernels of the JAX H100 captures.

The captures' GPU events are read with TensorFlow's ``xplane_pb2`` and laid out
as TF 2.21's FULL_TRACE RunMetadata (``tests/xspace_kernels.py``); the rows are
checked against an aggregation done here straight from the XSpace events.

XProf 2.24.2's ``kernel_stats`` tool on the same files has 37 rows (MLP) and 96
rows (transformer) with the same (kernel, grid, block, registers, shared memory,
op) keys, counts and occupancies as ours; its ``op_name`` is ``XlaModule`` on
every row (JAX annotates every launch ``tf_op=XlaModule:``).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

import tfprof_lite
from tests.xspace_kernels import JAX_CASES, DeviceEvent, device_events, jax_file, run_meta_of
from tfprof_lite.analysis.kernels import KIND_KERNEL, KernelStat, kernel_stats
from tfprof_lite.model.execs import KernelColumns

#: Rows XProf 2.24.2's kernel_stats tool finds on each capture.
XPROF_ROWS = {"jax_h100_mlp": 37, "jax_h100_transformer_bf16": 96}

_Key = tuple[str, str, str]


def _details(row: KernelStat) -> str:
    """The ``kernel_details`` text a row's launch fields were read from."""
    return (
        f"regs:{row.registers_per_thread} static_shared:{row.static_shared_bytes} "
        f"dynamic_shared:{row.dynamic_shared_bytes} grid:{row.grid} block:{row.block} "
        f"occ_pct:{row.occupancy_pct:g}"
    )


def _expected(events: list[DeviceEvent], scale: int) -> dict[_Key, list[int]]:
    """(kernel, op, details) -> durations, from the XSpace kernel events; ``scale``
    1000 truncates to microseconds as RunMetadata does, 1 keeps nanoseconds."""
    out: dict[_Key, list[int]] = defaultdict(list)
    for ev in events:
        if "kernel_details" in ev.stats:
            op = str(ev.stats.get("tf_op", "")).partition(":")[0]
            out[(ev.name, op, ev.stats["kernel_details"])].append(ev.dur_ns // scale * scale)
    return out


def _ours(report: Any) -> dict[_Key, KernelStat]:
    rows = {(r.kernel, r.op, _details(r)): r for r in report.kernels if r.kind == KIND_KERNEL}
    assert len(rows) == len([r for r in report.kernels if r.kind == KIND_KERNEL])
    return rows


@pytest.fixture(scope="module", params=JAX_CASES)
def case(request: pytest.FixtureRequest) -> tuple[str, list[DeviceEvent]]:
    return request.param, device_events(jax_file(request.param))


def test_rows_from_tf221_run_metadata(case: tuple[str, list[DeviceEvent]]) -> None:
    name, events = case
    prof = tfprof_lite.Profiler()
    prof.add_step(0, run_meta_of(events))
    ours = _ours(kernel_stats(prof.model))
    expected = _expected(events, 1000)
    assert set(ours) == set(expected) and len(ours) == XPROF_ROWS[name]
    for key, durs in expected.items():
        row = ours[key]
        got = (row.count, row.total_micros, row.min_micros, row.max_micros)
        assert got == (len(durs), sum(durs) // 1000, min(durs) // 1000, max(durs) // 1000), key


def test_rows_with_nanosecond_durations(case: tuple[str, list[DeviceEvent]]) -> None:
    """Records that keep nanoseconds (as an XSpace does) give exact totals."""
    _, events = case
    prof = tfprof_lite.Profiler()
    prof.add_step(0, run_meta_of(events))
    cols = KernelColumns()
    for ev in events:
        if "kernel_details" not in ev.stats:
            continue
        for device in (
            f"/device:gpu:{ev.gpu}/stream:{ev.stream}",
            f"/device:gpu:{ev.gpu}/stream:all",
        ):
            label = f"{ev.name} {ev.stats['kernel_details']}"
            name = str(ev.stats.get("tf_op") or ev.name)
            cols.extend(
                [device], [name], [label], [ev.start_ns // 1000], [ev.dur_ns // 1000], [ev.dur_ns]
            )
    prof.model.steps[0].kernels = cols
    report = kernel_stats(prof.model)
    ours = _ours(report)
    expected = _expected(events, 1)
    assert set(ours) == set(expected)
    for key, durs in expected.items():
        row = ours[key]
        assert row.count == len(durs) and row.avg_micros == sum(durs) // len(durs) / 1000
        assert row.total_micros == pytest.approx(sum(durs) / 1000, abs=5e-4)
        assert (row.min_micros, row.max_micros) == pytest.approx((min(durs) / 1e3, max(durs) / 1e3))
    kernel_ns = sum(ev.dur_ns for ev in events if "kernel_details" in ev.stats)
    assert report.total_micros == pytest.approx(kernel_ns / 1000, abs=1e-3)


def test_tensor_cores_and_ops_on_jax(case: tuple[str, list[DeviceEvent]]) -> None:
    _, events = case
    prof = tfprof_lite.Profiler()
    prof.add_step(0, run_meta_of(events))
    rows = [r for r in kernel_stats(prof.model).kernels if r.kind == KIND_KERNEL]
    assert {r.op for r in rows} == {"XlaModule"}  # every JAX launch is annotated so
    for row in rows:
        by_name = "tensorop_s1688gemm" in row.kernel or row.kernel.startswith("nvjet_sm90")
        assert row.uses_tensor_core is by_name, row.kernel
        # XlaModule is no matrix op: eligible only through a tensor-core kernel.
        assert row.tensor_core_eligible is row.uses_tensor_core
