"""One XLA program's kernel-launching instructions, read from its ``HloModuleProto``.

Contract: :func:`build_program` turns a parsed module (:mod:`tfprof_lite.proto.hlo`)
into a :class:`ProgramOps`: an :class:`~tfprof_lite.model.xla_kinds.HloOp` per
instruction of the entry computation and of the computations it runs through
``call``/``while``/``conditional``/``async-start`` (fused and ``to_apply``
computations launch no kernels of their own), by instruction name and by kernel
name, and :meth:`ProgramOps.sequence`, the launching instructions in schedule
order (the module's ``schedule``, else the proto's order), control flow expanded
in place (:func:`called_in_order`: a ``while`` with a ``known_trip_count`` as
that many copies of its body). See :mod:`tfprof_lite.model.xla_ops` for how scopes, op types and
categories are chosen.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from tfprof_lite.model.xla_align import sanitize
from tfprof_lite.model.xla_kinds import HloOp, category_of

__all__ = [
    "CALLS",
    "MAX_TRIPS",
    "NO_KERNEL",
    "ProgramOps",
    "build_program",
    "called_in_order",
    "trip_count",
]

#: Most iterations of a ``while`` loop laid out in a launch sequence.
MAX_TRIPS = 1024

#: Opcodes whose called computations run as part of the caller's kernel sequence.
CALLS = frozenset({"call", "while", "conditional", "async-start"})
#: Opcodes that launch no kernel of their own.
NO_KERNEL = frozenset(
    {
        "parameter",
        "constant",
        "get-tuple-element",
        "tuple",
        "bitcast",
        "after-all",
        "add-dependency",
        "opt-barrier",
        "partition-id",
        "replica-id",
        "domain",
        "async-update",
        "async-done",
        "copy-done",
        "send-done",
        "recv-done",
        "all-reduce-done",
        "all-gather-done",
        "collective-permute-done",
        "get-dimension-size",
    }
)
_PRINCIPAL = ("dot", "convolution", "custom-call")
_MOVES_DATA = frozenset(
    {"parameter", "constant", "bitcast", "get-tuple-element", "tuple", "copy", "reshape",
     "transpose", "broadcast", "convert", "slice", "concatenate", "pad"}
)  # fmt: skip


@dataclass
class ProgramOps:
    """The kernel-launching instructions of one program."""

    program_id: int
    module: str
    ops: dict[str, HloOp]
    by_kernel_name: dict[str, HloOp]
    calls: dict[str, tuple[int, ...]]
    _sequences: dict[str, tuple[HloOp, ...]] = field(default_factory=dict, repr=False)
    _flat: Any = field(default=None, repr=False)

    def is_call(self, name: str) -> bool:
        """Whether ``name`` is a ``call``/``while``/``conditional`` instruction."""
        return name in self.calls

    def sequence(self, hlo_op: str = "") -> tuple[HloOp, ...]:
        """Launching instructions in schedule order: of the computations ``hlo_op``
        calls when it is a call-like instruction, else of the whole program."""
        key = hlo_op if hlo_op in self.calls else ""
        if key not in self._sequences:
            self._sequences[key] = tuple(self._flat(self.calls.get(key)))
        return self._sequences[key]


class _Module:
    """Lookups over one ``HloModuleProto``."""

    def __init__(self, module: Any, program_id: int) -> None:
        self.module = module
        self.program_id = program_id
        self.name = str(module.name)
        self.comps = {c.id: c for c in module.computations}
        self.by_id = {c.id: {i.id: i for i in c.instructions} for c in module.computations}
        self.schedule = {k: list(v.instruction_ids) for k, v in module.schedule.sequences.items()}
        self._fused: dict[int, frozenset[str]] = {}

    def entry_id(self) -> int:
        if self.module.entry_computation_id in self.comps:
            return int(self.module.entry_computation_id)
        named = [
            c.id for c in self.module.computations if c.name == self.module.entry_computation_name
        ]
        return int(named[0] if named else self.module.computations[-1].id)

    def ordered(self, comp_id: int) -> list[Any]:
        instrs = self.by_id.get(comp_id, {})
        ids = self.schedule.get(comp_id)
        if ids and all(i in instrs for i in ids):
            return [instrs[i] for i in ids]
        return list(self.comps[comp_id].instructions) if comp_id in self.comps else []

    def fused(self, comp_ids: Any) -> frozenset[str]:
        """Opcodes and custom-call targets inside fused computations, recursively."""
        found: set[str] = set()
        for cid in comp_ids:
            if cid not in self._fused:
                self._fused[cid] = frozenset()  # guards against cycles
                inner: set[str] = set()
                for instr in self.comps[cid].instructions if cid in self.comps else ():
                    inner.add(instr.opcode)
                    if instr.custom_call_target:
                        inner.add(instr.custom_call_target)
                    if instr.opcode == "fusion":
                        inner |= self.fused(instr.called_computation_ids)
                self._fused[cid] = frozenset(inner)
            found |= self._fused[cid]
        return frozenset(found)

    def metadata(self, instr: Any, depth: int = 0) -> Any:
        """The instruction's metadata, or for a fusion without any the principal
        fused instruction's (see the module docstring); ``None`` if none."""
        if instr.metadata.op_name:
            return instr.metadata
        if instr.opcode != "fusion" or depth > 8:
            return None
        for cid in instr.called_computation_ids:
            comp = self.comps.get(cid)
            if comp is None:
                continue
            for pick in self._candidates(comp):
                found = self.metadata(pick, depth + 1)
                if found is not None:
                    return found
        return None

    def _candidates(self, comp: Any) -> list[Any]:
        """Fused instructions to take metadata from, best first: a dot, convolution
        or custom call; then from the root back through operands, skipping what
        only moves data; then nested fusions; then any."""
        principal = [i for i in comp.instructions if i.opcode in _PRINCIPAL]
        by_id = {i.id: i for i in comp.instructions}
        walk: list[Any] = []
        queue = [comp.root_id] if comp.root_id in by_id else []
        seen: set[int] = set()
        while queue:
            iid = queue.pop(0)
            if iid in seen or iid not in by_id:
                continue
            seen.add(iid)
            instr = by_id[iid]
            if instr.opcode not in _MOVES_DATA:
                walk.append(instr)
            queue.extend(instr.operand_ids)
        nested = [i for i in comp.instructions if i.opcode == "fusion"]
        rest = [i for i in comp.instructions if i.metadata.op_name]
        return principal + walk + nested + rest

    def source(self, meta: Any) -> str:
        if meta.source_file:
            return (
                f"{meta.source_file}:{meta.source_line}" if meta.source_line else meta.source_file
            )
        index = self.module.stack_frame_index
        try:
            frame = index.stack_frames[meta.stack_frame_id - 1]
            loc = index.file_locations[frame.file_location_id - 1]
            return f"{index.file_names[loc.file_name_id - 1]}:{loc.line}"
        except IndexError:
            return ""

    def op(self, instr: Any) -> HloOp:
        fused = (
            self.fused(instr.called_computation_ids) if instr.opcode == "fusion" else frozenset()
        )
        meta = self.metadata(instr)
        config = bytes(instr.backend_config)
        library = instr.opcode == "custom-call" or (
            instr.opcode == "fusion" and (b"__cudnn$" in config or b"__cublas" in config)
        )
        bare = HloOp(
            program_id=self.program_id,
            module=self.name,
            name=str(instr.name),
            kernel_name=sanitize(instr.name),
            opcode=str(instr.opcode),
            category=category_of(instr.opcode, instr.custom_call_target, fused),
            op_type=str(instr.opcode),
            scope=f"{self.name}/{instr.name}",
            custom_call_target=str(instr.custom_call_target),
            fusion_kind=str(instr.fusion_kind),
            library=library,
            has_metadata=False,
        )
        if meta is None:
            return bare
        op_name = str(meta.op_name).strip("/")
        op_type = str(meta.op_type) or op_name.rpartition("/")[2] or bare.opcode
        return replace(bare, op_type=op_type, scope=op_name, source=self.source(meta),
                       has_metadata=True)  # fmt: skip


def trip_count(instr: Any) -> int | None:
    """A ``while``'s ``known_trip_count`` from its backend config, else ``None``."""
    try:
        config = json.loads(bytes(instr.backend_config) or b"{}")
        return int(config["known_trip_count"]["n"])
    except (ValueError, KeyError, TypeError):
        return None


def called_in_order(instr: Any) -> tuple[int, ...]:
    """The computations a call-like instruction runs, in the order their kernels
    launch: a ``while`` (body, condition) with a known trip count runs its body
    that many times (at most :data:`MAX_TRIPS`), else condition, body, condition."""
    ids = tuple(instr.called_computation_ids)
    if instr.opcode != "while" or len(ids) != 2:
        return ids
    body, condition = ids
    trips = trip_count(instr)
    if trips is None or trips < 0:
        return (condition, body, condition)
    return (body,) * min(trips, MAX_TRIPS)


def _walk(mod: _Module, comp_ids: Any, ops: dict[str, HloOp], calls: dict[str, tuple[int, ...]],
          seen: set[int]) -> list[HloOp]:  # fmt: skip
    """Launching instructions of ``comp_ids`` in schedule order, indexing as it goes."""
    out: list[HloOp] = []
    for cid in comp_ids:
        if cid in seen or cid not in mod.comps:
            continue
        seen.add(cid)
        for instr in mod.ordered(cid):
            if instr.opcode in CALLS:
                calls[instr.name] = runs = called_in_order(instr)
                out.extend(_walk(mod, runs, ops, calls, seen))
            elif instr.opcode not in NO_KERNEL:
                op = ops.get(instr.name) or mod.op(instr)
                ops[instr.name] = op
                out.append(op)
        seen.discard(cid)
    return out


def build_program(module: Any, program_id: int) -> ProgramOps:
    """Index one parsed ``HloModuleProto`` as program ``program_id``."""
    mod = _Module(module, int(program_id))
    ops: dict[str, HloOp] = {}
    calls: dict[str, tuple[int, ...]] = {}
    entry = mod.entry_id() if mod.comps else 0
    full = tuple(_walk(mod, (entry,), ops, calls, set()))
    by_kernel: dict[str, HloOp] = {}
    for op in ops.values():
        by_kernel.setdefault(op.kernel_name, op)
    program = ProgramOps(mod.program_id, mod.name, ops, by_kernel, calls)
    program._sequences[""] = full

    def flat(comp_ids: Any) -> list[HloOp]:
        return _walk(mod, comp_ids, dict(ops), dict(calls), set()) if comp_ids else list(full)

    program._flat = flat
    return program
