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
* :meth:`XlaOpIndex.resolve_columns` is :meth:`~XlaOpIndex.resolve_all` on
  events in columns (:class:`KernelEvents`: arrays and string codes, no object
  per event), as the XSpace conversion calls it; it gives the :class:`HloOp` of
  each event and how it was found (:data:`HOW`).
* :meth:`XlaOpIndex.resolve` is the one-event form (no alignment).

The index caches alignments by program and kernel-name sequence, so a profile of
many steps of one program costs one alignment.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from tfprof_lite.model.xla_align import align
from tfprof_lite.model.xla_hlo import ProgramOps, build_program
from tfprof_lite.model.xla_kinds import CATEGORIES, HloOp
from tfprof_lite.proto.hlo_module import read_hlo_module

__all__ = [
    "CATEGORIES",
    "HOW",
    "HloOp",
    "KernelEvents",
    "KernelRef",
    "ProgramOps",
    "Resolution",
    "XlaOpIndex",
]


I64 = npt.NDArray[np.int64]
I8 = npt.NDArray[np.int8]
BoolArray = npt.NDArray[np.bool_]

#: How an event was mapped, by the code :meth:`XlaOpIndex.resolve_columns` gives
#: (0: not mapped).
HOW = ("", "hlo_op", "position", "name")
_HOW_HLO_OP, _HOW_POSITION, _HOW_NAME = 1, 2, 3


class KernelRef(NamedTuple):
    """One device event to resolve, from its XSpace stats (an immutable record).

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


class KernelEvents:
    """Device events to resolve, in columns: what :class:`KernelRef` holds, one
    entry per event. ``hlo_op`` and ``hlo_module`` are codes into ``texts``
    (``-1``: absent); ``has_program`` and ``has_execution`` say where
    ``program_id`` and ``execution`` are set."""

    def __init__(
        self,
        *,
        name: list[str],
        hlo_op: I64,
        hlo_module: I64,
        texts: list[str],
        program_id: I64,
        has_program: BoolArray,
        execution: I64,
        has_execution: BoolArray,
        start_ps: I64,
        is_kernel: BoolArray,
        device: I64,
    ) -> None:
        self.name = name
        self.hlo_op = hlo_op
        self.hlo_module = hlo_module
        self.texts = texts
        self.program_id = program_id
        self.has_program = has_program
        self.execution = execution
        self.has_execution = has_execution
        self.start_ps = start_ps
        self.is_kernel = is_kernel
        self.device = device


class Resolution(NamedTuple):
    """The HLO instruction of one event and how it was found (an immutable record).

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
        module = read_hlo_module(data, what)
        key = int(module.id if program_id is None else program_id)
        if key in self._modules:
            self._by_module[str(self._modules[key].name)].remove(key)
        self._modules[key] = module
        self._built.pop(key, None)
        self._by_module.setdefault(str(module.name), []).append(key)
        return key

    def module(self, program_id: int) -> Any | None:
        """The parsed ``HloModuleProto`` of program ``program_id`` (``None``: no such
        program), for readers of what the index does not keep (call stacks)."""
        return self._modules.get(program_id)

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
        codes: dict[str, int] = {}

        def code(text: str) -> int:
            return codes.setdefault(text, len(codes)) if text else -1

        n = len(kernels)
        hlo_op = np.asarray([code(k.hlo_op) for k in kernels], np.int64).reshape(n)
        hlo_module = np.asarray([code(k.hlo_module) for k in kernels], np.int64).reshape(n)
        cols = KernelEvents(
            name=[k.name for k in kernels],
            hlo_op=hlo_op,
            hlo_module=hlo_module,
            texts=list(codes),
            program_id=np.asarray([k.program_id or 0 for k in kernels], np.int64).reshape(n),
            has_program=np.asarray([k.program_id is not None for k in kernels], bool).reshape(n),
            execution=np.asarray([k.execution or 0 for k in kernels], np.int64).reshape(n),
            has_execution=np.asarray([k.execution is not None for k in kernels], bool).reshape(n),
            start_ps=np.asarray([k.start_ps for k in kernels], np.int64).reshape(n),
            is_kernel=np.asarray([k.is_kernel for k in kernels], bool).reshape(n),
            device=np.asarray([k.device for k in kernels], np.int64).reshape(n),
        )
        ops, at, how = self.resolve_columns(cols)
        return [
            None if a < 0 else Resolution(ops[a], HOW[h]) for a, h in zip(at.tolist(), how.tolist())
        ]

    def resolve_columns(self, cols: KernelEvents) -> tuple[list[HloOp], I64, I8]:
        """:meth:`resolve_all` on events in columns: the instructions found (each
        once), per event the index of its own among them (-1: none) and how it was
        found (an index into :data:`HOW`)."""
        n = len(cols.name)
        found = _Found(n)
        for members, key in _groups(cols):
            has_program, program_id, module, hlo_op, has_execution, _, _ = key
            program = self.program(
                program_id if has_program else None, cols.texts[module] if module >= 0 else ""
            )
            if program is None:
                continue
            op_name = cols.texts[hlo_op] if hlo_op >= 0 else ""
            direct = program.ops.get(op_name)
            if direct is not None and not program.is_call(op_name):
                found.at[members] = found.slot(direct)
                found.how[members] = _HOW_HLO_OP
            elif not has_execution:
                for i in members.tolist():
                    named = program.by_kernel_name.get(cols.name[i])
                    if named is not None:
                        found.at[i] = found.slot(named)
                        found.how[i] = _HOW_NAME
            else:
                self._resolve_execution(program, op_name, cols, members, found)
        return found.ops, found.at, found.how

    def _resolve_execution(
        self, program: ProgramOps, hlo_op: str, cols: KernelEvents, members: I64, found: _Found
    ) -> None:
        order = members[np.argsort(cols.start_ps[members], kind="stable")]
        kernel = cols.is_kernel[order]
        kernel_at = np.flatnonzero(kernel)
        names = tuple(cols.name[i] for i in order[kernel_at].tolist())
        launches = program.launches(hlo_op)
        key = (program.program_id, hlo_op, names)
        picked = self._aligned.get(key)
        if picked is None:
            picked = align(names, launches.kernel_names, launches.library, program.by_kernel_name)
            self._aligned[key] = picked
        slots = found.slots(key, launches, picked)
        placed = np.full(len(order), -1, dtype=np.int64)
        placed[kernel_at] = slots
        _attach_others(kernel, placed)
        hit = placed >= 0
        found.at[order[hit]] = placed[hit]
        found.how[order[hit]] = _HOW_POSITION


class _Found:
    """What :meth:`XlaOpIndex.resolve_columns` found: the ops, each once, and per
    event its op's index and how it was found."""

    def __init__(self, n: int) -> None:
        self.ops: list[HloOp] = []
        self.at = np.full(n, -1, dtype=np.int64)
        self.how = np.zeros(n, dtype=np.int8)
        self._index: dict[int, int] = {}
        self._picked: dict[tuple[int, str, tuple[str, ...]], I64] = {}

    def slot(self, op: HloOp) -> int:
        """The index of ``op`` among the ops found (added when new)."""
        at = self._index.get(id(op))
        if at is None:
            at = self._index[id(op)] = len(self.ops)
            self.ops.append(op)
        return at

    def slots(
        self, key: tuple[int, str, tuple[str, ...]], launches: Any, picked: list[int | None]
    ) -> I64:
        """The op index of each kernel of an alignment (-1: none), once per alignment."""
        found = self._picked.get(key)
        if found is None:
            found = self._picked[key] = np.asarray(
                [-1 if i is None else self.slot(launches.op(i)) for i in picked], dtype=np.int64
            ).reshape(len(picked))
        return found


def _groups(cols: KernelEvents) -> Iterator[tuple[I64, tuple[int, ...]]]:
    """The events of each (program id, module, ``hlo_op``, execution, device), in
    input order, and the group's key (absent values as 0 with their flag false)."""
    if not len(cols.name):
        return
    keys = [
        cols.has_program,
        np.where(cols.has_program, cols.program_id, 0),
        _canonical(cols.hlo_module, cols.texts),
        _canonical(cols.hlo_op, cols.texts),
        cols.has_execution,
        np.where(cols.has_execution, cols.execution, 0),
        cols.device,
    ]
    order = np.lexsort(keys[::-1])
    # Group starts: where any key changes in that order (one key at a time, not
    # a matrix of them all: this runs over every GPU event of a large file).
    change = np.zeros(len(order) - 1, dtype=bool)
    for key in keys:
        ordered = key[order]
        change |= ordered[1:] != ordered[:-1]
    del ordered
    bounds = [0, *(np.flatnonzero(change) + 1).tolist(), len(order)]
    starts = order[bounds[:-1]]
    values = list(zip(*(key[starts].tolist() for key in keys), strict=True))
    for low, high, value in zip(bounds[:-1], bounds[1:], values, strict=True):
        yield order[low:high], tuple(int(v) for v in value)


def _canonical(codes: I64, texts: list[str]) -> I64:
    """``codes`` with every text's first code (``-1`` for ``""`` and absent)."""
    used, inverse = np.unique(codes, return_inverse=True)
    first: dict[str, int] = {"": -1}
    canon = [first.setdefault(texts[c] if c >= 0 else "", int(c)) for c in used.tolist()]
    return np.asarray(canon, dtype=np.int64)[inverse.reshape(-1)]


def _attach_others(kernel: BoolArray, placed: I64) -> None:
    """Give each non-kernel event (in start order) the op of the next mapped
    kernel, else of the previous one (``placed``: op index per event, -1: none)."""
    if kernel.all():
        return
    size = len(placed)
    at = np.arange(size)
    valid = kernel & (placed >= 0)
    following = np.minimum.accumulate(np.where(valid, at, size)[::-1])[::-1]
    previous = np.maximum.accumulate(np.where(valid, at, -1))
    source = np.where(following < size, following, previous)
    others = ~kernel & (source >= 0)
    placed[others] = placed[source[others]]
