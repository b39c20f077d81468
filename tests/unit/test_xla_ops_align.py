"""Kernels to HLO instructions (tfprof_lite.model.xla_ops / xla_align) on hand-made
HLO protos: the alignment search against a cell-by-cell reference, while loops, one of
several command buffers, fusions without op names, lazy program indexing, two devices,
``resolve_columns`` and instruction descriptions."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.unit.xla_modules import Module, cb, mlp_module
from tfprof_lite.model import xla_align
from tfprof_lite.model.xla_align import align
from tfprof_lite.model.xla_ops import KernelRef, XlaOpIndex


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
