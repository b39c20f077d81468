"""The HLO instruction of every XLA device event of an XSpace.

The ``/host:metadata`` plane holds each compiled program's ``Hlo Proto``;
:class:`~tfprof_lite.model.xla_ops.XlaOpIndex` maps the GPU events to their
instructions (through command buffers too) and each instruction to its
framework scope and op type (``docs/xspace_xla.md``). :func:`xla_ops` runs it
on an :class:`~tfprof_lite.model.xspace_events.EventTable`.
"""

from __future__ import annotations

import logging

import numpy as np
import numpy.typing as npt

from tfprof_lite.errors import InvalidInputError
from tfprof_lite.model.xla_kinds import HloOp
from tfprof_lite.model.xla_ops import KernelEvents, XlaOpIndex
from tfprof_lite.model.xspace_events import EventTable, distinct_codes, gpu_ordinal

__all__ = ["XlaEvents", "hlo_protos", "xla_events", "xla_ops"]

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


def _hlo_protos(table: EventTable) -> list[tuple[int | None, bytes]]:
    cols = table.cols
    planes = [i for i, name in enumerate(cols.plane_name) if name == _METADATA_PLANE]
    if not planes:
        return []
    out: list[tuple[int | None, bytes]] = []
    for meta in np.flatnonzero(np.isin(cols.meta_plane, planes)).tolist():
        stats = cols.meta_stat_dict(meta)
        data = stats.get("Hlo Proto")
        if isinstance(data, bytes):
            program = stats.get("program_id")
            out.append((int(program) if isinstance(program, int) else None, data))
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
    """The HLO instruction of the XLA device events of a file.

    ``events``: GPU event rows with an ``hlo_module`` or ``hlo_op``, ascending;
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
    """The HLO instruction of each GPU event that maps to one (see :func:`xla_ops`);
    worked out once per table."""
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
    return XlaEvents(events, at, ops, index)


def xla_ops(table: EventTable) -> dict[int, HloOp]:
    """The HLO instruction of each GPU event (by event row) that maps to one.

    Empty when the file holds no HLO programs. An HLO proto that does not parse
    leaves its program's events unmapped (logged).
    """
    return xla_events(table).by_event()
