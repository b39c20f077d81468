"""Memory profile, GPU kernel statistics and MemoryChecker on hand-made RunMetadata."""

from __future__ import annotations

import json
from typing import Any

import pytest

import tfprof_lite
from tests.hand_cases import gpu_case, steps_case
from tests.handmade import CPU, GPU, MEMCPY, STREAM_7, STREAM_ALL, Mem, node, ns, run_meta
from tfprof_lite.advisor.memory import MemoryChecker
from tfprof_lite.analysis.kernels import (
    KIND_KERNEL,
    KIND_MEMCPY,
    KIND_SYNC,
    NOT_KEPT,
    NOT_RECORDED,
    kernel_name,
    kernel_stats,
)
from tfprof_lite.analysis.memory import AllocatorMemory, memory_profile
from tfprof_lite.errors import InvalidInputError, InvalidOptionError
from tfprof_lite.model import decode
from tfprof_lite.model.dtypes import dtype_name
from tfprof_lite.proto import messages as pb
from tfprof_lite.report.memory import downsample, memory_fragment

NODES = [
    node("x", "Placeholder", outputs=[[4, 8]]),
    node("a/mm", "MatMul", ["x"], outputs=[[4, 16]]),
    node("a/relu", "Relu", ["a/mm"], outputs=[[4, 16]]),
    node("b/sum", "Sum", ["a/relu"], outputs=[[]]),
]


def _profiler(*steps: Any) -> tfprof_lite.Profiler:
    prof = tfprof_lite.Profiler(graph=pb.GraphDef(node=NODES))
    for i, meta in enumerate(steps):
        prof.add_step(i, meta)
    return prof


def _output(msg: Any, slot: int, allocator: str, nbytes: int, dims: list[int]) -> None:
    out = msg.output.add(slot=slot)
    desc = out.tensor_description
    desc.dtype = 1
    desc.shape.SetInParent()
    for d in dims:
        desc.shape.dim.add().size = d
    alloc = desc.allocation_description
    alloc.allocator_name = allocator
    alloc.requested_bytes = alloc.allocated_bytes = nbytes
    alloc.allocation_id = slot + 1
    alloc.ptr = 4096


def _two_allocators() -> Any:
    """cpu: mm allocates 256 at 110 (freed at 300), relu 128 at 210; a free at 105
    of memory from before the step. GPU_0_bfc: sum allocates 64 at 320."""
    mm = ns("a/mm", 100, 50, [Mem("cpu", 256, 256, 0, 900, ((110, 256), (300, -256)))])
    _output(mm, 0, "cpu", 256, [4, 16])
    relu = ns("a/relu", 200, 20, [Mem("cpu", 128, 128, 128, 1000, ((210, 128),))])
    _output(relu, 0, "cpu", 128, [4, 16])
    early = ns("x", 90, 5, [Mem("cpu", 0, 0, 0, 0, ((105, -32),))])
    total = ns("b/sum", 310, 10, [Mem("GPU_0_bfc", 64, 64, 64, 64, ((320, 64),))])
    _output(total, 0, "GPU_0_bfc", 64, [])
    return run_meta([(CPU, [early, mm, relu]), (GPU, [total])])


# --------------------------------------------------------------------- memory profile
def test_timeline_peak_and_live_set_per_allocator() -> None:
    report = memory_profile(_profiler(_two_allocators()).model)
    (step,) = report.steps
    assert step.source == "allocation records" and report.notes == []
    cpu, gpu = step.allocators
    assert (cpu.allocator, gpu.allocator) == ("cpu", "GPU_0_bfc")
    # Times from the first record (x at 90); the early free lifts the curve by 32.
    assert cpu.baseline_bytes == 32
    assert cpu.timeline == [(0, 32), (15, 0), (20, 256), (120, 384), (210, 128)]
    assert cpu.peak_bytes == max(b for _, b in cpu.timeline) == 384
    assert cpu.peak_micros == 120
    assert [(op.name, op.bytes) for op in cpu.by_op] == [("a/mm", 256), ("a/relu", 128)]
    assert cpu.live_bytes + cpu.before_step_bytes == cpu.peak_bytes
    assert cpu.before_step_bytes == 0  # x freed the 32 bytes before the peak
    assert cpu.by_op[0].tensors[0].label() == "a/mm:0 float32[4,16]"
    assert [(s.scope, s.bytes, s.ops) for s in cpu.by_scope] == [("a", 384, 2)]
    assert (cpu.allocations, cpu.frees, cpu.max_in_use_bytes) == (2, 2, 1000)
    assert gpu.peak_bytes == 64 and gpu.by_op[0].tensors[0].shape == []
    assert gpu.by_scope[0].scope == "b"
    doc = json.loads(json.dumps(report.to_dict()))
    assert doc["steps"][0]["allocators"][0]["timeline"][2] == [20, 256]
    assert doc["steps"][0]["allocators"][0]["live_bytes"] == 384
    assert "live at the peak: 384B in 2 ops; by op:" in report.to_text()
    text = report.to_text()
    assert "cpu: peak 384B at +120us; 2 allocations, 2 frees, 5 timeline points" in text
    assert "a/mm (MatMul): a/mm:0 float32[4,16]" in text


def test_frees_before_allocs_count_as_memory_from_before_the_step() -> None:
    meta = run_meta([(CPU, [ns("a/mm", 100, 10, [Mem("cpu", 0, 0, 0, 0, ((105, -500),))])])])
    (alloc,) = memory_profile(_profiler(meta).model).steps[0].allocators
    assert alloc.timeline == [(0, 500), (5, 0)]
    assert (alloc.peak_bytes, alloc.peak_micros, alloc.baseline_bytes) == (500, 0, 500)
    assert alloc.by_op == [] and alloc.before_step_bytes == 500


def test_no_memory_stats() -> None:
    report = memory_profile(_profiler(run_meta([(CPU, [ns("a/mm", 100, 10)])])).model)
    assert report.steps[0].allocators == [] and report.steps[0].source == "no memory records"
    assert "FULL_TRACE" in report.notes[0]
    assert "no memory records in this step" in report.to_text()
    assert memory_profile(tfprof_lite.Profiler(graph=pb.GraphDef(node=NODES)).model).steps == []


def test_allocator_without_records_is_approximated() -> None:
    meta = run_meta([(CPU, [ns("a/mm", 100, 10, [Mem("cpu", 300, 300, 100)])])])
    report = memory_profile(_profiler(meta).model)
    (alloc,) = report.steps[0].allocators
    assert not alloc.exact and alloc.timeline == [(0, 0), (0, 300), (10, 100)]
    assert alloc.peak_bytes == 300 and "approximated" in report.notes[0]


def test_profile_proto_degrades() -> None:
    saved = tfprof_lite.Profiler.load(_profiler(_two_allocators()).serialize_to_string())
    report = memory_profile(saved.model)
    step = report.steps[0]
    assert step.source == "per-op bytes" and "ProfileProto" in report.notes[0]
    labels = [a.allocator for a in step.allocators]
    assert all("(allocator not kept)" in label for label in labels)
    # GPU allocation records survive in a ProfileProto: that device stays exact.
    gpu = next(a for a in step.allocators if "gpu" in a.allocator)
    assert gpu.exact and gpu.peak_bytes == 64
    cpu = next(a for a in step.allocators if "cpu" in a.allocator)
    assert not cpu.exact and cpu.live_bytes + cpu.before_step_bytes == cpu.peak_bytes
    assert cpu.by_op[0].tensors[0].shape == [4, 16]  # from the graph


def test_peak_is_timeline_max_on_the_gpu_case() -> None:
    case = gpu_case()
    prof = tfprof_lite.Profiler(graph=case.graph_def)
    for step, meta in case.run_metas:
        prof.add_step(step, meta)
    for model in (prof.model, tfprof_lite.Profiler.load(prof.serialize_to_string()).model):
        for step in memory_profile(model).steps:
            for alloc in step.allocators:
                assert alloc.peak_bytes == max(b for _, b in alloc.timeline)
                assert alloc.live_bytes + alloc.before_step_bytes == alloc.peak_bytes


def test_memory_detail_and_kept_raw_records() -> None:
    meta = _two_allocators()
    model = _profiler(meta).model
    execs = model.steps[0]
    assert len(execs.raw_stats) == 4
    detail = decode.memory_detail(execs.raw_stats[1])
    assert detail.start_micros == 100 and detail.end_micros == 150
    assert detail.allocators[0].events == ((110, 256), (300, -256))
    assert detail.tensors[0].shape == (4, 16) and detail.tensors[0].allocator == "cpu"
    with pytest.raises(InvalidInputError):
        decode.memory_detail(b"\xff\xff")
    assert dtype_name(1) == "float32" and dtype_name(101) == "float32" and dtype_name(0) == ""


def test_scope_depth_and_top() -> None:
    report = memory_profile(_profiler(_two_allocators()).model, top=1, scope_depth=0)
    cpu = report.steps[0].allocators[0]
    assert len(cpu.by_op) == 1 and cpu.by_scope[0].scope == "(top level)"
    # live_bytes covers every op, not only the listed ones.
    assert (cpu.live_ops, cpu.live_bytes) == (2, 384) and cpu.by_op[0].bytes == 256
    assert cpu.live_bytes + cpu.before_step_bytes == cpu.peak_bytes


# --------------------------------------------------------------------- kernels
def _kernel(name: str, start: int, dur: int, label: str) -> Any:
    msg = ns(name, start, dur)
    msg.timeline_label = label
    return msg


def _tf2_gpu_meta() -> Any:
    k1 = "volta_sgemm_128x64_nn regs:126 shm:16384 grid:4,1,1 block:256,1,1@@a/mm:MatMul"
    k2 = "void Eigen::internal::EigenMetaKernel<Relu, int>(x) regs:16 shm:0 grid:1,1,1 "
    k2 += "block:1024,1,1"
    kernels = [
        _kernel("a/mm:MatMul", 1000, 30, k1),
        _kernel("a/mm:MatMul", 1100, 10, k1),
        _kernel("a/relu:Relu", 1200, 5, k2 + "@@a/relu:Relu"),
        _kernel("redzone_checker", 1300, 2, "redzone_checker regs:8 shm:0 grid:1,1,1 block:1,1,1"),
    ]
    h2d = _kernel("x", 900, 8, "x bytes:128")
    h2d_stream = "/device:GPU:0/stream:13<MemcpyH2D>"
    sync = _kernel("cuStreamSynchronize", 1400, 3, "ThreadId 7")
    return run_meta(
        [
            (GPU, [ns("a/mm", 990, 40), ns("a/relu", 1190, 10)]),
            (STREAM_7, [pb.NodeExecStats.FromString(k.SerializeToString()) for k in kernels]),
            (STREAM_ALL, kernels),
            (h2d_stream, [h2d]),
            (MEMCPY, [h2d]),
            ("/device:GPU:0/sync", [sync]),
        ]
    )


def test_kernel_stats_tf2_labels() -> None:
    prof = _profiler(_tf2_gpu_meta())
    report = kernel_stats(prof.model)
    assert report.source == "GPU tracer records" and report.steps == 1
    rows = {(k.kind, k.kernel, k.op): k for k in report.kernels}
    sgemm = rows[(KIND_KERNEL, "volta_sgemm_128x64_nn", "a/mm")]
    assert (sgemm.count, sgemm.total_micros, sgemm.min_micros, sgemm.max_micros) == (2, 40, 10, 30)
    assert sgemm.avg_micros == 20.0 and sgemm.op_type == "MatMul"
    assert sgemm.devices == ["/device:GPU:0"]
    relu = rows[(KIND_KERNEL, "void Eigen::internal::EigenMetaKernel<Relu, int>(x)", "a/relu")]
    assert relu.count == 1 and relu.op_type == "Relu"
    assert rows[(KIND_KERNEL, "redzone_checker", "")].count == 1  # no annotation
    copy = rows[(KIND_MEMCPY, "MemcpyHtoD", "x")]
    assert copy.count == 1 and copy.bytes == 128  # counted once (memcpy device only)
    assert rows[(KIND_SYNC, "cuStreamSynchronize", "")].total_micros == 3
    assert report.kernels[0] is sgemm and report.total_micros == 40 + 5 + 2 + 8 + 3
    text = report.to_text()
    assert "volta_sgemm_128x64_nn <- a/mm (MatMul)" in text
    assert "MemcpyHtoD [128B] <- x (Placeholder)" in text
    assert json.loads(json.dumps(report.to_dict()))["total_micros"] == 58
    assert len(kernel_stats(prof.model, top=2).kernels) == 2


def test_kernel_stats_per_stream_without_stream_all() -> None:
    k = "sgemm regs:1 shm:0 grid:1,1,1 block:1,1,1@@a/mm:MatMul"
    meta = run_meta([(STREAM_7, [_kernel("a/mm:MatMul", 10, 4, k)])])
    (row,) = kernel_stats(_profiler(meta).model).kernels
    assert (row.kernel, row.op, row.count) == ("sgemm", "a/mm", 1)


def test_kernel_op_from_the_label_annotation() -> None:
    label = "sgemm regs:1 shm:0 grid:1,1,1 block:1,1,1@@outer::a/mm:MatMul#id=3#"
    meta = run_meta([(STREAM_ALL, [_kernel("sgemm", 10, 4, label)])])
    (row,) = kernel_stats(_profiler(meta).model).kernels
    assert (row.kernel, row.op, row.op_type) == ("sgemm", "a/mm", "MatMul")


def test_kernel_stats_tf1_names() -> None:
    label = "MEMCPYHtoD 1024 bytes (Pageable to Device)"
    meta = run_meta(
        [
            (STREAM_ALL, [ns("a/mm:MatMul", 10, 4), ns("_Z10sgemmKernelv", 20, 6)]),
            (STREAM_7, [ns("a/mm:MatMul", 10, 4), _kernel("x:MEMCPYHtoD", 5, 2, label)]),
            (MEMCPY, [_kernel("x:MEMCPYHtoD", 5, 2, label)]),
        ]
    )
    rows = {(k.kind, k.kernel, k.op): k for k in kernel_stats(_profiler(meta).model).kernels}
    assert set(rows) == {
        (KIND_KERNEL, NOT_RECORDED, "a/mm"),
        (KIND_KERNEL, "_Z10sgemmKernelv", ""),
        (KIND_MEMCPY, "MemcpyHtoD", "x"),
    }
    assert rows[(KIND_MEMCPY, "MemcpyHtoD", "x")].bytes == 1024


def test_kernel_stats_cpu_only_and_profile_proto() -> None:
    cpu = kernel_stats(_profiler(_two_allocators()).model)
    assert cpu.kernels == [] and cpu.source == "none"
    assert cpu.to_text().startswith("no GPU kernel records\n")
    assert json.loads(json.dumps(cpu.to_dict()))["kernels"] == []
    saved = tfprof_lite.Profiler.load(_profiler(_tf2_gpu_meta()).serialize_to_string())
    report = kernel_stats(saved.model)
    assert report.source == "accelerator times" and "ProfileProto" in report.notes[0]
    assert {(k.kernel, k.op, k.count) for k in report.kernels} == {
        (NOT_KEPT, "a/mm", 2),
        (NOT_KEPT, "a/relu", 1),
        (NOT_KEPT, "redzone_checker", 1),
    }


def test_kernel_name_rules() -> None:
    assert kernel_name("k regs:1 shm:0 grid:1,1,1 block:1,1,1@@a:B", "a:B") == "k"
    assert kernel_name("", "a:B") == NOT_RECORDED
    assert kernel_name("", "a", annotated=True) == NOT_RECORDED
    assert kernel_name("", "_Z3foov") == "_Z3foov"
    assert kernel_name("a bytes:8", "a", KIND_MEMCPY) == "Memcpy"
    assert kernel_name("MEMCPYDtoH 8 bytes", "a:MEMCPYDtoH", KIND_MEMCPY) == "MemcpyDtoH"
    assert kernel_name("", "MemcpyD2D", KIND_MEMCPY) == "MemcpyDtoD"


def test_labels_kept_for_tracer_devices_only() -> None:
    meta = _tf2_gpu_meta()
    meta.step_stats.dev_stats[0].node_stats[0].timeline_label = "a/mm = MatMul(x)"
    execs = _profiler(meta).model.steps[0]
    assert len(execs.kernels) == 4 + 4 + 1 + 1 + 1
    assert all("/stream:" in d or d.endswith(("/memcpy", "/sync")) for d in execs.kernels.dev)


# --------------------------------------------------------------------- checker + html
def test_memory_checker(capsys: pytest.CaptureFixture[str]) -> None:
    prof = _profiler(_two_allocators())
    advice = prof.advise({"MemoryChecker": {"top": "1"}})
    reports = list(advice.checkers["MemoryChecker"].reports)
    assert reports == [
        "step 0, cpu: peak 384B at +120us",
        "step 0, cpu: live op a/mm (MatMul) 256B: a/mm:0 float32[4,16]",
        "step 0, cpu: live scope a 384B (2 ops)",
        "step 0, GPU_0_bfc: peak 64B at +230us",
        "step 0, GPU_0_bfc: live op b/sum (Sum) 64B: b/sum:0 float32[]",
        "step 0, GPU_0_bfc: live scope b 64B (1 op)",
    ]
    assert "\nMemoryChecker:\nstep 0, cpu: peak 384B" in capsys.readouterr().out
    assert "MemoryChecker" in tfprof_lite.ALL_ADVICE
    with pytest.raises(InvalidOptionError):
        MemoryChecker({"top": "x"})
    assert MemoryChecker().check(tfprof_lite.Profiler(graph=pb.GraphDef(node=NODES)).model) is None
    empty = MemoryChecker().check(_profiler(run_meta([(CPU, [ns("a/mm", 1, 1)])])).model)
    assert empty is not None and empty[0].startswith("note: no memory records")


def test_memory_fragment_and_downsample() -> None:
    points = [(i, (i * 7919) % 1000) for i in range(5000)]
    kept = downsample(points, 100)
    assert len(kept) <= 101 and max(b for _, b in kept) == max(b for _, b in points)
    assert kept[-1] == points[-1] and downsample(points[:5]) == points[:5]
    fragment = memory_fragment(_profiler(_two_allocators()).model)
    assert fragment is not None and fragment.count("<svg") == 2
    assert "a/mm:0 float32[4,16]" in fragment
    steps = tfprof_lite.Profiler(graph=steps_case().graph_def).model
    assert memory_fragment(steps) is None
    no_mem = memory_fragment(_profiler(run_meta([(CPU, [ns("a/mm", 1, 1)])])).model)
    assert no_mem is not None and "No memory records" in no_mem


def test_allocator_memory_defaults() -> None:
    alloc = AllocatorMemory("cpu", exact=True)
    assert alloc.live_bytes == 0 and alloc.timeline == []
