"""The HLO cost model (tfprof_lite.programs.cost) rule by rule, on hand-built
HloProto messages with hand-computed FLOPs and bytes (XLA's HloCostAnalysis
conventions; docs/programs/cost_model.md)."""

from __future__ import annotations

import gc
import json
import weakref
from typing import Any

import pytest

from tfprof_lite.programs.cost import OpCost, instruction_cost, program_cost
from tfprof_lite.programs.cost_rules import shape_size
from tfprof_lite.programs.hlo import Program
from tfprof_lite.proto.xla_program import HloProto, ShapeProto, parse_program

PRED, S4, S8, S32, F32, BF16, TUPLE = 1, 21, 2, 4, 11, 16, 13


def shape(kind: int, *dims: int, bits: int = 0) -> Any:
    """An array shape with XLA's default (major-to-minor) layout."""
    out = ShapeProto(element_type=kind, dimensions=dims)
    out.layout.minor_to_major.extend(reversed(range(len(dims))))
    if bits:
        out.layout.element_size_in_bits = bits
    return out


def tup(*parts: Any) -> Any:
    """A tuple shape of ``parts``."""
    out = ShapeProto(element_type=TUPLE)
    for part in parts:
        out.tuple_shapes.add().CopyFrom(part)
    return out


class Module:
    """An HloProto under construction (ids assigned in order)."""

    def __init__(self) -> None:
        self.proto = HloProto()
        self.next_id = 1

    def comp(self, name: str, fused: bool = False) -> Any:
        comps = self.proto.hlo_module.computations
        return comps.add(name=name, id=len(comps) + 1, is_fusion_computation=fused)

    def add(self, comp: Any, name: str, opcode: str, out: Any, *ops: Any, **kw: Any) -> Any:
        calls = kw.pop("calls", ())
        instr = comp.instructions.add(name=name, opcode=opcode, id=self.next_id, **kw)
        instr.shape.CopyFrom(out)
        instr.operand_ids.extend(int(o.id) for o in ops)
        instr.called_computation_ids.extend(int(c.id) for c in calls)
        comp.root_id = self.next_id
        self.next_id += 1
        return instr

    def param(self, comp: Any, name: str, out: Any, number: int) -> Any:
        return self.add(comp, name, "parameter", out, parameter_number=number)

    def program(self, entry: Any) -> Program:
        self.proto.hlo_module.entry_computation_id = entry.id
        return Program(parse_program(self.proto.SerializeToString()))


def adder(m: Module, kind: int = F32) -> Any:
    """A scalar ``add`` reducer computation (1 flop an application)."""
    comp = m.comp(f"add_{m.next_id}")
    a = m.param(comp, "ra", shape(kind), 0)
    b = m.param(comp, "rb", shape(kind), 1)
    m.add(comp, "radd", "add", shape(kind), a, b)
    return comp


def one(build: Any) -> OpCost:
    """Cost of the instruction ``build(m, entry)`` returns, in a fresh module."""
    m = Module()
    entry = m.comp("main")
    instr = build(m, entry)
    program = m.program(entry)
    return instruction_cost(program, program.by_name[instr.name])


def test_elementwise_and_transcendental() -> None:
    def build(opcode: str) -> Any:
        def inner(m: Module, e: Any) -> Any:
            a = m.param(e, "a", shape(F32, 10, 20), 0)
            b = m.param(e, "b", shape(F32, 10, 20), 1)
            return m.add(e, "op", opcode, shape(F32, 10, 20), a, b)

        return inner

    # 200 output elements; bytes = 3 arrays of 800.
    assert one(build("add")) == OpCost(200.0, 0.0, 2400.0)
    assert one(build("exponential")) == OpCost(0.0, 200.0, 2400.0)
    assert one(build("power")) == OpCost(0.0, 200.0, 2400.0)
    assert one(build("compare")).flops == 200.0


def test_dot_and_batched_dot() -> None:
    def dot(m: Module, e: Any) -> Any:
        a = m.param(e, "a", shape(F32, 64, 32), 0)
        b = m.param(e, "b", shape(F32, 32, 16), 1)
        d = m.add(e, "d", "dot", shape(F32, 64, 16), a, b)
        d.dot_dimension_numbers.lhs_contracting_dimensions.append(1)
        d.dot_dimension_numbers.rhs_contracting_dimensions.append(0)
        return d

    # 2*64*16*32 flops; (64*32 + 32*16 + 64*16) * 4 bytes.
    assert one(dot) == OpCost(65536.0, 0.0, 14336.0)

    def batched(m: Module, e: Any) -> Any:
        a = m.param(e, "a", shape(BF16, 8, 64, 32), 0)
        b = m.param(e, "b", shape(BF16, 8, 32, 48), 1)
        d = m.add(e, "d", "dot", shape(F32, 8, 64, 48), a, b)
        dn = d.dot_dimension_numbers
        dn.lhs_batch_dimensions.append(0)
        dn.rhs_batch_dimensions.append(0)
        dn.lhs_contracting_dimensions.append(2)
        dn.rhs_contracting_dimensions.append(1)
        return d

    # 2*8*64*48*32; bf16 operands (2 bytes), f32 result.
    assert one(batched) == OpCost(
        1572864.0, 0.0, 8 * 64 * 32 * 2 + 8 * 32 * 48 * 2 + 8 * 64 * 48 * 4
    )


def conv(m: Module, e: Any, lhs: Any, rhs: Any, out: Any, dims: list[tuple[int, ...]]) -> Any:
    """A 2-D NHWC/HWIO convolution; ``dims`` holds (size, stride, low, high, lhs_dil)."""
    x = m.param(e, "x", lhs, 0)
    k = m.param(e, "k", rhs, 1)
    c = m.add(e, "conv", "convolution", out, x, k)
    dn = c.convolution_dimension_numbers
    dn.input_batch_dimension, dn.input_feature_dimension = 0, 3
    dn.input_spatial_dimensions.extend([1, 2])
    dn.kernel_input_feature_dimension, dn.kernel_output_feature_dimension = 2, 3
    dn.kernel_spatial_dimensions.extend([0, 1])
    dn.output_batch_dimension, dn.output_feature_dimension = 0, 3
    dn.output_spatial_dimensions.extend([1, 2])
    for size, stride, low, high, base in dims:
        c.window.dimensions.add(
            size=size, stride=stride, padding_low=low, padding_high=high,
            window_dilation=1, base_dilation=base,
        )  # fmt: skip
    return c


def test_convolution_padding_stride_groups() -> None:
    # 5x5 input, 3x3 kernel, stride 2, padding 1: output rows 0..2 read input
    # rows {-1,0,1}, {1,2,3}, {3,4,5} -> 2 + 3 + 2 = 7 valid pairs per dimension.
    # 4 input features in 2 groups, 8 outputs: 2 * (4/2) * 8 * 1 * 7 * 7.
    def build(m: Module, e: Any) -> Any:
        c = conv(m, e, shape(F32, 1, 5, 5, 4), shape(F32, 3, 3, 2, 8), shape(F32, 1, 3, 3, 8),
                 [(3, 2, 1, 1, 1)] * 2)  # fmt: skip
        c.feature_group_count = 2
        return c

    cost = one(build)
    assert cost.flops == 1568.0
    assert cost.bytes_accessed == (100 + 144 + 72) * 4


def test_convolution_base_dilation() -> None:
    # 3 inputs dilated by 2 (5 positions, 3 real), padded 2+2, 3-wide kernel:
    # 7 outputs; each kernel tap reads real input at 3 of them -> 9 per dim.
    def build(m: Module, e: Any) -> Any:
        return conv(m, e, shape(F32, 2, 3, 3, 4), shape(F32, 3, 3, 4, 5), shape(F32, 2, 7, 7, 5),
                    [(3, 1, 2, 2, 2)] * 2)  # fmt: skip

    assert one(build).flops == 2.0 * 4 * 5 * 2 * 9 * 9


def test_reduce_and_reduce_window() -> None:
    def reduce(m: Module, e: Any) -> Any:
        x = m.param(e, "x", shape(F32, 100, 50), 0)
        z = m.add(e, "z", "constant", shape(F32))
        r = m.add(e, "r", "reduce", shape(F32, 100), x, z, calls=[adder(m)], dimensions=[1])
        return r

    # (5000 - 100) applications of a 1-flop reducer; 20000 + 4 + 400 bytes.
    assert one(reduce) == OpCost(4900.0, 0.0, 20404.0)

    def pool(m: Module, e: Any) -> Any:
        x = m.param(e, "x", shape(F32, 1, 4, 4, 1), 0)
        z = m.add(e, "z", "constant", shape(F32))
        r = m.add(e, "r", "reduce-window", shape(F32, 1, 2, 2, 1), x, z, calls=[adder(m)])
        for size in (1, 2, 2, 1):
            r.window.dimensions.add(size=size, stride=size, window_dilation=1, base_dilation=1)
        return r

    # 4 outputs x (4-element window - 1).
    assert one(pool).flops == 12.0

    def cumsum(m: Module, e: Any) -> Any:
        x = m.param(e, "x", shape(F32, 8), 0)
        z = m.add(e, "z", "constant", shape(F32))
        r = m.add(e, "r", "reduce-window", shape(F32, 8), x, z, calls=[adder(m)])
        r.window.dimensions.add(size=15, stride=1, padding_low=7, padding_high=7)
        return r

    # A window spanning the whole padded dimension: 8 // 8 + (8 - 1), not 14 * 8.
    assert one(cumsum).flops == 8.0


def fusion_module(m: Module, e: Any) -> Any:
    """fusion(a f32[100], b f32[], big f32[1000]) = a * broadcast(b) + exp(a)
    + slice(big)[0:100] + constant f32[10] (broadcast sum)."""
    f = m.comp("fused", fused=True)
    a = m.param(f, "fa", shape(F32, 100), 0)
    b = m.param(f, "fb", shape(F32), 1)
    big = m.param(f, "fbig", shape(F32, 1000), 2)
    bb = m.add(f, "bb", "broadcast", shape(F32, 100), b)
    mul = m.add(f, "mul", "multiply", shape(F32, 100), a, bb)
    ex = m.add(f, "ex", "exponential", shape(F32, 100), a)
    sl = m.add(f, "sl", "slice", shape(F32, 100), big)
    sl.slice_dimensions.add(start=0, limit=100, stride=1)
    s1 = m.add(f, "s1", "add", shape(F32, 100), mul, ex)
    m.add(f, "s2", "add", shape(F32, 100), s1, sl)
    xa = m.param(e, "a", shape(F32, 100), 0)
    xb = m.param(e, "b", shape(F32), 1)
    xbig = m.param(e, "big", shape(F32, 1000), 2)
    return m.add(e, "fusion", "fusion", shape(F32, 100), xa, xb, xbig, calls=[f],
                 fusion_kind="kLoop")  # fmt: skip


def test_fusion_flops_and_bytes() -> None:
    cost = one(fusion_module)
    # multiply + two adds over 100 elements; one exp each.
    assert cost.flops == 300.0 and cost.transcendentals == 100.0
    # output 400 + a read once (shared by multiply and exp) 400 + b through
    # its broadcast 4 + big through its slice 400.
    assert cost.bytes_accessed == 1204.0


def test_fusion_in_place_update_and_large_constant() -> None:
    def build(m: Module, e: Any) -> Any:
        f = m.comp("fused_dus", fused=True)
        buf = m.param(f, "fbuf", shape(F32, 1000), 0)
        upd = m.param(f, "fupd", shape(F32, 10), 1)
        idx = m.param(f, "fidx", shape(S32), 2)
        table = m.add(f, "table", "constant", shape(F32, 10))
        both = m.add(f, "both", "add", shape(F32, 10), upd, table)
        m.add(f, "dus", "dynamic-update-slice", shape(F32, 1000), buf, both, idx)
        parts = [("buf", shape(F32, 1000)), ("upd", shape(F32, 10)), ("i", shape(S32))]
        ops = [m.param(e, name, part, i) for i, (name, part) in enumerate(parts)]
        return m.add(e, "fusion", "fusion", shape(F32, 1000), *ops, calls=[f], fusion_kind="kLoop")

    # writes the 40-byte update only; buffer aliased (0); update 40, index 4;
    # the 10-element constant 40.
    assert one(build) == OpCost(10.0, 0.0, 124.0)


def test_data_movement_rules() -> None:
    def build(opcode: str, out: Any, *ins: Any, **kw: Any) -> Any:
        def inner(m: Module, e: Any) -> Any:
            ops = [m.param(e, f"p{i}", s, i) for i, s in enumerate(ins)]
            return m.add(e, "op", opcode, out, *ops, **kw)

        return inner

    big, piece, idx = shape(F32, 1000, 4), shape(F32, 10, 4), shape(S32)
    assert one(build("slice", piece, big)).bytes_accessed == 320.0
    assert one(build("dynamic-slice", piece, big, idx, idx)).bytes_accessed == 324.0
    assert one(build("dynamic-update-slice", big, big, piece, idx, idx)).bytes_accessed == 324.0
    assert one(build("gather", piece, big, shape(S32, 10, 1))).bytes_accessed == 360.0
    assert one(build("copy", big, big)).bytes_accessed == 32000.0
    assert one(build("tuple", tup(big, piece), big, piece)).bytes_accessed == 16.0
    assert one(build("get-tuple-element", big, tup(big, piece))) == OpCost()
    assert one(build("bitcast", shape(F32, 4000), big)) == OpCost()
    # A transpose whose layout makes it a relabelling is a bitcast; another copies.
    relabel = shape(F32, 4, 1000)
    relabel.layout.ClearField("minor_to_major")
    relabel.layout.minor_to_major.extend([0, 1])
    assert one(build("transpose", relabel, big, dimensions=[1, 0])) == OpCost()
    assert (
        one(build("transpose", shape(F32, 4, 1000), big, dimensions=[1, 0])).bytes_accessed
        == 32000.0
    )
    # sort: n * ceil(log2 n) over the 4000 elements.
    assert one(build("sort", big, big)).flops == 4000.0 * 12


def test_scatter_counts_updates_and_reducer() -> None:
    def build(m: Module, e: Any) -> Any:
        t = m.param(e, "t", shape(F32, 1000, 64), 0)
        i = m.param(e, "i", shape(S32, 100, 1), 1)
        u = m.param(e, "u", shape(F32, 100, 64), 2)
        return m.add(e, "sc", "scatter", shape(F32, 1000, 64), t, i, u, calls=[adder(m)])

    # 3 x 25600 update bytes + 400 index bytes; 6400 reducer applications.
    assert one(build) == OpCost(6400.0, 0.0, 77200.0)


def test_shape_sizes() -> None:
    assert shape_size(shape(S4, 10)) == 10.0  # one byte an element, unpacked
    assert shape_size(shape(S4, 10, bits=4)) == 5.0  # packed
    assert shape_size(shape(PRED, 3)) == 3.0
    assert shape_size(tup(shape(F32, 100), shape(F32, 7))) == 16.0  # pointer table


def gemm_call(m: Module, e: Any, target: str, config: dict[str, Any]) -> Any:
    a = m.param(e, "a", shape(F32, 64, 32), 0)
    b = m.param(e, "b", shape(F32, 16, 32), 1)
    out = tup(shape(F32, 64, 16), shape(S8, 1024))
    return m.add(e, "cc", "custom-call", out, a, b, custom_call_target=target,
                 backend_config=json.dumps(config).encode())  # fmt: skip


def test_cublas_gemm_is_a_dot() -> None:
    dnums = {"lhs_contracting_dimensions": ["1"], "rhs_contracting_dimensions": ["1"]}
    config = {"gemm_backend_config": {"dot_dimension_numbers": dnums}}
    cost = one(lambda m, e: gemm_call(m, e, "__cublas$lt$matmul", config))
    # 2*64*16*32; operands + the result (the s8 workspace left out).
    assert cost == OpCost(65536.0, 0.0, (64 * 32 + 16 * 32 + 64 * 16) * 4.0)
    legacy = one(lambda m, e: gemm_call(m, e, "__cublas$gemm", config))
    assert legacy.flops == 65536.0


def test_other_custom_call_moves_bytes_only() -> None:
    cost = one(lambda m, e: gemm_call(m, e, "my_kernel", {}))
    assert cost == OpCost(0.0, 0.0, (64 * 32 + 16 * 32 + 64 * 16) * 4.0 + 1024)


def test_cudnn_convolution() -> None:
    def build(m: Module, e: Any) -> Any:
        c = conv(m, e, shape(F32, 1, 5, 5, 4), shape(F32, 3, 3, 4, 8),
                 tup(shape(F32, 1, 5, 5, 8), shape(S8, 64)), [(3, 1, 1, 1, 1)] * 2)  # fmt: skip
        c.opcode, c.custom_call_target = "custom-call", "__cudnn$convForward"
        return c

    # SAME 5x5 with 3 taps: 5*3 - 2 = 13 valid pairs a dimension.
    assert one(build) == OpCost(2.0 * 4 * 8 * 13 * 13, 0.0, (100 + 288 + 200) * 4.0)


def loop_program() -> tuple[Program, Module]:
    """A while over (s32[], f32[100]): body multiplies (100 flops), adds 1 to
    the counter (1); condition compares (1)."""
    m = Module()
    state = tup(shape(S32), shape(F32, 100))
    body = m.comp("body")
    p = m.param(body, "bp", state, 0)
    i = m.add(body, "bi", "get-tuple-element", shape(S32), p, tuple_index=0)
    x = m.add(body, "bx", "get-tuple-element", shape(F32, 100), p, tuple_index=1)
    one_ = m.add(body, "one", "constant", shape(S32))
    i2 = m.add(body, "bi2", "add", shape(S32), i, one_)
    x2 = m.add(body, "bx2", "multiply", shape(F32, 100), x, x)
    m.add(body, "bt", "tuple", state, i2, x2)
    cond = m.comp("cond")
    cp = m.param(cond, "cp", state, 0)
    ci = m.add(cond, "ci", "get-tuple-element", shape(S32), cp, tuple_index=0)
    n = m.add(cond, "n", "constant", shape(S32))
    m.add(cond, "lt", "compare", shape(PRED), ci, n)
    entry = m.comp("main")
    init = m.param(entry, "init", state, 0)
    m.add(entry, "loop", "while", state, init, calls=[cond, body])
    return m.program(entry), m


def test_while_is_one_iteration_and_lists_its_body() -> None:
    program, _ = loop_program()
    cost = program_cost(program)
    assert cost.total.flops == 102.0
    # body: add 12 + multiply 1200 + tuple 16; condition: compare 9 bytes.
    assert cost.total.bytes_accessed == 12 + 1200 + 16 + 9
    assert cost.ops["loop"] == cost.total
    assert cost.ops["bx2"] == OpCost(100.0, 0.0, 1200.0)
    assert set(cost.ops) == {"init", "loop", "bp", "bi", "bx", "one", "bi2", "bx2", "bt",
                             "cp", "ci", "n", "lt"}  # fmt: skip


def test_conditional_takes_the_costliest_branch() -> None:
    m = Module()
    cheap, costly = m.comp("cheap"), m.comp("costly")
    a = m.param(cheap, "ca", shape(F32, 10), 0)
    m.add(cheap, "neg", "negate", shape(F32, 10), a)
    b = m.param(costly, "cb", shape(F32, 10), 0)
    m.add(costly, "exp", "exponential", shape(F32, 10), b)
    m.add(costly, "sq", "multiply", shape(F32, 10), b, b)
    entry = m.comp("main")
    p = m.param(entry, "p", shape(PRED), 0)
    x = m.param(entry, "x", shape(F32, 10), 1)
    m.add(entry, "cond", "conditional", shape(F32, 10), p, x, x, calls=[cheap, costly])
    cost = program_cost(m.program(entry))
    # costly: exp 10 transcendentals, 80 bytes; multiply 10 flops, 3 x 40 bytes
    # (both operands count, though they are the same array).
    assert cost.total == OpCost(10.0, 10.0, 200.0)
    assert {"neg", "exp", "sq"} <= set(cost.ops)


def test_program_lists_fusions_not_fused_instructions() -> None:
    m = Module()
    entry = m.comp("main")
    fusion_module(m, entry)
    program = m.program(entry)
    cost = program_cost(program)
    assert set(cost.ops) == {"a", "b", "big", "fusion"}
    assert cost.total == cost.ops["fusion"] == instruction_cost(program, program.by_name["fusion"])


@pytest.mark.parametrize("opcode", ["all-reduce", "all-reduce-start"])
def test_all_reduce_one_flop_an_element(opcode: str) -> None:
    def build(m: Module, e: Any) -> Any:
        x = m.param(e, "x", shape(F32, 256), 0)
        return m.add(e, "ar", opcode, shape(F32, 256), x, calls=[adder(m)])

    assert one(build) == OpCost(256.0, 0.0, 2048.0)


def test_unknown_opcode_costs_its_bytes() -> None:
    def build(m: Module, e: Any) -> Any:
        x = m.param(e, "x", shape(F32, 8), 0)
        return m.add(e, "odd", "some-future-op", shape(F32, 8), x)

    assert one(build) == OpCost(0.0, 0.0, 64.0)


def test_malformed_instruction_costs_its_bytes() -> None:
    def build(m: Module, e: Any) -> Any:
        x = m.param(e, "x", shape(F32, 8, 4), 0)
        d = m.add(e, "d", "dot", shape(F32, 8, 8), x)  # the rhs is missing
        d.dot_dimension_numbers.lhs_contracting_dimensions.append(5)  # no such dimension
        return d

    assert one(build) == OpCost(0.0, 0.0, 256.0 + 128.0)


def test_costs_do_not_keep_programs_alive() -> None:
    program, _ = loop_program()
    assert program_cost(program).total.flops == 102.0
    ref = weakref.ref(program)
    del program
    gc.collect()
    assert ref() is None
