"""Kernels to HLO instructions and layers (tfprof_lite.model.xla_ops) on hand-made
HLO protos: metadata fallbacks, nested fusions, command buffers, several programs."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tfprof_lite.errors import InvalidInputError
from tfprof_lite.model import xla_align
from tfprof_lite.model.xla_align import align, sanitize
from tfprof_lite.model.xla_kinds import CATEGORIES, category_of
from tfprof_lite.model.xla_ops import KernelRef, XlaOpIndex
from tfprof_lite.proto import hlo

DOT = "jit(step)/jvp(mlp)/dense0/dot_general"


class Module:
    """A small HloModuleProto under construction."""

    def __init__(self, name: str = "jit_step", module_id: int = 7) -> None:
        self.proto = hlo.HloProto()
        self.mod = self.proto.hlo_module
        self.mod.name = name
        self.mod.id = module_id
        self.next_id = 1

    def comp(self, name: str) -> Any:
        comp = self.mod.computations.add(name=name, id=len(self.mod.computations) + 1)
        return comp

    def instr(self, comp: Any, name: str, opcode: str, op_name: str = "", **kw: Any) -> Any:
        calls = kw.pop("calls", ())
        out = comp.instructions.add(name=name, opcode=opcode, id=self.next_id, **kw)
        out.called_computation_ids.extend(c.id for c in calls)
        if op_name:
            out.metadata.op_name = op_name
        self.next_id += 1
        return out

    def entry(self, comp: Any, schedule: list[Any] | None = None) -> None:
        self.mod.entry_computation_id = comp.id
        self.mod.entry_computation_name = comp.name
        if schedule is not None:
            seq = self.mod.schedule.sequences[comp.id]
            seq.instruction_ids.extend(i.id for i in schedule)

    def data(self) -> bytes:
        return bytes(self.proto.SerializeToString())


def mlp_module() -> Module:
    """Entry: param, a cuBLAS call, a loop fusion, a gemm fusion, a tuple."""
    m = Module()
    fused_add = m.comp("fused_add")
    m.instr(fused_add, "add.1", "add", "jit(step)/add")
    gemm = m.comp("gemm_fusion_dot.5_computation")
    m.instr(gemm, "dot.5", "dot", "jit(step)/jvp(mlp)/dense1/dot_general")
    entry = m.comp("main")
    p = m.instr(entry, "p0", "parameter")
    cc = m.instr(
        entry, "custom-call.1", "custom-call", DOT, custom_call_target="__cublas$lt$matmul"
    )
    add = m.instr(entry, "loop_add_fusion", "fusion", "jit(step)/add", calls=[fused_add])
    g = m.instr(entry, "gemm_fusion_dot.5", "fusion", "jit(step)/jvp(mlp)/dense1/dot_general",
                fusion_kind="kCustom", calls=[gemm])  # fmt: skip
    t = m.instr(entry, "tuple.1", "tuple")
    m.entry(entry, [p, cc, add, g, t])
    return m


def cb(name: str, start: int, execution: int = 1, **kw: Any) -> KernelRef:
    """A kernel of a command-buffer execution of program 7."""
    return KernelRef(name, "command_buffer_1", "jit_step", 7, execution, start, **kw)


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


def test_align_search_equals_positional_and_linear_fallback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    instrs = ["a", "lib1", "b", "c", "lib2"]
    library = [False, True, False, False, True]
    known = {"a", "b", "c", "lib1", "lib2"}
    kernels = ["a", "nvjet", "b", "b", "sm90"]  # "b" reused for "c"
    assert align(kernels, instrs, library, known) == [0, 1, 2, 3, 4]
    assert align(["a", "nvjet", "c", "sm90"], instrs, library, known) == [0, 1, 3, 4]
    assert align([], instrs, library, known) == []
    assert align(["a"], [], [], known) == [None]
    monkeypatch.setattr(xla_align, "MAX_CELLS", 1)
    assert align(["a", "nvjet", "c", "sm90"], instrs, library, known) == [0, 1, 3, 4]


def _loop_module(trips: int | None) -> Module:
    m = Module()
    body = m.comp("body")
    m.instr(body, "loop_add_fusion", "fusion", "jit(step)/while/body/layer/add")
    m.instr(body, "custom-call.3", "custom-call", "jit(step)/while/body/layer/dot_general",
            custom_call_target="__cublas$lt$matmul")  # fmt: skip
    cond = m.comp("cond")
    m.instr(cond, "loop_compare_fusion", "fusion", "jit(step)/while/cond/lt")
    entry = m.comp("main")
    m.instr(entry, "fusion.0", "fusion", "jit(step)/init")
    loop = m.instr(entry, "while.1", "while", calls=[body, cond])
    if trips is not None:
        loop.backend_config = b'{"known_trip_count":{"n":"%d"}}' % trips
    m.entry(entry)
    return m


def test_while_with_known_trip_count_runs_its_body_that_often() -> None:
    index = XlaOpIndex.from_hlo_protos([(7, _loop_module(3).data())])
    names = [op.name for op in index.programs[7].sequence()]
    assert names == ["fusion.0"] + ["loop_add_fusion", "custom-call.3"] * 3
    kernels = ["fusion_0"] + ["loop_add_fusion", "nvjet_gemm"] * 3
    got = index.resolve_all([cb(n, t) for t, n in enumerate(kernels)])
    assert [r.op.name if r else None for r in got] == names


def test_while_without_trip_count_is_condition_body_condition() -> None:
    index = XlaOpIndex.from_hlo_protos([(7, _loop_module(None).data())])
    assert [op.name for op in index.programs[7].sequence()] == [
        "fusion.0", "loop_compare_fusion", "loop_add_fusion", "custom-call.3",
        "loop_compare_fusion",
    ]  # fmt: skip
    assert index.programs[7].is_call("while.1")


def test_one_of_several_command_buffers_is_placed_without_the_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    m = Module()
    fused = m.comp("fused")
    m.instr(fused, "x", "add", "jit(step)/add")
    entry = m.comp("main")
    for i in range(6):
        m.instr(entry, f"loop_fusion.{i}", "fusion", f"jit(step)/layer{i}/add", calls=[fused])
    m.entry(entry)
    index = XlaOpIndex.from_hlo_protos([(7, m.data())])

    def no_search(*_: object) -> None:
        raise AssertionError("quadratic search used")

    monkeypatch.setattr(xla_align, "_fill", no_search)
    # command_buffer_2 runs fusions 3..5; fusion 5 reuses the kernel of fusion 3.
    refs = [KernelRef(n, "command_buffer_2", "jit_step", 7, 9, t)
            for t, n in enumerate(["loop_fusion_3", "loop_fusion_4", "loop_fusion_3"])]  # fmt: skip
    got = index.resolve_all(refs)
    assert [r.op.scope if r else None for r in got] == [
        "jit(step)/layer3/add", "jit(step)/layer4/add", "jit(step)/layer5/add",
    ]  # fmt: skip


def test_fusion_without_op_name_takes_the_work_at_its_root_not_a_bitcast() -> None:
    m = Module()
    softmax = m.comp("fused_softmax")
    p = m.instr(softmax, "p", "parameter")
    cast = m.instr(softmax, "bitcast.1", "bitcast", "jit(step)/attn/dot_general")
    cast.operand_ids.append(p.id)
    div = m.instr(softmax, "div.1", "divide", "jit(step)/attn/div")
    div.operand_ids.append(cast.id)
    root = m.instr(softmax, "convert.1", "convert")
    root.operand_ids.append(div.id)
    softmax.root_id = root.id
    entry = m.comp("main")
    m.instr(entry, "fusion.404", "fusion", calls=[softmax])
    m.entry(entry)
    op = XlaOpIndex.from_hlo_protos([(7, m.data())]).programs[7].ops["fusion.404"]
    assert (op.scope, op.op_type, op.category) == ("jit(step)/attn/div", "div", "fusion")


def test_programs_are_indexed_when_first_needed_and_replaced_by_id() -> None:
    index = XlaOpIndex.from_hlo_protos([(1, mlp_module().data()), (2, Module("jit_x", 2).data())])
    assert index._built == {}
    index.resolve_all([KernelRef("loop_add_fusion", "loop_add_fusion", "jit_step", 1, 1, 0)])
    assert set(index._built) == {1}
    assert index.add(Module("jit_y", 5).data(), 2) == 2
    assert index.program(None, "jit_x") is None
    assert index.program(None, "jit_y") is index.programs[2]
    assert index.add(Module("jit_z", 11).data()) == 11


def test_executions_on_two_devices_are_kept_apart() -> None:
    index = XlaOpIndex.from_hlo_protos([(7, mlp_module().data())])
    names = ["lib", "loop_add_fusion", "gemm_fusion_dot_5"]
    # Same correlation id on two GPUs, interleaved start times.
    refs = [cb(n, 2 * t + dev, device=dev) for dev in (0, 1) for t, n in enumerate(names)]
    got = index.resolve_all(refs)
    expected = ["custom-call.1", "loop_add_fusion", "gemm_fusion_dot.5"] * 2
    assert [r.op.name if r else None for r in got] == expected
    assert got[0] is not None and got[0].op.type_label == "dot_general (matmul)"


def _reference_align(
    kernels: list[str], instrs: list[str], library: list[bool], known: set[str]
) -> list[int | None]:
    """The same edit distance, cell by cell in plain Python."""
    m, n = len(kernels), len(instrs)
    inf = 1 << 30

    def cost(kernel: str, i: int) -> int:
        if kernel == instrs[i]:
            return 0
        if kernel not in known:
            return 0 if library[i] else xla_align.MISMATCH
        return xla_align.MISMATCH if library[i] else xla_align.REUSED

    table = [[0] * (n + 1)] + [[inf] * (n + 1) for _ in range(m)]
    moves = [[0] * (n + 1) for _ in range(m + 1)]
    for k in range(1, m + 1):
        kernel = kernels[k - 1]
        for i in range(1, n + 1):
            best, how = table[k][i - 1] + 1, 0
            if table[k - 1][i - 1] + cost(kernel, i - 1) < best:
                best, how = table[k - 1][i - 1] + cost(kernel, i - 1), 1
            if k > 1:
                extra = table[k - 1][i] + (2 if kernel not in known and library[i - 1] else 3)
                if extra < best:
                    best, how = extra, 2
            table[k][i], moves[k][i] = best, how
    i = min(range(n + 1), key=lambda j: (table[m][j], j))
    out: list[int | None] = [None] * m
    k = m
    while k > 0 and i > 0:
        if moves[k][i] == 0:
            i -= 1
            continue
        out[k - 1] = i - 1
        k, i = (k - 1, i - 1) if moves[k][i] == 1 else (k - 1, i)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_align_search_equals_a_cell_by_cell_reference(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 14)
    instrs = [rng.choice(["f1", "f2", "f3", "cc1", "cc2"]) for _ in range(n)]
    library = [name.startswith("cc") for name in instrs]
    known = set(instrs) | {"f1", "f2", "f3"}
    kernels = [rng.choice(["f1", "f2", "f3", "nvjet", "sm90"]) for _ in range(rng.randint(1, 14))]
    monkeypatch.setattr(xla_align, "_positional", lambda *_: None)
    assert align(kernels, instrs, library, known) == _reference_align(
        kernels, instrs, library, known
    )


def test_resolve_columns_gives_each_op_once_with_how_it_was_found() -> None:
    import numpy as np

    from tfprof_lite.model.xla_ops import HOW, KernelEvents

    index = XlaOpIndex.from_hlo_protos([(7, mlp_module().data())])
    refs = [cb(n, t + 10 * s, execution=s) for s in range(2) for t, n in
            enumerate(["lib", "loop_add_fusion", "gemm_fusion_dot_5"])]  # fmt: skip
    refs += [KernelRef("k", "loop_add_fusion", "jit_step", 7, None, 99), KernelRef("x", "", "no")]
    texts = ["", "command_buffer_1", "jit_step", "loop_add_fusion", "no"]
    code = {text: at for at, text in enumerate(texts)}
    events = KernelEvents(
        name=[r.name for r in refs],
        hlo_op=np.asarray([code[r.hlo_op] for r in refs]),
        hlo_module=np.asarray([code[r.hlo_module] for r in refs]),
        texts=texts,
        program_id=np.asarray([r.program_id or 0 for r in refs]),
        has_program=np.asarray([r.program_id is not None for r in refs]),
        execution=np.asarray([r.execution or 0 for r in refs]),
        has_execution=np.asarray([r.execution is not None for r in refs]),
        start_ps=np.asarray([r.start_ps for r in refs]),
        is_kernel=np.ones(len(refs), dtype=bool),
        device=np.zeros(len(refs), dtype=np.int64),
    )
    ops, at, how = index.resolve_columns(events)
    assert len({id(op) for op in ops}) == len(ops) == 3
    names = [ops[a].name if a >= 0 else None for a in at.tolist()]
    assert names == ["custom-call.1", "loop_add_fusion", "gemm_fusion_dot.5"] * 2 + [
        "loop_add_fusion", None,
    ]  # fmt: skip
    assert [HOW[h] for h in how.tolist()] == ["position"] * 6 + ["hlo_op", ""]
    expected = [(r.op.name, r.how) if r else None for r in index.resolve_all(refs)]
    assert expected == [(n, HOW[h]) if n else None for n, h in zip(names, how.tolist())]


def test_an_instruction_is_described_only_when_an_event_maps_to_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tfprof_lite.model import xla_hlo

    built: list[str] = []
    describe = xla_hlo._Module.op

    def counted(self: Any, instr: Any, *named: Any) -> Any:
        built.append(str(instr.name))
        return describe(self, instr, *named)

    monkeypatch.setattr(xla_hlo._Module, "op", counted)
    index = XlaOpIndex.from_hlo_protos([(7, mlp_module().data())])
    program = index.programs[7]
    assert program.launches().kernel_names == [
        "custom_call_1", "loop_add_fusion", "gemm_fusion_dot_5"
    ]  # fmt: skip
    assert built == []
    (found,) = index.resolve_all([KernelRef("k", "loop_add_fusion", "jit_step", 7, 1, 0)])
    assert found is not None and found.op is program.ops["loop_add_fusion"]
    assert built == ["loop_add_fusion"]
    assert [op.name for op in program.sequence()] == [
        "custom-call.1", "loop_add_fusion", "gemm_fusion_dot.5"
    ]  # fmt: skip
    assert sorted(built) == ["custom-call.1", "gemm_fusion_dot.5", "loop_add_fusion"]
