"""The kernel rows summed in columns (:class:`Tally`) equal a record-by-record sum."""

from __future__ import annotations

from typing import Any

import pytest

import tfprof_lite
from tests.handmade import GPU, MEMCPY, STREAM_7, STREAM_ALL, node, ns, run_meta
from tests.xspace_data import JAX_CASES, jax_file
from tfprof_lite.analysis.kernel_records import chosen, kernel_name, step_devices
from tfprof_lite.analysis.kernel_tally import Acc, RowKey, Tally, _copy_directions, _said
from tfprof_lite.analysis.kernels import kernel_stats
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.proto import messages as pb

NODES = [node("x", "Placeholder"), node("a/mm", "MatMul", ["x"]), node("b/mm", "MatMul", ["x"])]


def _reference(model: ProfileModel) -> dict[RowKey, Acc]:
    """Every chosen record added one by one, in step and record order."""
    acc: dict[RowKey, Acc] = {}
    devices: dict[str, Any] = {}
    kinds: dict[tuple[str, str, str], str] = {}
    for number in model.sorted_steps():
        cols = model.steps[number].kernels
        flags = step_devices(cols.dev, devices)
        directions = _copy_directions(cols)
        for dev, name, label, start, dur, dur_ns in zip(
            cols.dev, cols.name, cols.label, cols.start, cols.dur, cols.dur_ns
        ):
            picked = chosen(dev, name, label, devices, kinds, flags)
            if picked is None:
                continue
            gpu, kind = picked
            op, op_type, launch, nbytes, kernel = _said(model, kind, name, label)
            if kernel is None:
                named = name + directions.get((name, start, dur), "")
                kernel = kernel_name(label, named, kind, bool(op))
            acc.setdefault((kind, kernel, op, op_type, launch), Acc()).add(dur_ns, nbytes, gpu)
    return acc


def _tallied(model: ProfileModel) -> dict[RowKey, Acc]:
    acc: dict[RowKey, Acc] = {}
    tally = Tally(model, acc)
    for number in model.sorted_steps():
        tally.add_step(model.steps[number].kernels)
    tally.finish()
    return acc


def _kernel(name: str, start: int, dur: int, label: str) -> Any:
    out = ns(name, start, dur)
    out.timeline_label = label
    return out


def _steps() -> list[Any]:
    """Step 0: kernels only; step 1: a new kernel before the known ones, a copy whose
    direction only its ``stream:N<...>`` device gives (read record by record), one
    kernel with two durations; step 2: no ``stream:all`` (the per-stream copies count)."""
    sgemm = "sgemm regs:1 shm:0 grid:1,1,1 block:1,1,1@@a/mm:MatMul"
    relu = "relu regs:8 shm:0 grid:2,1,1 block:64,1,1"
    first = [_kernel("a/mm:MatMul", 10, 4, sgemm), _kernel("relu", 20, 3, relu)]
    second = [
        _kernel("b/mm:MatMul", 5, 7, sgemm.replace("a/mm", "b/mm")),
        *first,
        _kernel("a/mm:MatMul", 30, 9, sgemm),
    ]
    copy = _kernel("x", 2, 6, "x bytes:64")
    return [
        run_meta([(GPU, [ns("a/mm", 9, 6)]), (STREAM_ALL, first), (STREAM_7, first)]),
        run_meta(
            [
                (STREAM_ALL, second),
                (STREAM_7, second),
                ("/device:GPU:0/stream:7<MemcpyH2D>", [copy]),
                (MEMCPY, [copy, _kernel("x", 40, 2, "x bytes:32")]),
            ]
        ),
        run_meta([(STREAM_7, [*first, _kernel("y:MEMCPYDtoH", 50, 1, "")])]),
    ]


def _same(model: ProfileModel) -> None:
    want, got = _reference(model), _tallied(model)
    assert list(got) == list(want)  # rows in the order of their first record
    assert [vars(a) for a in got.values()] == [vars(a) for a in want.values()]


def test_tally_equals_record_by_record_sum_on_hand_made_steps() -> None:
    prof = tfprof_lite.Profiler(graph=pb.GraphDef(node=NODES))
    first, second, third = _steps()
    # Repeated steps (the same records again) and a repeat of the step read record by record.
    for i, meta in enumerate([first, first, second, second, third, first]):
        prof.add_step(i, meta)
    _same(prof.model)
    rows = {(k.kernel, k.op): k for k in kernel_stats(prof.model).kernels}
    assert rows[("sgemm", "a/mm")].count == 8 and rows[("sgemm", "a/mm")].max_micros == 9
    assert rows[("MemcpyHtoD", "x")].bytes == 128 and rows[("Memcpy", "x")].bytes == 64


@pytest.mark.parametrize("case", JAX_CASES)
def test_tally_equals_record_by_record_sum_on_jax(case: str) -> None:
    _same(tfprof_lite.Profiler.load(str(jax_file(case))).model)


@pytest.mark.parametrize("value", [2**63 - 1, -(2**63)])
def test_records_beyond_int64_nanoseconds_are_summed_exactly(value: int) -> None:
    """A duration of int64's limit in microseconds is beyond int64 in nanoseconds:
    the rows are summed in Python integers, as record by record."""
    prof = tfprof_lite.Profiler(graph=pb.GraphDef(node=NODES))
    label = "sgemm regs:1 shm:0 grid:1,1,1 block:1,1,1@@a/mm:MatMul"
    for step in range(2):
        huge = _kernel("a/mm:MatMul", 10, 4, label)
        huge.op_end_rel_micros = value
        meta = run_meta([(STREAM_ALL, [huge, _kernel("a/mm:MatMul", 20, 3, label)])])
        prof.add_step(step, meta)
    _same(prof.model)
    (row,) = kernel_stats(prof.model).kernels
    assert row.count == 4
