"""XSpace allocator events as memory records and Python call stacks for the code
view, on hand-made XSpaces (edge cases) and hand-made HLO stack indexes."""

from __future__ import annotations

from typing import Any

from tests.xspace_files import SpaceBuilder
from tfprof_lite.analysis.memory import NO_MEMORY, NO_XSPACE_MEMORY, memory_profile
from tfprof_lite.formats.xspace.read.code import _frames, _module_stacks, call_site, python_frame
from tfprof_lite.formats.xspace.read.load import model_from_bytes
from tfprof_lite.formats.xspace.read.memory import (
    NO_OP_TYPE,
    PROGRAM_TYPE,
)
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.records import CodeFrame
from tfprof_lite.options.options import Options
from tfprof_lite.options.user_code import UserCode
from tfprof_lite.proto import hlo
from tfprof_lite.views.query import run_view

GPU = "GPU_0_bfc"


def _alloc(b: SpaceBuilder, line: Any, t: int, nbytes: int, addr: int, **stats: Any) -> None:
    b.event(b.host, line, "MemoryAllocation", t, 0, allocator_name=stats.pop("allocator", GPU),
            allocation_bytes=nbytes, requested_bytes=nbytes, addr=addr, **stats)  # fmt: skip


def _free(b: SpaceBuilder, line: Any, t: int, nbytes: int, addr: int, **stats: Any) -> None:
    b.event(b.host, line, "MemoryDeallocation", t, 0, allocator_name=stats.pop("allocator", GPU),
            allocation_bytes=nbytes, addr=addr, **stats)  # fmt: skip


def _space(memory: bool = True, python: bool = True) -> SpaceBuilder:
    """Two marked steps of 100 µs; a TF op per step on the python thread inside
    Python frames, allocating a [64,128] float tensor that is freed at the step's end."""
    b = SpaceBuilder()
    line = b.line(b.host, 1, "python")
    for step in range(2):
        t0 = 1_000_000 + step * 200_000
        b.event(b.host, line, "train", t0, 100_000, step_num=step, _r=1)
        if python:
            b.event(b.host, line, "$train.py:10 main", t0 + 1_000, 90_000)
            b.event(b.host, line, "$model.py:20 dense", t0 + 2_000, 80_000)
            b.event(b.host, line, "$builtins isinstance", t0 + 3_000, 1_000)
        b.event(b.host, line, "dense/MatMul:MatMul", t0 + 10_000, 20_000, "MatMul")
        if memory:
            _alloc(b, line, t0 + 12_000, 32768, 4096 + step, bytes_allocated=1_000_000 + 32768,
                   tf_op="dense/MatMul:MatMul", shape="[64,128]", data_type=1)  # fmt: skip
            _free(b, line, t0 + 95_000, 32768, 4096 + step, bytes_allocated=1_000_000)
    return b


def _model(b: SpaceBuilder) -> ProfileModel:
    return model_from_bytes(b.bytes(), "hand.xplane.pb")


def _code(model: ProfileModel, **opts: Any) -> Any:
    every = (".*",)
    base: dict[str, Any] = dict(
        max_depth=20, select=("micros",), order_by="name", account_type_regexes=every,
        start_name_regexes=every, show_name_regexes=every,
    )  # fmt: skip
    options = Options(**{**base, **opts})
    return run_view(model, "code", options)


def _names(node: Any) -> list[str]:
    return [node.name] + [name for child in node.children for name in _names(child)]


# ------------------------------------------------------------------ memory


def test_allocation_by_tf_op_gives_peak_tensor_and_keeps_the_op_time() -> None:
    model = _model(_space())
    report = memory_profile(model)
    assert [s.step for s in report.steps] == [0, 1]
    (alloc,) = report.steps[0].allocators
    assert alloc.allocator == GPU and alloc.exact
    assert (alloc.peak_bytes, alloc.allocations, alloc.frees) == (32768, 1, 1)
    assert alloc.max_in_use_bytes == 1_000_000 + 32768
    (op,) = alloc.by_op
    assert (op.name, op.op, op.bytes) == ("dense/MatMul", "MatMul", 32768)
    assert [(t.shape, t.dtype, t.bytes) for t in op.tensors] == [([64, 128], "float32", 32768)]
    plain = _model(_space(memory=False))
    nid, plain_nid = model.index["dense/MatMul"], plain.index["dense/MatMul"]
    for step in (0, 1):
        assert model.stats(step).cpu_exec_micros[nid] == plain.stats(step).cpu_exec_micros[
            plain_nid
        ] == 20  # fmt: skip
        assert model.stats(step).run_count[nid] == 1
        assert model.stats(step).requested_bytes[nid] == 32768


def test_free_without_allocation_is_memory_from_before_the_profile() -> None:
    b = _space(memory=False, python=False)
    line = b.line(b.host, 1, "python")
    _free(b, line, 1_050_000, 8192, 77, bytes_allocated=500_000)
    model = _model(b)
    (alloc,) = memory_profile(model, step=0).steps[0].allocators
    assert (alloc.allocations, alloc.frees, alloc.baseline_bytes) == (0, 1, 8192)
    assert alloc.peak_bytes == 8192 and alloc.before_step_bytes == 8192
    node = f"{GPU} (no op)"
    assert model.ops[model.index[node]] == NO_OP_TYPE


def test_events_outside_steps_are_not_counted() -> None:
    b = _space(memory=False, python=False)
    line = b.line(b.host, 1, "python")
    _alloc(b, line, 500_000, 1024, 1, bytes_allocated=1024)  # before the first step
    _alloc(b, line, 1_050_000, 2048, 2, bytes_allocated=3072)  # inside step 0
    _free(b, line, 2_000_000, 1024, 1, bytes_allocated=2048)  # after the last step
    report = memory_profile(_model(b))
    counts = [(a.allocations, a.frees) for s in report.steps for a in s.allocators]
    assert counts == [(1, 0)]


def test_program_buffers_and_frees_on_other_threads_belong_to_the_program() -> None:
    b = SpaceBuilder()
    main, callback = b.line(b.host, 1, "python3"), b.line(b.host, 2, "py_xla_callback")
    b.event(b.host, main, "train", 1_000_000, 100_000, step_num=0, _r=1)
    b.event(b.host, main, "CommonPjRtLoadedExecutable::Execute (jit_f)", 1_010_000, 20_000)
    _alloc(b, main, 1_011_000, 4096, 9, bytes_allocated=4096)
    _alloc(b, main, 1_012_000, 1024, 10, bytes_allocated=5120, allocator="xla_gpu_host_bfc")
    _free(b, callback, 1_090_000, 4096, 9, bytes_allocated=0)
    model = _model(b)
    assert model.ops[model.index["jit_f"]] == PROGRAM_TYPE
    assert model.canonical_device[model.index["jit_f"]].endswith("device:gpu:0")
    step = memory_profile(model).steps[0]
    by_allocator = {a.allocator: a for a in step.allocators}
    gpu = by_allocator[GPU]
    assert (gpu.allocations, gpu.frees, gpu.peak_bytes) == (1, 1, 4096)
    assert gpu.timeline[-1][1] == 0  # the free on the callback thread is the program's
    assert [op.name for op in by_allocator["xla_gpu_host_bfc"].by_op] == ["jit_f"]
    nid = model.index["jit_f"]  # a memory-only record adds no time and no run
    stats = model.stats(0)
    assert (stats.cpu_exec_micros[nid], stats.exec_micros[nid], stats.run_count[nid]) == (0, 0, 0)
    assert stats.requested_bytes[nid] == 4096 + 1024


# ------------------------------------------------------------------ code


def test_tf_op_takes_the_python_frames_open_when_it_ran() -> None:
    model = _model(_space())
    trace = model.traces[model.index["dense/MatMul"]]
    assert trace == [CodeFrame("train.py", 10, "main"), CodeFrame("model.py", 20, "dense")]
    assert model.has_trace
    view = _code(model)
    assert "model.py:20:dense" in _names(view.root)


def test_no_python_thread_means_no_traces() -> None:
    model = _model(_space(python=False))
    assert not model.has_trace
    assert all(trace is None for trace in model.traces)


def test_kernel_takes_the_frames_around_its_launch() -> None:
    b = SpaceBuilder()
    line = b.line(b.host, 1, "python")
    b.event(b.host, line, "train", 1_000_000, 100_000, step_num=0, _r=1)
    b.event(b.host, line, "$app.py:3 run", 1_001_000, 50_000)
    b.event(b.host, line, "cuLaunchKernel", 1_002_000, 1_000, correlation_id=7)
    gpu = b.gpu_plane()
    stream = b.line(gpu, 14, "Stream #14(Compute)")
    b.event(gpu, stream, "gemm_kernel", 1_010_000, 30_000, correlation_id=7,
            kernel_details="regs:32 static_shared:0 dynamic_shared:0 grid:1,1,1 "
            "block:32,1,1 occ_pct:50", tf_op="net/MatMul:MatMul")  # fmt: skip
    model = _model(b)
    assert model.traces[model.index["net/MatMul"]] == [CodeFrame("app.py", 3, "run")]
    view = _code(model, select=("accelerator_micros",))
    (frame,) = view.root.children
    assert frame.name == "app.py:3:run"


def test_python_frame_parsing() -> None:
    assert python_frame("$capture_jax.py:92 batches") == CodeFrame("capture_jax.py", 92, "batches")
    assert python_frame("$x.py:1 <lambda>") == CodeFrame("x.py", 1, "<lambda>")
    for name in ("$builtins isinstance", "$<unknown> view", "MatMul:MatMul", "$a.py:x f"):
        assert python_frame(name) is None


def _stack_index() -> Any:
    module = hlo.HloProto().hlo_module
    index = module.stack_frame_index
    index.file_names.extend(["/home/u/train.py", "/venv/site-packages/flax/linear.py"])
    index.function_names.extend(["<module>", "Dense.__call__"])
    index.file_locations.add(file_name_id=1, function_name_id=1, line=126)
    index.file_locations.add(file_name_id=2, function_name_id=2, line=294)
    index.stack_frames.add(file_location_id=1, parent_frame_id=0)
    index.stack_frames.add(file_location_id=2, parent_frame_id=1)
    return module


def test_hlo_stack_frames_resolve_outermost_first_and_bad_ids_give_none() -> None:
    module = _stack_index()
    index = module.stack_frame_index
    assert _frames(index, 2) == [
        CodeFrame("/home/u/train.py", 126, "<module>"),
        CodeFrame("/venv/site-packages/flax/linear.py", 294, "Dense.__call__"),
    ]
    assert _frames(index, 0) == [] and _frames(index, 3) == []
    index.stack_frames[0].parent_frame_id = 2  # a cycle stops
    assert len(_frames(index, 2)) == 2
    index.stack_frames.add(file_location_id=9)  # a location that does not exist
    assert _frames(index, 3) == []


def test_module_stacks_by_scope_fused_instructions_and_source_file() -> None:
    module = _stack_index()
    comp = module.computations.add(name="fused", id=1)
    comp.instructions.add(name="dot.1", opcode="dot", id=1).metadata.CopyFrom(
        hlo.OpMetadata(op_name="jit(f)/dense/dot_general/", stack_frame_id=2)
    )
    comp.instructions.add(name="add.1", opcode="add", id=2).metadata.CopyFrom(
        hlo.OpMetadata(op_name="jit(f)/add", source_file="/home/u/train.py", source_line=7)
    )
    stacks = _module_stacks(module)
    assert [f.lineno for f in stacks["jit(f)/dense/dot_general"]] == [126, 294]
    assert stacks["jit(f)/add"] == [CodeFrame("/home/u/train.py", 7, "")]


def test_user_code_mode_cuts_library_frames_of_hlo_stacks() -> None:
    model = ProfileModel()
    model.add_graph([])
    nid = model.new_pseudo_node("jit(f)/dense/dot_general")
    model.traces[nid] = _frames(_stack_index().stack_frame_index, 2)
    model.has_trace = True
    full = _names(_code(model).root)
    user = _names(_code(model, user_code=UserCode()).root)
    assert "linear.py:294:Dense.__call__" in full
    assert "linear.py:294:Dense.__call__" not in user
    assert any(name.startswith("train.py:126:<module>") for name in user)


def test_jax_program_execution_takes_the_frames_around_it() -> None:
    from tests.xspace_files import stat

    b = SpaceBuilder()
    names = b.names.setdefault(id(b.host), {})
    b.host.stats.append(stat(b.host, names, "jax_version", str_value="0.11.2"))
    line = b.line(b.host, 1, "python3")
    b.event(b.host, line, "train", 1_000_000, 100_000, step_num=0, _r=1)
    b.event(b.host, line, "$loop.py:5 run", 1_001_000, 60_000)
    b.event(b.host, line, "CommonPjRtLoadedExecutable::Execute (jit_f)", 1_010_000, 20_000)
    model = _model(b)
    nid = model.index["jit_f"]
    assert model.ops[nid] == PROGRAM_TYPE
    assert model.traces[nid] == [CodeFrame("loop.py", 5, "run")]


def test_no_allocator_events_says_how_to_get_them() -> None:
    report = memory_profile(_model(_space(memory=False)))
    assert [len(s.allocators) for s in report.steps] == [0, 0]
    assert report.notes == [NO_XSPACE_MEMORY]
    assert "TF_CPU_ALLOCATOR_USE_BFC=true" in NO_XSPACE_MEMORY
    assert memory_profile(ProfileModel()).notes == [NO_MEMORY]


def test_call_site_is_the_shared_start_of_a_programs_stacks() -> None:
    main, f, g = (
        CodeFrame("m.py", 9, "<module>"),
        CodeFrame("m.py", 3, "f"),
        CodeFrame("m.py", 4, "g"),
    )
    assert call_site({"a": [main, f], "b": [main, g], "c": [main, f, g]}) == [main]
    assert call_site({"a": [main, f]}) == [main, f]
    assert call_site({"a": [f], "b": [g]}) == [] and call_site({}) == []


def test_xspace_code_stacks_wait_for_their_first_reader() -> None:
    model = _model(_space())
    assert model.traces_pending  # the call stacks are gathered, not yet given
    nid = model.index["dense/MatMul"]
    assert model.has_trace and not model.traces_pending
    assert model.traces[nid] == [
        CodeFrame("train.py", 10, "main"),
        CodeFrame("model.py", 20, "dense"),
    ]
    assert not _model(_space(python=False)).traces_pending  # nothing to give


def test_deferred_traces_run_first_in_order_before_any_read_or_change() -> None:
    from tfprof_lite.model.records import NodeSpec

    model = ProfileModel()
    model.add_graph([NodeSpec(name="a", op="A"), NodeSpec(name="b", op="B")])
    frame = CodeFrame("x.py", 1, "f")
    seen: list[object] = []

    def first() -> None:
        model.traces[0] = [frame]
        model.has_trace = True

    def second() -> None:
        seen.append(model.traces[0])  # runs after ``first``
        model.traces[1] = [frame, frame]

    model.defer_traces(first)
    model.defer_traces(second)
    model.add_graph([NodeSpec(name="c", op="C")])  # a new node: the pending ones run first
    assert not model.traces_pending and seen == [[frame]]
    assert model.traces == [[frame], [frame, frame], None] and model.has_trace
