"""The HLO instruction of every XLA device event of an XSpace.

The ``/host:metadata`` plane holds each compiled program's ``Hlo Proto``;
:class:`~tfprof_lite.model.xla_ops.XlaOpIndex` maps the GPU events (and the
host op events of programs XLA runs on the CPU) to their
instructions (through command buffers too) and each instruction to its
framework scope and op type (``docs/xspace_xla.md``). :func:`xla_ops` runs it
on an :class:`~tfprof_lite.formats.xspace.read.events.EventTable`.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import numpy.typing as npt

from tfprof_lite.errors import InvalidInputError
from tfprof_lite.formats.xspace.read.events import (
    PLANE_HOST,
    EventTable,
    distinct_codes,
    gpu_ordinal,
)
from tfprof_lite.model.xla_kinds import HloOp
from tfprof_lite.model.xla_ops import KernelEvents, XlaOpIndex

__all__ = ["XlaEvents", "hlo_names", "hlo_protos", "host_xla_ops", "xla_events", "xla_ops"]

#: Opcodes whose host events hold their called computations' op events.
_HOLDERS = frozenset({"call", "while", "conditional", "async-start"})

I64 = npt.NDArray[np.int64]

log = logging.getLogger("tfprof_lite")

_METADATA_PLANE = "/host:metadata"


def hlo_protos(table: EventTable) -> list[tuple[int | None, bytes]]:
    """``(program_id, HloProto bytes)`` of every program in ``/host:metadata``
    (read once per table)."""
    found: list[tuple[int | None, bytes]] | None = table.memo.get("hlo_protos")
    if found is None:
        found = table.memo["hlo_protos"] = _hlo_protos(table)
    return found


def hlo_names(table: EventTable) -> list[str]:
    """The name of each program of :func:`hlo_protos`, in its order: its metadata's
    name, ``<module>(<program id>)``, without the id (the module's name)."""
    hlo_protos(table)
    names: list[str] = table.memo["hlo_names"]
    return names


def _hlo_protos(table: EventTable) -> list[tuple[int | None, bytes]]:
    cols = table.cols
    planes = [i for i, name in enumerate(cols.plane_name) if name == _METADATA_PLANE]
    out: list[tuple[int | None, bytes]] = []
    names: list[str] = []
    table.memo["hlo_names"] = names
    if not planes:
        return out
    for meta in np.flatnonzero(np.isin(cols.meta_plane, planes)).tolist():
        stats = cols.meta_stat_dict(meta)
        data = stats.get("Hlo Proto")
        if isinstance(data, bytes):
            program = stats.get("program_id")
            out.append((int(program) if isinstance(program, int) else None, data))
            name = cols.meta_name[meta]
            names.append(name[: name.rindex("(")] if name.endswith(")") and "(" in name else name)
    return out


def _needed(
    protos: list[tuple[int | None, bytes]], wanted: set[int], by_id_only: bool
) -> list[tuple[int | None, bytes]]:
    """The programs events can reach: when every event names a program id the
    file has, those programs only (the last of an id, as :meth:`XlaOpIndex.add`
    keeps); else all (a lookup by module name needs every module's name)."""
    if not by_id_only or any(program is None for program, _ in protos):
        return protos
    last = {program: at for at, (program, _) in enumerate(protos)}
    if not wanted <= set(last):
        return protos
    return [protos[at] for at in sorted(last[p] for p in wanted)]


def _index(protos: list[tuple[int | None, bytes]]) -> tuple[XlaOpIndex, list[str]]:
    """An index of ``protos``; the errors of those that did not parse (left out)."""
    index = XlaOpIndex()
    failed: list[str] = []
    for program_id, data in protos:
        try:
            index.add(data, program_id)
        except InvalidInputError as err:  # that program's kernels stay unmapped
            failed.append(str(err))
    return index, failed


def _nonempty(codes: I64, strings: list[str]) -> npt.NDArray[np.bool_]:
    """Whether each code names a non-empty string (-1: absent)."""
    if not len(codes):
        return np.zeros(0, dtype=bool)
    used, inverse = distinct_codes(codes, len(strings))
    flags = np.asarray([c >= 0 and bool(strings[c]) for c in used.tolist()], dtype=bool)
    return flags[inverse.reshape(-1)]


class XlaEvents:
    """The HLO instruction of the XLA events of a file.

    ``events``: GPU event rows with an ``hlo_module`` or ``hlo_op`` and host
    event rows with an ``hlo_op`` (XLA's CPU ops), ascending;
    ``at[i]``: the index in ``ops`` of the :class:`HloOp` of ``events[i]`` (-1:
    none); ``ops``: each instruction found, once; ``index``: the programs (their
    parsed modules: :meth:`XlaOpIndex.module`), ``None`` when the file has none.
    """

    def __init__(
        self, events: I64, at: I64, ops: list[HloOp], index: XlaOpIndex | None = None
    ) -> None:
        self.events = events
        self.at = at
        self.ops = ops
        self.index = index

    def by_event(self) -> dict[int, HloOp]:
        """Event row -> its :class:`HloOp`, for the mapped events."""
        hit = self.at >= 0
        ops = self.ops
        return {e: ops[a] for e, a in zip(self.events[hit].tolist(), self.at[hit].tolist())}


def xla_events(table: EventTable) -> XlaEvents:
    """The HLO instruction of each XLA event that maps to one: GPU events with an
    ``hlo_module`` or ``hlo_op`` stat, and host events with an ``hlo_op`` stat
    (the ops of a program XLA runs on the CPU, one event per thunk), see
    :func:`xla_ops`; worked out once per table."""
    found: XlaEvents | None = table.memo.get("xla_events")
    if found is None:
        found = table.memo["xla_events"] = _xla_events(table)
    return found


def _xla_events(table: EventTable) -> XlaEvents:
    none = XlaEvents(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), [])
    protos = hlo_protos(table)
    if not protos:
        return none
    codes = table.codes
    device = table.device_events()
    module = codes["hlo_module"][device].astype(np.int64)
    hlo_op = codes["hlo_op"][device].astype(np.int64)
    strings = table.cols.strings
    events = device[_nonempty(module, strings) | _nonempty(hlo_op, strings)]
    host = table.host_events()
    on_host = host[_nonempty(codes["hlo_op"][host].astype(np.int64), strings)]
    if len(on_host):  # XLA's CPU runtime: an op per thunk run on a host thread
        events = np.union1d(events, on_host)
    has_program = table.has_int["program_id"][events]
    program_id = table.ints.at("program_id", events)
    wanted = set(program_id[has_program].tolist())
    needed = _needed(protos, wanted, bool(has_program.all()))
    index, failed = _index(needed)
    if failed and len(needed) < len(protos):  # a lookup by module name may need the others
        index, failed = _index(protos)
    for error in failed:
        log.warning("XLA program not mapped to its ops: %s", error)
    cols = table.cols
    plane_ordinal = np.asarray([gpu_ordinal(name) for name in cols.plane_name], dtype=np.int64)
    kernels = KernelEvents(
        name=[table.names[e] for e in events.tolist()],
        hlo_op=codes["hlo_op"][events].astype(np.int64),
        hlo_module=codes["hlo_module"][events].astype(np.int64),
        texts=strings,
        program_id=program_id,
        has_program=has_program,
        execution=table.ints.at("correlation_id", events),
        has_execution=table.has_int["correlation_id"][events],
        start_ps=table.start[events],
        is_kernel=_nonempty(codes["kernel_details"][events].astype(np.int64), strings),
        device=plane_ordinal[cols.line_plane[cols.event_line[events]]],
    )
    try:
        ops, at, _ = index.resolve_columns(kernels)
    except InvalidInputError as err:
        log.warning("XLA programs not mapped to their ops: %s", err)
        return none
    if len(on_host):
        _by_name(table, index, events, np.isin(events, on_host), ops, at)
    return XlaEvents(events, at, ops, index)


def _by_name(
    table: EventTable, index: XlaOpIndex, events: I64, hosted: Any, ops: list[HloOp], at: I64
) -> None:
    """Map the host events (``hosted`` of ``events``) by the instruction their
    ``hlo_op`` names, in place: XLA's CPU runtime names the instruction each
    thunk runs (a ``while`` too, which a GPU event never is on its own)."""
    rows = np.flatnonzero(hosted)
    strings = table.cols.strings
    codes = table.codes
    op_codes = codes["hlo_op"][events[rows]].astype(np.int64).tolist()
    module_codes = codes["hlo_module"][events[rows]].astype(np.int64).tolist()
    program_id = table.ints.at("program_id", events[rows]).tolist()
    has = table.has_int["program_id"][events[rows]].tolist()
    slot = {id(op): i for i, op in enumerate(ops)}
    found: dict[tuple[int | None, int, int], int] = {}
    for row, op_code, module_code, pid, known in zip(
        rows.tolist(), op_codes, module_codes, program_id, has, strict=True
    ):
        key = (pid if known else None, op_code, module_code)
        where = found.get(key)
        if where is None:
            module = strings[module_code] if module_code >= 0 else ""
            program = index.program(key[0], module) or index.program(None, module)
            op = program.named(strings[op_code]) if program is not None else None
            if op is None:
                where = -1
            else:
                where = slot.get(id(op), -1)
                if where < 0:
                    where = slot[id(op)] = len(ops)
                    ops.append(op)
            found[key] = where
        at[row] = where


def xla_ops(table: EventTable) -> dict[int, HloOp]:
    """The HLO instruction of each GPU event (by event row) that maps to one.

    Empty when the file holds no HLO programs. An HLO proto that does not parse
    leaves its program's events unmapped (logged).
    """
    return xla_events(table).by_event()


def host_xla_ops(table: EventTable, xla: XlaEvents) -> dict[int, tuple[str, str, str]]:
    """Host event -> (node name, op type, module) of the host events of XLA ops
    (XLA's CPU runtime): the instruction's framework scope and
    :attr:`~tfprof_lite.model.xla_kinds.HloOp.type_label`, as a GPU kernel of
    the instruction gets. Events of ``call``/``while``/``conditional`` are left
    out: the ops they run are events of their own, inside them."""
    hit = xla.at >= 0
    if not hit.any():
        return {}
    events, at = xla.events[hit], xla.at[hit]
    on_host = table.plane_kind[events] == PLANE_HOST
    ops = xla.ops
    out: dict[int, tuple[str, str, str]] = {}
    for e, a in zip(events[on_host].tolist(), at[on_host].tolist(), strict=True):
        op = ops[a]
        if op.opcode not in _HOLDERS:
            out[e] = (op.scope, op.type_label, op.module)
    return out
