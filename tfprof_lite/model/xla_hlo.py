"""One XLA program's kernel-launching instructions, read from its ``HloModuleProto``.

Contract: :func:`build_program` turns a parsed module (:mod:`tfprof_lite.proto.hlo`)
into a :class:`ProgramOps`: an :class:`~tfprof_lite.model.xla_kinds.HloOp` per
instruction of the entry computation and of the computations it runs through
``call``/``while``/``conditional``/``async-start`` (fused and ``to_apply``
computations launch no kernels of their own), by instruction name and by kernel
name, and :meth:`ProgramOps.sequence`, the launching instructions in schedule
order (the module's ``schedule``, else the proto's order), control flow expanded
in place (:func:`called_in_order`: a ``while`` with a ``known_trip_count`` as
that many copies of its body). An instruction's :class:`HloOp` is built when
first asked for; :meth:`ProgramOps.launches` gives the kernel names and library
flags a launch sequence is aligned on without building any. See
:mod:`tfprof_lite.model.xla_ops` for how scopes, op types and categories are chosen.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
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
#: Names inside a fusion that decide its category (see :func:`category_of`).
_DECIDING = frozenset({"dot", "convolution"})
_DECIDING_PREFIXES = ("__cudnn$conv", "__cublas")
_MOVES_DATA = frozenset(
    {"parameter", "constant", "bitcast", "get-tuple-element", "tuple", "copy", "reshape",
     "transpose", "broadcast", "convert", "slice", "concatenate", "pad"}
)  # fmt: skip


class ProgramOps:
    """The kernel-launching instructions of one program.

    ``ops`` and ``by_kernel_name`` build an instruction's :class:`HloOp` when it
    is first asked for (one object per instruction: a sequence and a lookup give
    the same one); :meth:`launches` gives what aligning kernels needs without
    building any.
    """

    def __init__(
        self,
        program_id: int,
        module: str,
        ops: Mapping[str, HloOp],
        by_kernel_name: Mapping[str, HloOp],
        calls: dict[str, tuple[int, ...]],
    ) -> None:
        self.program_id = program_id
        self.module = module
        self.ops = ops
        self.by_kernel_name = by_kernel_name
        self.calls = calls
        self._sequences: dict[str, tuple[HloOp, ...]] = {}
        self._launches: dict[str, _Launches] = {}
        self._flat: Any = None

    def named(self, name: str) -> HloOp | None:
        """The op of instruction ``name`` in any computation the program runs
        on its own (not a fused one), call-like instructions included: what a
        host event of XLA's CPU runtime, which names its own instruction, ran."""
        if name in self.ops and not self.is_call(name):
            return self.ops[name]
        ops = self.ops
        return ops.named(name) if isinstance(ops, _LazyOps) else None

    def is_call(self, name: str) -> bool:
        """Whether ``name`` is a ``call``/``while``/``conditional`` instruction."""
        return name in self.calls

    def sequence(self, hlo_op: str = "") -> tuple[HloOp, ...]:
        """Launching instructions in schedule order: of the computations ``hlo_op``
        calls when it is a call-like instruction, else of the whole program."""
        key = hlo_op if hlo_op in self.calls else ""
        if key not in self._sequences:
            launches = self.launches(key)
            self._sequences[key] = tuple(launches.op(i) for i in range(len(launches.instrs)))
        return self._sequences[key]

    def launches(self, hlo_op: str = "") -> _Launches:
        """:meth:`sequence` as kernel names and library flags, its ops built on demand."""
        key = hlo_op if hlo_op in self.calls else ""
        found = self._launches.get(key)
        if found is None:
            found = self._launches[key] = self._flat(self.calls.get(key))
        return found


class _Launches:
    """A launch sequence: per instruction its kernel name and library flag; its
    :class:`HloOp` (:meth:`op`) built when first asked for."""

    def __init__(self, instrs: list[Any], ops: _LazyOps, info: dict[str, tuple[str, bool]]) -> None:
        self.instrs = instrs
        self.kernel_names = [info[i.name][0] for i in instrs]
        self.library = [info[i.name][1] for i in instrs]
        self._ops = ops

    def op(self, at: int) -> HloOp:
        """The :class:`HloOp` of the ``at``-th instruction."""
        return self._ops.of(self.instrs[at])


class _LazyOps(Mapping[str, HloOp]):
    """Instruction name -> :class:`HloOp`, each built when first asked for."""

    def __init__(
        self, mod: _Module, instrs: dict[str, Any], info: dict[str, tuple[str, bool]]
    ) -> None:
        self._mod = mod
        self._instrs = instrs
        self._info = info  # kernel name and library flag of each of ``instrs``
        self._made: dict[str, HloOp] = {}
        self._others: dict[str, HloOp] = {}
        self._all: dict[str, Any] | None = None

    def __getitem__(self, name: str) -> HloOp:
        op = self._made.get(name)
        if op is None:
            op = self._made[name] = self._mod.op(self._instrs[name], self._info.get(name))
        return op

    def of(self, instr: Any) -> HloOp:
        """The op of ``instr`` (an instruction outside the program's index too)."""
        name = str(instr.name)
        if name in self._instrs:
            return self[name]
        op = self._others.get(name)
        if op is None:
            op = self._others[name] = self._mod.op(instr)
        return op

    def named(self, name: str) -> HloOp | None:
        """The op of instruction ``name`` of any computation but fused ones."""
        if self._all is None:
            fused = {
                int(c)
                for comp in self._mod.comps.values()
                for i in comp.instructions
                if i.opcode == "fusion"
                for c in i.called_computation_ids
            }
            self._all = {
                str(i.name): i
                for cid, comp in self._mod.comps.items()
                if int(cid) not in fused
                for i in comp.instructions
            }
        instr = self._all.get(name)
        return None if instr is None else self.of(instr)

    def __contains__(self, name: object) -> bool:
        return name in self._instrs

    def __iter__(self) -> Iterator[str]:
        return iter(self._instrs)

    def __len__(self) -> int:
        return len(self._instrs)


class _ByKernel(Mapping[str, HloOp]):
    """Kernel name -> the first instruction's :class:`HloOp` of that kernel name."""

    def __init__(self, ops: _LazyOps, names: dict[str, str]) -> None:
        self._ops = ops
        self._names = names

    def __getitem__(self, kernel: str) -> HloOp:
        return self._ops[self._names[kernel]]

    def __contains__(self, kernel: object) -> bool:
        return kernel in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class _Module:
    """Lookups over one ``HloModuleProto`` (each computation indexed when first needed)."""

    def __init__(self, module: Any, program_id: int) -> None:
        self.module = module
        self.program_id = program_id
        self.name = str(module.name)
        self.comps = {c.id: c for c in module.computations}
        self._by_id: dict[int, dict[int, Any]] = {}
        self._schedule = module.schedule.sequences
        self._fused: dict[int, frozenset[str]] = {}
        self._sources: dict[int, str] = {}
        self._index: Any = None

    def entry_id(self) -> int:
        if self.module.entry_computation_id in self.comps:
            return int(self.module.entry_computation_id)
        named = [
            c.id for c in self.module.computations if c.name == self.module.entry_computation_name
        ]
        return int(named[0] if named else self.module.computations[-1].id)

    def ordered(self, comp_id: int) -> list[Any]:
        comp = self.comps.get(comp_id)
        if comp is None:
            return []
        ids = list(self._schedule[comp_id].instruction_ids) if comp_id in self._schedule else []
        if ids:
            instrs = self._by_id.get(comp_id)
            if instrs is None:
                instrs = self._by_id[comp_id] = {i.id: i for i in comp.instructions}
            if all(i in instrs for i in ids):
                return [instrs[i] for i in ids]
        return list(comp.instructions)

    def fused(self, comp_ids: Any) -> frozenset[str]:
        """The opcodes and custom-call targets inside fused computations
        (recursively) that decide a fusion's category: ``dot``, ``convolution``
        and cuBLAS / cuDNN convolution names (:func:`category_of` reads no others)."""
        found: frozenset[str] = frozenset()
        for cid in comp_ids:
            inner = self._fused.get(cid)
            if inner is None:
                self._fused[cid] = frozenset()  # guards against cycles
                inner = self._fused[cid] = self._fused_in(cid)
            found = found | inner if found else inner
        return found

    def _fused_in(self, cid: int) -> frozenset[str]:
        comp = self.comps.get(cid)
        if comp is None:
            return frozenset()
        inner: set[str] = set()
        for instr in comp.instructions:
            opcode = instr.opcode
            if opcode == "fusion":
                inner |= self.fused(instr.called_computation_ids)
            elif opcode in _DECIDING or opcode.startswith(_DECIDING_PREFIXES):
                inner.add(opcode)
            target = instr.custom_call_target
            if target and (target in _DECIDING or target.startswith(_DECIDING_PREFIXES)):
                inner.add(target)
        return frozenset(inner)

    def metadata(self, instr: Any, depth: int = 0) -> Any:
        """The instruction's metadata, or for a fusion without any the principal
        fused instruction's (see the module docstring); ``None`` if none."""
        meta = instr.metadata
        if meta.op_name:
            return meta
        if instr.opcode != "fusion" or depth > 8:
            return None
        for cid in instr.called_computation_ids:
            comp = self.comps.get(cid)
            if comp is None:
                continue
            for pick in _candidates(comp):
                found = self.metadata(pick, depth + 1)
                if found is not None:
                    return found
        return None

    def source(self, meta: Any) -> str:
        if meta.source_file:
            return (
                f"{meta.source_file}:{meta.source_line}" if meta.source_line else meta.source_file
            )
        frame_id = int(meta.stack_frame_id)
        found = self._sources.get(frame_id)
        if found is None:
            found = self._sources[frame_id] = self._frame_source(frame_id)
        return found

    def _frame_source(self, frame_id: int) -> str:
        if self._index is None:
            self._index = self.module.stack_frame_index
        index = self._index
        try:
            frame = index.stack_frames[frame_id - 1]
            loc = index.file_locations[frame.file_location_id - 1]
            return f"{index.file_names[loc.file_name_id - 1]}:{loc.line}"
        except IndexError:
            return ""

    def op(self, instr: Any, named: tuple[str, bool] | None = None) -> HloOp:
        """The op of ``instr``; ``named``: its kernel name and library flag, when
        the walk that indexed it found them already."""
        opcode = str(instr.opcode)
        fused = self.fused(instr.called_computation_ids) if opcode == "fusion" else frozenset()
        meta = self.metadata(instr)
        name = str(instr.name)
        kernel, library = (sanitize(name), is_library(instr)) if named is None else named
        target = str(instr.custom_call_target)
        if meta is None:
            op_type, scope, source = opcode, f"{self.name}/{name}", ""
        else:
            scope = str(meta.op_name).strip("/")
            op_type = str(meta.op_type) or scope.rpartition("/")[2] or opcode
            source = self.source(meta)
        return HloOp(
            program_id=self.program_id,
            module=self.name,
            name=name,
            kernel_name=kernel,
            opcode=opcode,
            category=category_of(opcode, target, fused),
            op_type=op_type,
            scope=scope,
            source=source,
            custom_call_target=target,
            fusion_kind=str(instr.fusion_kind),
            library=library,
            has_metadata=meta is not None,
        )


def _candidates(comp: Any) -> Iterator[Any]:
    """Fused instructions to take metadata from, best first: a dot, convolution
    or custom call; then from the root back through operands, skipping what
    only moves data; then nested fusions; then any."""
    instrs = list(comp.instructions)
    opcodes = [i.opcode for i in instrs]
    yield from (i for i, opcode in zip(instrs, opcodes) if opcode in _PRINCIPAL)
    by_id = {i.id: at for at, i in enumerate(instrs)}
    queue = [comp.root_id] if comp.root_id in by_id else []
    seen: set[int] = set()
    while queue:
        iid = queue.pop(0)
        if iid in seen or iid not in by_id:
            continue
        seen.add(iid)
        at = by_id[iid]
        if opcodes[at] not in _MOVES_DATA:
            yield instrs[at]
        queue.extend(instrs[at].operand_ids)
    yield from (i for i, opcode in zip(instrs, opcodes) if opcode == "fusion")
    yield from (i for i in instrs if i.metadata.op_name)


def is_library(instr: Any) -> bool:
    """Whether an instruction's kernels are named by a library (cuBLAS, cuDNN)."""
    opcode = instr.opcode
    if opcode == "custom-call":
        return True
    if opcode != "fusion":
        return False
    config = bytes(instr.backend_config)
    return b"__cudnn$" in config or b"__cublas" in config


def trip_count(instr: Any) -> int | None:
    """A ``while``'s ``known_trip_count`` from its backend config, else ``None``."""
    import json  # only for programs with loops

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


def _walk(mod: _Module, comp_ids: Any, instrs: dict[str, Any], info: dict[str, tuple[str, bool]],
          calls: dict[str, tuple[int, ...]], seen: set[int]) -> list[Any]:  # fmt: skip
    """Launching instructions of ``comp_ids`` in schedule order (the first of a
    name stands for it), indexing as it goes."""
    out: list[Any] = []
    for cid in comp_ids:
        if cid in seen or cid not in mod.comps:
            continue
        seen.add(cid)
        for instr in mod.ordered(cid):
            opcode = instr.opcode
            if opcode in CALLS:
                calls[instr.name] = runs = called_in_order(instr)
                out.extend(_walk(mod, runs, instrs, info, calls, seen))
            elif opcode not in NO_KERNEL:
                name = instr.name
                first = instrs.get(name)
                if first is None:
                    first = instrs[name] = instr
                    info[name] = (sanitize(name), is_library(instr))
                out.append(first)
        seen.discard(cid)
    return out


def build_program(module: Any, program_id: int) -> ProgramOps:
    """Index one parsed ``HloModuleProto`` as program ``program_id``."""
    mod = _Module(module, int(program_id))
    instrs: dict[str, Any] = {}
    info: dict[str, tuple[str, bool]] = {}
    calls: dict[str, tuple[int, ...]] = {}
    entry = mod.entry_id() if mod.comps else 0
    full = _walk(mod, (entry,), instrs, info, calls, set())
    ops = _LazyOps(mod, instrs, info)
    by_kernel: dict[str, str] = {}
    for name, (kernel, _) in info.items():
        by_kernel.setdefault(kernel, name)
    program = ProgramOps(mod.program_id, mod.name, ops, _ByKernel(ops, by_kernel), calls)
    program._launches[""] = _Launches(full, ops, info)

    def flat(comp_ids: Any) -> _Launches:
        if not comp_ids:
            return program._launches[""]
        more = dict(info)
        walked = _walk(mod, comp_ids, dict(instrs), more, dict(calls), set())
        return _Launches(walked, ops, more)

    program._flat = flat
    return program
