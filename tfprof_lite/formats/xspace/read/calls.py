"""The calls on a host's threads that steps are made of: the outermost of a set
of events, and the host events that run an XLA program.

Both the step finder (:mod:`tfprof_lite.formats.xspace.read.steps`) and the inference
of the training-step program (:mod:`tfprof_lite.formats.xspace.read.infer`) read them.
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt

from tfprof_lite.formats.xspace.read.events import EventTable, distinct_codes

__all__ = ["host_programs", "outermost", "program_of", "program_runs"]

I64 = npt.NDArray[np.int64]
#: Rows read into Python at once by :func:`outermost`.
_CHUNK = 1 << 16
_PROGRAM = (
    re.compile(r"(?P<m>[^\s:]+):XLA \w+ module"),
    # a module name has no spaces: "ThunkExecutor::Execute (wait for completion)"
    # (XLA's CPU runtime) runs none
    re.compile(r".*Execute \((?P<m>[^)\s]+)\)"),
)


def outermost(table: EventTable, rows: list[int] | I64) -> list[int]:
    """``rows`` by start, without those that start inside an earlier one (read
    :data:`_CHUNK` rows at a time: a large file runs programs by the million)."""
    if not len(rows):
        return []
    at = np.asarray(rows, dtype=np.int64)
    starts, ends = table.start[at], table.end[at]
    order = np.lexsort((-ends, starts))
    kept: list[int] = []
    last_end = None
    for low in range(0, len(order), _CHUNK):
        part = order[low : low + _CHUNK]
        for row, start, end in zip(
            at[part].tolist(), starts[part].tolist(), ends[part].tolist(), strict=True
        ):
            if last_end is not None and start < last_end:
                continue
            kept.append(row)
            last_end = end
    return kept


def program_of(name: str) -> str:
    """The XLA module an execution event runs (``jit_f:XLA GPU module``,
    ``...Execute (jit_f)``), or ``""``."""
    for pattern in _PROGRAM:
        found = pattern.fullmatch(name)
        if found:
            return found.group("m")
    return ""


def host_programs(table: EventTable, host: I64) -> dict[int, str]:
    """Host event -> the XLA module it runs, for the host events that run one
    (:func:`program_of`, decided once per event metadata), by row."""
    rows, which, modules = program_runs(table, host)
    return {e: modules[i] for e, i in zip(rows.tolist(), which.tolist(), strict=True)}


def program_runs(table: EventTable, host: I64) -> tuple[I64, I64, list[str]]:
    """:func:`host_programs` in columns: the rows (of ``host``, ascending) that
    run an XLA module, the index of each one's module, and the modules."""
    if not len(host):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), []
    names = table.cols.meta_name
    used, inverse = distinct_codes(table.cols.event_meta[host], len(names))
    modules = [program_of(names[m]) if m >= 0 else "" for m in used.tolist()]
    which = inverse.reshape(-1)
    runs = np.asarray([bool(m) for m in modules], dtype=bool)[which]
    return host[runs], which[runs], modules
