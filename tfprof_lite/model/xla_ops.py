"""GPU kernels of XLA programs (JAX, TF with XLA) mapped to HLO instructions and layers.

Input: the serialized ``HloProto`` of each compiled program, as XLA's profiler
stores it in an XSpace's ``/host:metadata`` plane (one event metadata per
program, named ``<module>(<program_id>)``, stats ``Hlo Proto`` = the bytes and
``program_id``), and the device events of the GPU planes with their ``hlo_op``,
``hlo_module``, ``program_id`` and ``correlation_id`` stats. Nothing here reads
an XSpace or imports TensorFlow.

Contract:

* :meth:`XlaOpIndex.add` (or :meth:`XlaOpIndex.from_hlo_protos`) adds one
  program by ``program_id`` (the stat; the module's own ``id`` when ``None``) and
  by module name. Bad bytes raise :class:`~tfprof_lite.errors.InvalidInputError`
  there; a program's instructions are indexed when an event first needs them.
* Every kernel-launching instruction becomes an :class:`HloOp`: its name, opcode,
  :data:`CATEGORIES` category, framework op type, scope path and source line.
  ``scope`` is the instruction's ``op_name`` metadata, the framework op as leaf
  (JAX: ``jit(train_step)/jvp(MLP)/mlp/dense0/dot_general``; TF: the node name).
  A fusion without metadata takes it from its fused computation: a dot,
  convolution or custom call inside, else the work at its root (data movement
  such as bitcasts and converts skipped), else nested fusions, else any
  instruction with an ``op_name``. Without any, ``scope`` is
  ``<module>/<instruction>`` and ``op_type`` the opcode (``has_metadata`` false).
  ``op_type`` is the metadata's ``op_type`` when set (TF), else the leaf of
  ``op_name`` (JAX: ``dot_general``, ``conv_general_dilated``, ``add``).
* :meth:`XlaOpIndex.resolve_all` maps device events (:class:`KernelRef`) to a
  :class:`Resolution` (the :class:`HloOp` and how it was found) or ``None``,
  in input order. Events are grouped by program, ``hlo_op``, ``execution``
  (the launch's ``correlation_id``) and ``device``. When ``hlo_op`` is an
  instruction that is no call (the usual thunk case), every event of the group maps to it (``how =
  "hlo_op"``). When it names no instruction (``command_buffer_N``) or a
  ``call``/``while``/``conditional``, the group is one command-buffer execution:
  its kernels, in ``start_ps`` order, are aligned with the launching instructions
  of the program's entry (or of the called computations) in schedule order by
  :func:`tfprof_lite.model.xla_align.align` (``how = "position"``); other device
  events of the execution (the ``Memset`` before a cuBLAS kernel) go with the
  next kernel, else the previous one. Without an ``execution``, an event maps by
  kernel name (``how = "name"``). An event of an unknown
  program, or of a known one that matches nothing, gives ``None``.
* :meth:`XlaOpIndex.resolve` is the one-event form (no alignment).

The index caches alignments by program and kernel-name sequence, so a profile of
many steps of one program costs one alignment.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tfprof_lite.model.xla_align import align
from tfprof_lite.model.xla_hlo import ProgramOps, build_program
from tfprof_lite.model.xla_kinds import CATEGORIES, HloOp
from tfprof_lite.proto.hlo import parse_hlo_proto

__all__ = [
    "CATEGORIES",
    "HloOp",
    "KernelRef",
    "ProgramOps",
    "Resolution",
    "XlaOpIndex",
]


@dataclass(frozen=True)
class KernelRef:
    """One device event to resolve, from its XSpace stats.

    Attributes:
        name: the event name (kernel name, ``Memset``, ``MemcpyD2D``...).
        hlo_op: the ``hlo_op`` stat (``""`` when absent).
        hlo_module: the ``hlo_module`` stat.
        program_id: the ``program_id`` stat (``None`` when absent).
        execution: the launch's ``correlation_id``: events of one command-buffer
            execution share it (``None``: unknown).
        start_ps: start time, to order the events of one execution.
        is_kernel: a kernel (``kernel_details`` present), not a copy or memset.
        device: the device (GPU plane id): executions are kept apart per device.
    """

    name: str
    hlo_op: str = ""
    hlo_module: str = ""
    program_id: int | None = None
    execution: int | None = None
    start_ps: int = 0
    is_kernel: bool = True
    device: int = 0


@dataclass(frozen=True)
class Resolution:
    """The HLO instruction of one event and how it was found.

    ``how`` is ``"hlo_op"`` (the event's ``hlo_op`` names it), ``"position"``
    (its place in a command-buffer execution) or ``"name"`` (its kernel name).
    """

    op: HloOp
    how: str


class XlaOpIndex:
    """The programs of one profile, by ``program_id`` and by module name.

    :meth:`add` parses the bytes at once (bad bytes fail there) and indexes the
    instructions of a program the first time an event asks for it: a JAX profile
    holds every program the process compiled (167 in the transformer sample),
    mostly small helpers that launch nothing in the traced steps.
    """

    def __init__(self) -> None:
        self._modules: dict[int, Any] = {}
        self._built: dict[int, ProgramOps] = {}
        self._by_module: dict[str, list[int]] = {}
        self._aligned: dict[tuple[int, str, tuple[str, ...]], list[int | None]] = {}

    @classmethod
    def from_hlo_protos(cls, protos: Iterable[tuple[int | None, bytes]]) -> XlaOpIndex:
        """An index of ``(program_id, HloProto bytes)`` pairs."""
        index = cls()
        for program_id, data in protos:
            index.add(data, program_id)
        return index

    def add(self, data: bytes, program_id: int | None = None) -> int:
        """Add one program from its serialized ``HloProto``; return its id (the
        ``program_id`` given, else the module's own ``id``). A later program with
        the same id replaces the earlier one.

        Raises:
            InvalidInputError: the bytes are not an ``HloProto``.
        """
        what = "HLO proto" if program_id is None else f"HLO proto of program {program_id}"
        module = parse_hlo_proto(data, what).hlo_module
        key = int(module.id if program_id is None else program_id)
        if key in self._modules:
            self._by_module[str(self._modules[key].name)].remove(key)
        self._modules[key] = module
        self._built.pop(key, None)
        self._by_module.setdefault(str(module.name), []).append(key)
        return key

    @property
    def programs(self) -> dict[int, ProgramOps]:
        """Every program, indexed (all of them are built on this call)."""
        return {key: self._build(key) for key in self._modules}

    def _build(self, key: int) -> ProgramOps:
        program = self._built.get(key)
        if program is None:
            program = self._built[key] = build_program(self._modules[key], key)
        return program

    def program(self, program_id: int | None, module: str = "") -> ProgramOps | None:
        """The program of ``program_id``, else the only program named ``module``."""
        if program_id is not None and program_id in self._modules:
            return self._build(program_id)
        named = self._by_module.get(module, [])
        return self._build(named[0]) if len(named) == 1 else None

    def resolve(self, kernel: KernelRef) -> Resolution | None:
        """The instruction of one event by ``hlo_op``, then by kernel name."""
        program = self.program(kernel.program_id, kernel.hlo_module)
        if program is None:
            return None
        direct = program.ops.get(kernel.hlo_op)
        if direct is not None and not program.is_call(kernel.hlo_op):
            return Resolution(direct, "hlo_op")
        named = program.by_kernel_name.get(kernel.name)
        return Resolution(named, "name") if named is not None else None

    def resolve_all(self, kernels: Sequence[KernelRef]) -> list[Resolution | None]:
        """The instruction of every event, in input order (see the module docstring)."""
        out: list[Resolution | None] = [None] * len(kernels)
        groups: dict[tuple[int | None, str, str, int | None, int], list[int]] = defaultdict(list)
        for i, kernel in enumerate(kernels):
            key = (
                kernel.program_id,
                kernel.hlo_module,
                kernel.hlo_op,
                kernel.execution,
                kernel.device,
            )
            groups[key].append(i)
        for (program_id, module, hlo_op, execution, _), members in groups.items():
            program = self.program(program_id, module)
            if program is None:
                continue
            direct = program.ops.get(hlo_op)
            if direct is not None and not program.is_call(hlo_op):
                for i in members:
                    out[i] = Resolution(direct, "hlo_op")
            elif execution is None:
                for i in members:
                    out[i] = self.resolve(kernels[i])
            else:
                self._resolve_execution(
                    program, hlo_op, [kernels[i] for i in members], members, out
                )
        return out

    def _resolve_execution(
        self,
        program: ProgramOps,
        hlo_op: str,
        events: list[KernelRef],
        slots: list[int],
        out: list[Resolution | None],
    ) -> None:
        order = sorted(range(len(events)), key=lambda j: events[j].start_ps)
        kernel_pos = [j for j in order if events[j].is_kernel]
        sequence = program.sequence(hlo_op)
        names = tuple(events[j].name for j in kernel_pos)
        key = (program.program_id, hlo_op, names)
        picked = self._aligned.get(key)
        if picked is None:
            picked = align(
                names,
                [op.kernel_name for op in sequence],
                [op.library for op in sequence],
                program.by_kernel_name,
            )
            self._aligned[key] = picked
        found: dict[int, HloOp] = {}
        for j, index in zip(kernel_pos, picked):
            if index is not None:
                found[j] = sequence[index]
        _attach_others(order, events, found)
        for j, op in found.items():
            out[slots[j]] = Resolution(op, "position")


def _attach_others(order: list[int], events: list[KernelRef], found: dict[int, HloOp]) -> None:
    """Give each non-kernel event the op of the next kernel, else of the previous."""
    following: HloOp | None = None
    pending: list[int] = []
    for j in reversed(order):
        if events[j].is_kernel:
            following = found.get(j, following)
        elif following is not None:
            found[j] = following
        else:
            pending.append(j)
    previous: HloOp | None = None
    for j in order:
        if events[j].is_kernel and j in found:
            previous = found[j]
        elif j in pending and previous is not None:
            found[j] = previous
