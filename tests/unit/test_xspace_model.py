"""XSpace into the profile model: ops, kernels and their attribution, steps."""

from __future__ import annotations

import json

import pytest

from tests import xspace_files
from tests.xspace_files import SpaceBuilder
from tfprof_lite.formats.xspace.read import conversion as xspace
from tfprof_lite.formats.xspace.read import cut as xspace_cut
from tfprof_lite.formats.xspace.wire import decode as xplane
from tfprof_lite.model.profile import ProfileModel

DETAILS = "regs:32 static_shared:0 dynamic_shared:0 grid:4,1,1 block:128,1,1 occ_pct:50"


def _tf_space(markers: bool = True, steps: int = 2) -> SpaceBuilder:
    """``steps`` TF steps: host ops on an executor thread, a kernel each launched
    by tf_op, by correlation_id only, and a copy."""
    b = SpaceBuilder()
    main = b.line(b.host, 1, "python")
    pool = b.line(b.host, 2, "tf_Compute/2")
    gpu = b.gpu_plane()
    stream = b.line(gpu, 7, "Stream #7(Compute)")
    for step in range(steps):
        t0 = 1_000_000 + step * 100_000
        if markers:
            b.event(b.host, main, "train", t0, 50_000, step_num=10 + step, _r=1)
        b.event(b.host, pool, "dense/MatMul:MatMul", t0 + 1_000, 5_000, "MatMul")
        b.event(b.host, pool, "cuLaunchKernel", t0 + 2_000, 100, correlation_id=step * 10 + 1)
        b.event(b.host, pool, "dense/Relu:Relu", t0 + 8_000, 2_000, "Relu")
        b.event(b.host, pool, "cuLaunchKernel", t0 + 9_000, 100, correlation_id=step * 10 + 2)
        b.event(gpu, stream, "gemm_kernel", t0 + 20_000, 7_000, kernel_details=DETAILS,
                correlation_id=step * 10 + 1, tf_op="dense/MatMul:MatMul")  # fmt: skip
        b.event(gpu, stream, "relu_kernel", t0 + 30_000, 3_000, kernel_details=DETAILS,
                correlation_id=step * 10 + 2)  # fmt: skip
        b.event(gpu, b.line(gpu, 8, "Stream #8(MemcpyD2H)"), "MemcpyD2H", t0 + 40_000, 2_000,
                memcpy_details="kind_src:device kind_dst:pinned size:4 dest:0 async:0")  # fmt: skip
    return b


def _model(raw: bytes) -> tuple[ProfileModel, xspace.XSpaceSteps]:
    model = ProfileModel()
    plan = xspace.convert(xplane.decode_xspace(raw), model)
    return model, plan


def test_tf_ops_become_typed_nodes_and_kernels_go_to_their_ops() -> None:
    model, plan = _model(_tf_space().bytes())
    assert model.steps_source == "step markers (train)"
    assert model.sorted_steps() == [10, 11]
    assert model.ops[model.index["dense/MatMul"]] == "MatMul"
    assert model.ops[model.index["dense/Relu"]] == "Relu"
    cols = plan.columns[0]
    rows = list(zip((cols.devices[d] for d in cols.dev.tolist()), cols.name, cols.label))
    assert ("/device:GPU:0/stream:7", "dense/MatMul", f"gemm_kernel {DETAILS}") in rows
    assert ("/device:GPU:0/stream:all", "dense/MatMul", f"gemm_kernel {DETAILS}") in rows
    # No tf_op on the second kernel: correlation_id -> the launch -> the op around it.
    assert ("/device:GPU:0/stream:all", "dense/Relu", f"relu_kernel {DETAILS}") in rows
    copy = "MemcpyD2H kind_src:device kind_dst:pinned size:4 dest:0 async:0"
    assert ("/device:GPU:0/stream:8<MemcpyD2H>", "MemcpyD2H", copy) in rows
    assert ("/device:GPU:0/memcpy", "MemcpyD2H", copy) in rows
    assert (xspace.CPU_DEVICE, "dense/MatMul", "dense/MatMul") in rows
    stats = model.stats(10)
    matmul = model.index["dense/MatMul"]
    assert int(stats.accelerator_exec_micros[matmul]) == 7
    assert int(stats.cpu_exec_micros[matmul]) == 5


def test_step_spans_marker_or_from_the_threads_first_event_after_the_last_step() -> None:
    model, _ = _model(_tf_space().bytes())
    spans = {s: model.steps[s].wall_span() for s in model.sorted_steps()}
    start10, end10 = spans[10]
    start11, end11 = spans[11]
    # Each step is its marker (50 us), which outlasts its copy (t0 + 42 us): the
    # marker's thread did nothing between the steps.
    assert end10 - start10 == 50 and end11 - start11 == 50
    assert start11 - start10 == 100
    # With work on the marker's thread before step 11 (reading a batch), the step
    # starts there.
    b = _tf_space()
    b.event(b.host, b.line(b.host, 1, "python"), "next_batch", 1_000_000 + 60_000, 30_000)
    model, _ = _model(b.bytes())
    start11, end11 = model.steps[11].wall_span()
    assert end11 - start11 == 90


def test_host_ops_crossing_a_step_boundary_are_cut() -> None:
    b = _tf_space()
    data = b.line(b.host, 3, "tf_data_iterator")
    b.event(b.host, data, "iter/Map:MapDataset", 1_000_000 + 40_000, 80_000, "MapDataset")
    model, _ = _model(b.bytes())
    node = model.index["iter/Map"]
    # 40..120 us: 40..50 in step 10 (its marker ends at 50), 100..120 in step 11
    # (its marker starts at 100); 50..100 ran between the steps.
    assert int(model.stats(10).cpu_exec_micros[node]) == 10
    assert int(model.stats(11).cpu_exec_micros[node]) == 20
    assert model.steps[10].wall_span()[1] - model.steps[10].wall_span()[0] == 50


_REGULAR = "(confidence medium: step times vary 0%)"


@pytest.mark.parametrize(
    ("root", "stats", "source"),
    [
        ("Profiled batch", {"step_num": 5}, "Keras batch markers (Profiled batch)"),
        ("multi_step_on_iterator", {},
         f"inferred: 3 Keras multi_step_on_iterator calls, one per step {_REGULAR}"),
        ("EagerExecute", {"eager_op": "__inference_multi_step_on_iterator_123"},
         f"inferred: 3 Keras multi_step_on_iterator calls, one per step {_REGULAR}"),
        ("jit_step:XLA GPU module", {},
         f"inferred: 3 runs of XLA program jit_step, one per step {_REGULAR}"),
        ("SessionRun", {}, f"inferred: 3 SessionRun calls, one per step {_REGULAR}"),
        ("something_else", {}, "no steps found: no step markers, and no Keras, XLA program or "
         "SessionRun calls to infer them from"),
    ],
)  # fmt: skip
def test_inferred_steps(root: str, stats: dict[str, str], source: str) -> None:
    b = _tf_space(markers=False, steps=3)
    main = b.line(b.host, 1, "python")
    for step in range(3):
        b.event(b.host, main, root, 1_000_000 + step * 100_000, 50_000, **stats)
    model, _ = _model(b.bytes())
    assert model.steps_source == source
    assert model.sorted_steps() == ([0] if source.startswith("no") else [0, 1, 2])
    assert model.cut_steps == ({0: xspace_cut.NOT_A_STEP} if source.startswith("no") else {})


def test_hlo_ops_name_kernels_and_command_buffers_use_the_kernel_name() -> None:
    b = SpaceBuilder()
    gpu = b.gpu_plane()
    stream = b.line(gpu, 3, "Stream #3")
    common = {"kernel_details": DETAILS, "hlo_module": "jit_f", "tf_op": "XlaModule:"}
    b.event(gpu, stream, "loop_add_fusion_3", 10, 5, hlo_op="command_buffer_1", **common)
    b.event(gpu, stream, "void cutlass::Kernel2<x>(y)", 20, 5, hlo_op="command_buffer_1", **common)
    b.event(gpu, stream, "nvjet_gemm", 30, 5, hlo_op="custom-call.2", **common)
    model, _ = _model(b.bytes())
    assert {"jit_f/loop_add_fusion_3", "jit_f/command_buffer_1", "jit_f/custom-call.2"} <= set(
        model.names
    )
    assert model.ops[model.index["jit_f/loop_add_fusion_3"]] == "loop_add_fusion"
    assert model.steps_source.startswith("no steps found")


@pytest.mark.parametrize("case", xspace_files.jax_cases())
def test_jax_step_times_match_the_host_measured_times(case: str) -> None:
    from tfprof_lite.analysis.steptime import step_times

    meta = json.loads((xspace_files.data_dir() / case / "meta.json").read_text())
    model, _ = _model(xspace_files.jax_file(case).read_bytes())
    assert model.sorted_steps() == meta["traced_steps"]
    assert model.steps_source == "step markers (train)"
    walls = {s.step: s.wall_micros for s in step_times(model).steps}
    host = meta["host_step_s"]
    # The host timed each step from the end of the previous one: every traced
    # step after the first lies wholly in the file.
    for step in meta["traced_steps"][1:]:
        assert walls[step] == pytest.approx(host[step] * 1e6, rel=0.01), step
    first = meta["traced_steps"][0]
    assert walls[first] < host[first] * 1e6  # the trace started inside it
    # Kernels go to their HLO instruction's framework scope: time per layer.
    layers = {n for n in model.names if "/dense0/" in n or "/attn/" in n}
    assert layers, sorted(model.names)[:20]
    assert all(n.startswith("jit(train_step)/") for n in layers)
    # The host side of each program execution (dispatch, launch): op type XlaModule.
    program = model.index["jit_train_step"]
    assert model.ops[program] == "XlaModule"
    assert int(model.stats(23).cpu_exec_micros[program]) > 0
    assert int(model.stats(23).run_count[program]) == 1


def test_allocator_events_give_the_memory_profile() -> None:
    from tfprof_lite.analysis.memory import memory_profile

    b = _tf_space()
    main = b.line(b.host, 1, "python")
    t0 = 1_000_000
    for at, kind, size, op in [
        (1_000, "MemoryAllocation", 4096, "dense/MatMul:MatMul"),
        (2_000, "MemoryAllocation", 1024, "dense/Relu:Relu"),
        (3_000, "MemoryDeallocation", 4096, "dense/MatMul:MatMul"),
        (4_000, "MemoryAllocation", 512, ""),
    ]:
        stats = {"allocator_name": "GPU_0_bfc", "allocation_bytes": size, "bytes_allocated": 9}
        if op:
            stats["tf_op"] = op
        b.event(b.host, main, kind, t0 + at, 0, **stats)
    model, _ = _model(b.bytes())
    report = memory_profile(model, step=10)
    (step,) = report.steps
    (alloc,) = [a for a in step.allocators if a.allocator == "GPU_0_bfc"]
    assert alloc.peak_bytes == 5120  # 4096 + 1024, before the MatMul's free
    assert {op.name for op in alloc.by_op} == {"dense/MatMul", "dense/Relu"}
    assert "GPU_0_bfc (no op)" in model.names


def test_derived_lines_are_not_counted_twice() -> None:
    plain, _ = _model(_tf_space().bytes())
    b = _tf_space()
    gpu = b.gpu_plane()
    ops_line = b.line(gpu, 9999, "XLA Ops")
    steps_line = b.line(b.host, 9998, "Steps")
    for step in range(2):
        t0 = 1_000_000 + step * 100_000
        b.event(gpu, ops_line, "gemm_kernel", t0 + 20_000, 7_000, kernel_details=DETAILS,
                tf_op="dense/MatMul:MatMul")  # fmt: skip
        b.event(b.host, steps_line, "dense/MatMul:MatMul", t0, 50_000, "MatMul")
    derived, _ = _model(b.bytes())
    for step in (10, 11):
        assert derived.stats(step).accelerator_exec_micros.tolist() == (
            plain.stats(step).accelerator_exec_micros.tolist()
        )
        assert derived.stats(step).cpu_exec_micros.tolist() == (
            plain.stats(step).cpu_exec_micros.tolist()
        )


def test_absolute_timestamps_give_the_same_profile() -> None:
    relative = _tf_space()
    absolute = _tf_space()
    env = next(p for p in absolute.space.planes if p.name == "Task Environment")
    absolute.space.planes.remove(env)
    for plane in absolute.space.planes:
        for line in plane.lines:
            line.timestamp_ns += SpaceBuilder.START
    a, _ = _model(absolute.bytes())
    r, _ = _model(relative.bytes())
    assert a.sorted_steps() == r.sorted_steps() == [10, 11]
    for step in (10, 11):
        assert a.steps[step].wall_span() == r.steps[step].wall_span()
        assert a.stats(step).accelerator_exec_micros.tolist() == (
            r.stats(step).accelerator_exec_micros.tolist()
        )


def _xla_space(program_id: bool) -> SpaceBuilder:
    """A kernel of program 7 (``jit_step``, the hand-made MLP module) beside a
    program 8 whose ``Hlo Proto`` bytes are corrupt; the kernel names its program
    by ``program_id`` or only by module name."""
    from tests.unit.xla_modules import mlp_module

    b = SpaceBuilder()
    plane = b.space.planes.add(id=0, name="/host:metadata")
    names: dict[str, int] = {}
    for program, data in ((7, mlp_module().data()), (8, b"\xff\xff\xff")):
        meta = plane.event_metadata[program]
        meta.id, meta.name = program, f"jit_step({program})"
        meta.stats.append(xspace_files.stat(plane, names, "Hlo Proto", bytes_value=data))
        meta.stats.append(xspace_files.stat(plane, names, "program_id", int64_value=program))
    gpu = b.gpu_plane()
    stream = b.line(gpu, 3, "Stream #3")
    named = {"program_id": 7} if program_id else {}
    b.event(gpu, stream, "loop_add_fusion", 10, 5, kernel_details=DETAILS,
            hlo_module="jit_step", hlo_op="loop_add_fusion", **named)  # fmt: skip
    return b


@pytest.mark.parametrize("program_id", [True, False])
def test_only_the_programs_events_name_are_parsed(
    program_id: bool, caplog: pytest.LogCaptureFixture
) -> None:
    model, _ = _model(_xla_space(program_id).bytes())
    # Either way the kernel maps to its instruction's framework scope.
    assert model.ops[model.index["jit(step)/add"]] == "add (fusion)"
    # By program_id, the other program is never read; by module name every
    # module must be, and the corrupt one is reported.
    reported = [r.getMessage() for r in caplog.records if "program 8" in r.getMessage()]
    assert len(reported) == (0 if program_id else 1)


def test_gpu_events_named_memcpy_are_copies_with_or_without_details() -> None:
    b = SpaceBuilder()
    gpu = b.gpu_plane()
    stream = b.line(gpu, 5, "Stream #5")
    b.event(gpu, stream, "Memcpy", 10, 5)
    b.event(gpu, stream, "MemcpyH2D", 20, 5)
    b.event(gpu, stream, "memset", 30, 5, memcpy_details="size:8")
    b.event(gpu, stream, "sync", 40, 5)
    _, plan = _model(b.bytes())
    cols = plan.columns[0]
    rows = list(zip((cols.devices[d] for d in cols.dev.tolist()), cols.name, cols.label))
    assert ("/device:GPU:0/stream:5<Memcpy>", "Memcpy", "Memcpy") in rows
    assert ("/device:GPU:0/memcpy", "Memcpy", "Memcpy") in rows
    assert ("/device:GPU:0/stream:5<MemcpyH2D>", "MemcpyH2D", "MemcpyH2D") in rows
    assert ("/device:GPU:0/stream:5<Memcpy>", "memset", "Memcpy size:8") in rows
    assert ("/device:GPU:0/stream:", "sync", "sync") in rows
