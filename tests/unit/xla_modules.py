"""Hand-made HLO protos for the tests of ``tfprof_lite.model.xla_ops``: the
``Module`` builder, the MLP program ``mlp_module`` and ``cb``, a command-buffer kernel."""

from __future__ import annotations

from typing import Any

from tfprof_lite.model.xla_ops import KernelRef
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
