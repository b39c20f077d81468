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

from tfprof_lite.errors import InvalidInputError
from tfprof_lite.model.xla_kinds import HloOp
from tfprof_lite.model.xla_ops import KernelRef, XlaOpIndex
from tfprof_lite.model.xspace_events import PLANE_GPU, EventTable, gpu_ordinal

__all__ = ["hlo_protos", "xla_ops"]

log = logging.getLogger("tfprof_lite")

_METADATA_PLANE = "/host:metadata"


def hlo_protos(table: EventTable) -> list[tuple[int | None, bytes]]:
    """``(program_id, HloProto bytes)`` of every program in ``/host:metadata``."""
    cols = table.cols
    planes = {i for i, name in enumerate(cols.plane_name) if name == _METADATA_PLANE}
    out: list[tuple[int | None, bytes]] = []
    for meta, plane in enumerate(cols.meta_plane.tolist()):
        if plane not in planes:
            continue
        stats = cols.meta_stat_dict(meta)
        data = stats.get("Hlo Proto")
        if isinstance(data, bytes):
            program = stats.get("program_id")
            out.append((int(program) if isinstance(program, int) else None, data))
    return out


def xla_ops(table: EventTable) -> dict[int, HloOp]:
    """The HLO instruction of each GPU event (by event row) that maps to one.

    Empty when the file holds no HLO programs. An HLO proto that does not parse
    leaves its program's events unmapped (logged).
    """
    protos = hlo_protos(table)
    if not protos:
        return {}
    index = XlaOpIndex()
    for program_id, data in protos:
        try:
            index.add(data, program_id)
        except InvalidInputError as err:  # that program's kernels stay unmapped
            log.warning("XLA program not mapped to its ops: %s", err)
    cols = table.cols
    text, ints, has = table.text, table.ints, table.has_int
    events = np.flatnonzero((table.plane_kind == PLANE_GPU) & ~table.derived).tolist()
    events = [e for e in events if text["hlo_module"][e] or text["hlo_op"][e]]
    refs = [
        KernelRef(
            name=table.names[e],
            hlo_op=text["hlo_op"][e],
            hlo_module=text["hlo_module"][e],
            program_id=int(ints["program_id"][e]) if has["program_id"][e] else None,
            execution=int(ints["correlation_id"][e]) if has["correlation_id"][e] else None,
            start_ps=int(table.start[e]),
            is_kernel=bool(text["kernel_details"][e]),
            device=gpu_ordinal(cols.plane_name[int(cols.line_plane[table.line_of(e)])]),
        )
        for e in events
    ]
    try:
        found = index.resolve_all(refs)
    except InvalidInputError as err:
        log.warning("XLA programs not mapped to their ops: %s", err)
        return {}
    return {e: res.op for e, res in zip(events, found) if res is not None}
