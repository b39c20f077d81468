"""GPU kernel statistics on a hand-made TF 2.21 FULL_TRACE RunMetadata: rows per kernel,
launch configuration and op; JSON fields; text; the report section; CPU outputs kept."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import tfprof_lite
from tests.gpu_tf221 import BIAS, CONV, CUB, KERNELS, RELU, SGEMM, XMMA, tf221_gpu_meta, tf221_graph
from tests.handmade import CPU, ns, run_meta
from tests.unit.cli.conftest import Runner
from tfprof_lite.analysis.kernels import (
    KIND_KERNEL,
    KIND_MEMCPY,
    KIND_OTHER,
    KIND_SYNC,
    KernelStat,
    kernel_stats,
)
from tfprof_lite.report.kernels import kernel_section

STEPS = 2
JSON_FIELDS = {
    "kernel",
    "op",
    "count",
    "total_micros",
    "avg_micros",
    "min_micros",
    "max_micros",
    "registers_per_thread",
    "static_shared_bytes",
    "dynamic_shared_bytes",
    "grid",
    "block",
    "occupancy_pct",
    "tensor_core_eligible",
    "uses_tensor_core",
}


def _profiler() -> tfprof_lite.Profiler:
    prof = tfprof_lite.Profiler(graph=tf221_graph())
    for step in range(STEPS):
        prof.add_step(step, tf221_gpu_meta(step))
    return prof


def _rows() -> dict[tuple[str, str, str | None], KernelStat]:
    report = kernel_stats(_profiler().model)
    rows = {(k.kernel, k.op, k.grid): k for k in report.kernels}
    assert len(rows) == len(report.kernels)
    return rows


def test_one_row_per_kernel_launch_config_and_op() -> None:
    rows = _rows()
    kernels = {key: row for key, row in rows.items() if row.kind == KIND_KERNEL}
    # Each launch counts once per step (its stream:all copy is not counted again).
    expected = Counter(
        (k.kernel, k.op.partition(":")[0], k.details.split("grid:")[1].split()[0]) for k in KERNELS
    )
    assert {key: row.count for key, row in kernels.items()} == {
        key: n * STEPS for key, n in expected.items()
    }
    # One kernel name, two launch configurations (two ops): two rows.
    assert rows[(RELU, "dense/Relu", "1,1,1")].count == STEPS
    assert rows[(RELU, "out/Relu", "8,1,1")].count == STEPS
    xmma = rows[(XMMA, "out/MatMul", "2,4,1")]
    assert (xmma.count, xmma.total_micros, xmma.min_micros, xmma.max_micros) == (4, 52, 12, 14)
    assert xmma.avg_micros == 13.0 and xmma.op_type == "MatMul"
    assert (xmma.registers_per_thread, xmma.static_shared_bytes, xmma.dynamic_shared_bytes) == (
        126,
        0,
        49152,
    )
    assert (xmma.block, xmma.occupancy_pct) == ("256,1,1", 25.0)
    assert rows[(CONV, "conv/Conv2D", "32,1,1")].occupancy_pct == 12.5
    assert rows[("redzone_checker", "", "1,1,1")].op_type == ""
    # Unannotated: its record is named after the kernel, whose ":" is no "name:Type".
    assert rows[(CUB, "", "1,1,1")].count == STEPS


def test_tensor_core_columns() -> None:
    rows = _rows()
    flags = {
        (kernel, op): (row.tensor_core_eligible, row.uses_tensor_core)
        for (kernel, op, _), row in rows.items()
        if row.kind == KIND_KERNEL
    }
    assert flags[(XMMA, "out/MatMul")] == (True, True)
    assert flags[(SGEMM, "dense/MatMul")] == (True, False)  # eligible, FP32 SIMT kernel
    assert flags[(CONV, "conv/Conv2D")] == (True, False)
    assert flags[(BIAS, "dense/BiasAdd")] == (False, False)
    assert flags[("redzone_checker", "")] == (False, False)


def test_copies_syncs_and_others_have_no_launch_fields() -> None:
    rows = _rows()
    (copy,) = [r for r in rows.values() if r.kind == KIND_MEMCPY]
    assert (copy.kernel, copy.count, copy.bytes) == ("MemcpyHtoD", STEPS, 32768 * STEPS)
    for row in rows.values():
        if row.kind in (KIND_MEMCPY, KIND_SYNC, KIND_OTHER):
            assert row.registers_per_thread is None and row.grid is None
            assert not row.tensor_core_eligible and not row.uses_tensor_core
    assert {r.kind for r in rows.values()} == {KIND_KERNEL, KIND_MEMCPY, KIND_SYNC, KIND_OTHER}


def test_json_fields(run: Runner, tmp_path: Path) -> None:
    paths = []
    for step in range(STEPS):
        paths.append(tmp_path / f"rm{step}.pb")
        paths[-1].write_bytes(tf221_gpu_meta(step).SerializeToString())
    (tmp_path / "graph.pb").write_bytes(tf221_graph().SerializeToString())
    result = run(
        "kernels",
        "--graph",
        tmp_path / "graph.pb",
        "--run-meta",
        ",".join(map(str, paths)),
        "--json",
    )
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert all(set(row) >= JSON_FIELDS for row in doc["kernels"])
    (xmma,) = [r for r in doc["kernels"] if r["kernel"] == XMMA]
    assert {k: xmma[k] for k in ("op", "grid", "block", "count", "total_micros")} == {
        "op": "out/MatMul",
        "grid": "2,4,1",
        "block": "256,1,1",
        "count": 4,
        "total_micros": 52,
    }
    assert xmma["tensor_core_eligible"] is True and xmma["uses_tensor_core"] is True
    assert xmma["occupancy_pct"] == 25.0 and xmma["dynamic_shared_bytes"] == 49152
    (copy,) = [r for r in doc["kernels"] if r["kind"] == "memcpy"]
    assert copy["grid"] is None and copy["registers_per_thread"] is None


def test_text_table() -> None:
    text = kernel_stats(_profiler().model).to_text()
    lines = text.splitlines()
    assert lines[1].split() == [
        "count", "total", "avg", "min", "max", "kind", "regs", "shmem", "grid", "block", "occ%",
        "TC", "kernel", "<-", "op",
    ]  # fmt: skip
    xmma = next(line for line in lines if XMMA[:30] in line)
    assert xmma.split()[:12] == [
        "4", "52us", "13us", "12us", "14us", "kernel", "126", "49.15KB", "2,4,1", "256,1,1",
        "25", "used",
    ]  # fmt: skip
    sgemm = next(line for line in lines if SGEMM in line)
    assert sgemm.split()[6:12] == ["86", "8.19KB", "4,2,1", "128,1,1", "50", "elig"]
    assert sgemm.endswith(f"{SGEMM} <- dense/MatMul (MatMul)")
    copy = next(line for line in lines if "MemcpyHtoD" in line)
    assert copy.split()[5:7] == ["memcpy", "MemcpyHtoD"]  # blank launch columns
    assert "note: TC: used = the kernel uses tensor cores" in text


def test_report_section() -> None:
    section = kernel_section(_profiler().model, max_rows=50)
    assert section is not None
    body = section.body
    for title in ("Regs", "Shared mem", "Grid", "Block", "Occupancy %", "TC eligible", "Uses TC"):
        assert f">{title}</th>" in body
    row = next(r for r in body.split("<tr>") if XMMA in r)
    assert '<td data-v="126">126</td>' in row
    assert 'title="static 0 B, dynamic 49152 B">49.15KB</td>' in row
    assert '<td class="text">2,4,1</td><td class="text">256,1,1</td>' in row
    assert '<td data-v="25.0">25</td><td class="text">yes</td><td class="text">yes</td>' in row
    copy = next(r for r in body.split("<tr>") if "MemcpyHtoD" in r)
    assert copy.count('<td data-v="-1">--</td>') == 7


def test_cpu_and_old_label_outputs_unchanged() -> None:
    cpu = tfprof_lite.Profiler(graph=tf221_graph())
    cpu.add_step(0, run_meta([(CPU, [ns("dense/MatMul", 10, 5)])]))
    assert kernel_stats(cpu.model).to_text() == (
        "no GPU kernel records\nthe profile has no GPU stream or memcpy devices (a CPU-only "
        "run, or steps traced without the GPU tracer)\n"
    )
    assert kernel_section(cpu.model, 50) is None
    # A TF 1.x-style record (no label): the table keeps its old columns.
    old = tfprof_lite.Profiler(graph=tf221_graph())
    old.add_step(0, run_meta([("/device:GPU:0/stream:all", [ns("dense/MatMul:MatMul", 10, 4)])]))
    assert kernel_stats(old.model).to_text().splitlines()[1:] == [
        "  count      total        avg       min       max  kind    kernel <- op",
        "      1        4us        4us       4us       4us  kernel  (kernel name not recorded) "
        "<- dense/MatMul (MatMul)",
    ]
