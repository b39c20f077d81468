"""Kernels to HLO instructions and layers (tfprof_lite.model.xla_ops) on hand-made
HLO protos: metadata fallbacks, nested fusions, command buffers, several programs.

While loops, the alignment search and ``resolve_columns`` are in ``test_xla_ops_align.py``."""

from __future__ import annotations

import pytest

from tests.unit.xla_modules import DOT, Module, cb, mlp_module
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.model.xla_align import sanitize
from tfprof_lite.model.xla_kinds import CATEGORIES, category_of
from tfprof_lite.model.xla_ops import KernelRef, XlaOpIndex


def test_sanitize_is_xla_kernel_naming() -> None:
    assert sanitize("gemm_fusion_dot.5") == "gemm_fusion_dot_5"
    assert sanitize("custom-call.1") == "custom_call_1"
    assert sanitize("a.b-c_d9") == "a_b_c_d9"


def test_index_by_program_id_and_module_name() -> None:
    index = XlaOpIndex.from_hlo_protos(
        [(42, mlp_module().data()), (None, Module("other", 9).data())]
    )
    assert set(index.programs) == {42, 9}
    assert index.program(42) is index.programs[42]
    assert index.program(None, "jit_step") is index.programs[42]
    assert index.program(555, "nope") is None


def test_ops_scope_type_category() -> None:
    index = XlaOpIndex.from_hlo_protos([(7, mlp_module().data())])
    ops = index.programs[7].ops
    assert set(ops) == {"custom-call.1", "loop_add_fusion", "gemm_fusion_dot.5"}
    cublas = ops["custom-call.1"]
    assert (cublas.scope, cublas.op_type, cublas.category, cublas.library) == (
        DOT, "dot_general", "matmul", True,
    )  # fmt: skip
    gemm = ops["gemm_fusion_dot.5"]
    assert (gemm.kernel_name, gemm.category, gemm.library, gemm.fusion_kind) == (
        "gemm_fusion_dot_5", "matmul", False, "kCustom",
    )  # fmt: skip
    add = ops["loop_add_fusion"]
    assert (add.op_type, add.category, add.has_metadata) == ("add", "fusion", True)
    assert [op.name for op in index.programs[7].sequence()] == [
        "custom-call.1", "loop_add_fusion", "gemm_fusion_dot.5",
    ]  # fmt: skip


def test_no_metadata_and_empty_op_name_fall_back_to_module_and_opcode() -> None:
    m = Module()
    entry = m.comp("main")
    m.instr(entry, "copy.3", "copy")
    blank = m.instr(entry, "sort.1", "sort")
    blank.metadata.op_type = ""  # metadata present, op_name empty
    m.entry(entry)
    ops = XlaOpIndex.from_hlo_protos([(7, m.data())]).programs[7].ops
    assert (ops["copy.3"].scope, ops["copy.3"].op_type, ops["copy.3"].category) == (
        "jit_step/copy.3", "copy", "copy",
    )  # fmt: skip
    assert not ops["copy.3"].has_metadata
    assert (ops["sort.1"].scope, ops["sort.1"].category) == ("jit_step/sort.1", "other")


def test_tf_op_type_wins_over_the_op_name_leaf() -> None:
    m = Module()
    entry = m.comp("main")
    m.instr(entry, "dot.1", "dot", "model/dense/MatMul").metadata.op_type = "MatMul"
    m.entry(entry)
    op = XlaOpIndex.from_hlo_protos([(7, m.data())]).programs[7].ops["dot.1"]
    assert (op.op_type, op.scope, op.category) == ("MatMul", "model/dense/MatMul", "matmul")


def test_nested_fusion_without_metadata_takes_the_inner_dot() -> None:
    m = Module()
    inner = m.comp("inner")
    m.instr(inner, "negate.1", "negate", "jit(step)/neg")
    m.instr(inner, "dot.9", "dot", "jit(step)/attn/dot_general")
    outer = m.comp("outer")
    m.instr(outer, "fusion.inner", "fusion", calls=[inner])
    entry = m.comp("main")
    m.instr(entry, "fusion.7", "fusion", calls=[outer])
    m.entry(entry)
    op = XlaOpIndex.from_hlo_protos([(7, m.data())]).programs[7].ops["fusion.7"]
    assert (op.scope, op.op_type, op.category, op.has_metadata) == (
        "jit(step)/attn/dot_general", "dot_general", "matmul", True,
    )  # fmt: skip


def test_source_from_fields_and_from_stack_frames() -> None:
    m = Module()
    entry = m.comp("main")
    a = m.instr(entry, "a", "sort", "x/sort")
    a.metadata.source_file, a.metadata.source_line = "train.py", 12
    b = m.instr(entry, "b", "sort", "x/sort")
    b.metadata.stack_frame_id = 1
    index = m.mod.stack_frame_index
    index.file_names.append("model.py")
    index.function_names.append("f")
    index.file_locations.add(file_name_id=1, function_name_id=1, line=33)
    index.stack_frames.add(file_location_id=1, parent_frame_id=0)
    m.instr(entry, "c", "sort", "x/sort").metadata.stack_frame_id = 5  # out of range
    m.entry(entry)
    ops = XlaOpIndex.from_hlo_protos([(7, m.data())]).programs[7].ops
    assert [ops[n].source for n in "abc"] == ["train.py:12", "model.py:33", ""]


def test_categories() -> None:
    assert category_of("custom-call", "__cublas$gemm", frozenset()) == "matmul"
    assert category_of("custom-call", "__cudnn$convForward", frozenset()) == "convolution"
    assert category_of("custom-call", "my_target", frozenset()) == "custom-call"
    assert category_of("fusion", "", frozenset({"convolution"})) == "convolution"
    assert category_of("fusion", "", frozenset({"add", "dot"})) == "matmul"
    assert category_of("fusion", "", frozenset({"add"})) == "fusion"
    assert category_of("all-reduce-start", "", frozenset()) == "collective"
    assert category_of("copy-start", "", frozenset()) == "copy"
    assert category_of("sort", "", frozenset()) == "other"
    assert set(CATEGORIES) == {
        "matmul", "convolution", "fusion", "custom-call", "collective", "copy", "other",
    }  # fmt: skip


def test_command_buffer_kernels_by_position_library_and_memset() -> None:
    index = XlaOpIndex.from_hlo_protos([(7, mlp_module().data())])
    events = [
        cb("gemm_fusion_dot_5", 40),
        cb("Memset", 10, is_kernel=False),
        cb("nvjet_sm90_tst_128x160", 20),
        cb("loop_add_fusion", 30),
    ]
    got = index.resolve_all(events)
    assert [r.op.name if r else None for r in got] == [
        "gemm_fusion_dot.5", "custom-call.1", "custom-call.1", "loop_add_fusion",
    ]  # fmt: skip
    assert {r.how for r in got if r} == {"position"}


def test_reused_fusion_kernel_maps_to_its_own_instruction() -> None:
    m = Module()
    body = m.comp("fused")
    m.instr(body, "add.0", "add", "jit(step)/add")
    entry = m.comp("main")
    for i, layer in enumerate(("block0", "block1", "block2")):
        m.instr(entry, f"loop_add_fusion.{i}", "fusion", f"jit(step)/{layer}/add", calls=[body])
    m.entry(entry)
    index = XlaOpIndex.from_hlo_protos([(7, m.data())])
    # XLA compiled one kernel for the three identical fusions, named after the first.
    got = index.resolve_all([cb("loop_add_fusion_0", t) for t in (1, 2, 3)])
    assert [r.op.scope for r in got if r] == [f"jit(step)/block{i}/add" for i in range(3)]
    # Without an execution (no position) the name is all there is.
    alone = index.resolve(KernelRef("loop_add_fusion_0", "", "jit_step", 7))
    assert alone is not None and (alone.op.name, alone.how) == ("loop_add_fusion.0", "name")


def test_missing_kernel_and_two_kernels_of_one_library_call() -> None:
    index = XlaOpIndex.from_hlo_protos([(7, mlp_module().data())])
    # custom-call.1 launched two kernels; loop_add_fusion launched none.
    events = [cb("splitk_gemm", 1), cb("splitk_reduce", 2), cb("gemm_fusion_dot_5", 3)]
    got = index.resolve_all(events)
    assert [r.op.name if r else None for r in got] == [
        "custom-call.1", "custom-call.1", "gemm_fusion_dot.5",
    ]  # fmt: skip


def test_execution_covering_a_slice_of_the_schedule() -> None:
    index = XlaOpIndex.from_hlo_protos([(7, mlp_module().data())])
    got = index.resolve_all([cb("loop_add_fusion", 1), cb("gemm_fusion_dot_5", 2)])
    assert [r.op.name if r else None for r in got] == ["loop_add_fusion", "gemm_fusion_dot.5"]


def test_direct_hlo_op_and_unknown_events() -> None:
    index = XlaOpIndex.from_hlo_protos([(7, mlp_module().data())])
    events = [
        KernelRef("gemm_fusion_dot_5", "gemm_fusion_dot.5", "jit_step", 7, 3, 0),
        KernelRef("MemcpyD2D", "loop_add_fusion", "jit_step", 7, 4, 0, is_kernel=False),
        KernelRef("MemcpyH2D"),  # no XLA stats at all
        KernelRef("some_kernel", "x", "jit_unknown", 99, 5, 0),  # unknown program
        KernelRef("unknown_kernel", "", "jit_step", 7),  # known program, no match
    ]
    got = index.resolve_all(events)
    assert got[0] is not None and (got[0].op.name, got[0].how) == ("gemm_fusion_dot.5", "hlo_op")
    assert got[1] is not None and got[1].op.name == "loop_add_fusion"
    assert got[2:] == [None, None, None]
    assert index.resolve(events[0]) == got[0]
    assert index.resolve(events[3]) is None


def test_call_hlo_op_aligns_with_the_called_computation_only() -> None:
    m = Module()
    cmd = m.comp("command_buffer")
    m.instr(cmd, "fusion.a", "fusion", "jit(step)/a")
    m.instr(cmd, "custom-call.b", "custom-call", "jit(step)/b/dot_general")
    entry = m.comp("main")
    m.instr(entry, "custom-call.0", "custom-call", "jit(step)/before/dot_general")
    m.instr(entry, "call.cb", "call", calls=[cmd])
    m.entry(entry)
    index = XlaOpIndex.from_hlo_protos([(7, m.data())])
    program = index.programs[7]
    assert program.is_call("call.cb")
    assert [op.name for op in program.sequence("call.cb")] == ["fusion.a", "custom-call.b"]
    assert [op.name for op in program.sequence()] == ["custom-call.0", "fusion.a", "custom-call.b"]
    refs = [KernelRef(n, "call.cb", "jit_step", 7, 1, t) for t, n in enumerate(["fusion_a", "lib"])]
    got = index.resolve_all(refs)
    assert [r.op.name if r else None for r in got] == ["fusion.a", "custom-call.b"]


def test_several_programs_same_kernel_name() -> None:
    one, two = mlp_module(), mlp_module()
    two.mod.computations[0].instructions[0].metadata.op_name = "jit(other)/add"
    for comp in two.mod.computations:
        for instr in comp.instructions:
            if instr.name == "loop_add_fusion":
                instr.metadata.op_name = "jit(other)/add"
    index = XlaOpIndex.from_hlo_protos([(1, one.data()), (2, two.data())])
    refs = [
        KernelRef("loop_add_fusion", "loop_add_fusion", "jit_step", pid, pid, 0) for pid in (1, 2)
    ]
    got = index.resolve_all(refs)
    assert [r.op.scope if r else None for r in got] == ["jit(step)/add", "jit(other)/add"]
    # Two programs share the module name: without a program_id it is ambiguous.
    assert index.program(None, "jit_step") is None


def test_no_schedule_uses_proto_order() -> None:
    m = mlp_module()
    m.mod.ClearField("schedule")
    names = [op.name for op in XlaOpIndex.from_hlo_protos([(7, m.data())]).programs[7].sequence()]
    assert names == ["custom-call.1", "loop_add_fusion", "gemm_fusion_dot.5"]


def test_alignments_are_cached_per_kernel_sequence() -> None:
    index = XlaOpIndex.from_hlo_protos([(7, mlp_module().data())])
    steps = [cb(n, t + 10 * s, execution=s) for s in range(5) for t, n in
             enumerate(["lib", "loop_add_fusion", "gemm_fusion_dot_5"])]  # fmt: skip
    got = index.resolve_all(steps)
    assert all(r is not None for r in got)
    assert len(index._aligned) == 1


def test_bad_hlo_bytes_are_one_clear_error() -> None:
    with pytest.raises(InvalidInputError, match="program 3: not a serialized XLA HloProto"):
        XlaOpIndex().add(b"\xff\xff\xff", 3)
