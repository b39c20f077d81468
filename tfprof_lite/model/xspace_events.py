"""Per-event facts of an XSpace that the conversion into the model needs.

:class:`EventTable` puts next to :class:`~tfprof_lite.proto.xplane.XSpaceColumns`
what the conversion asks of every event, in columns: its plane kind (host,
GPU), start and end in ps from the file's origin, its name, and the values of
the few stats the conversion reads (``correlation_id``, ``tf_op``, ``hlo_op``,
``hlo_module``, ``kernel_details``, ``memcpy_details``, ``_r``, ``step_num``,
``eager_op``, ``program_id``), looked up once for all events by stat name.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from tfprof_lite.proto.xplane import (
    KIND_COMPRESSED,
    KIND_INT64,
    KIND_REF,
    KIND_STR,
    KIND_UINT64,
    XSpaceColumns,
)

__all__ = [
    "DERIVED_LINES",
    "PLANE_GPU",
    "PLANE_HOST",
    "PLANE_OTHER",
    "EventTable",
    "event_table",
    "gpu_ordinal",
]

I64 = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

PLANE_OTHER, PLANE_HOST, PLANE_GPU = 0, 1, 2

#: Lines that analysers add (XProf, older TF collectors): they repeat other events.
DERIVED_LINES = frozenset(
    {
        "Steps",
        "Framework Ops",
        "Framework Name Scope",
        "TensorFlow Ops",
        "TensorFlow Name Scope",
        "XLA Modules",
        "XLA Ops",
        "Async XLA Ops",
        "Launch Stats",
        "Source code",
        "Host Offload Ops",
        "_counters_",
    }
)

_GPU_PLANE = re.compile(r"/device:GPU:(\d+)")
_TEXT_STATS = ("tf_op", "hlo_op", "hlo_module", "kernel_details", "memcpy_details", "eager_op")
_INT_STATS = ("correlation_id", "_r", "step_num", "program_id")
_TEXT_KINDS = (KIND_STR, KIND_REF, KIND_COMPRESSED)
_INT_KINDS = (KIND_INT64, KIND_UINT64)


@functools.cache
def gpu_ordinal(plane_name: str) -> int:
    """The ordinal of a ``/device:GPU:<n>`` plane, -1 for any other plane (cached:
    asked once per device event, of a few plane names)."""
    found = _GPU_PLANE.fullmatch(plane_name)
    return int(found.group(1)) if found else -1


@dataclass
class EventTable:
    """Columns per event (index = event row of the XSpace columns)."""

    cols: XSpaceColumns
    plane_kind: I64
    start: I64
    end: I64
    names: list[str]
    derived: BoolArray
    text: dict[str, list[str]] = field(default_factory=dict)
    ints: dict[str, I64] = field(default_factory=dict)
    has_int: dict[str, BoolArray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.start)

    def host_events(self) -> I64:
        """Rows of the events on host planes (not on derived lines)."""
        return np.flatnonzero((self.plane_kind == PLANE_HOST) & ~self.derived)

    def line_of(self, event: int) -> int:
        """The line row of ``event``."""
        return int(self.cols.event_line[event])


def _plane_kinds(cols: XSpaceColumns) -> I64:
    kinds = []
    for name in cols.plane_name:
        if name == "/host:CPU":
            kinds.append(PLANE_HOST)
        elif gpu_ordinal(name) >= 0:
            kinds.append(PLANE_GPU)
        else:
            kinds.append(PLANE_OTHER)
    return np.asarray(kinds, dtype=np.int64)


def _owners(cols: XSpaceColumns, key: int, kinds: tuple[int, ...]) -> tuple[I64, I64]:
    """(event rows, stat rows) of the event stats named ``strings[key]`` of ``kinds``."""
    stats = cols.event_stats
    rows = np.flatnonzero((stats.key == key) & np.isin(stats.kind, kinds))
    owners = np.searchsorted(cols.event_stat_at, rows, side="right") - 1
    return owners.astype(np.int64), rows.astype(np.int64)


def event_table(cols: XSpaceColumns) -> EventTable:
    """The per-event columns of ``cols``."""
    n = len(cols.event_line)
    plane_kind = _plane_kinds(cols)[cols.event_plane()] if n else np.zeros(0, dtype=np.int64)
    start = cols.event_start_ps.astype(np.int64)
    end = start + np.maximum(cols.event_duration_ps, 0)
    names_by_meta = cols.meta_name
    names = [names_by_meta[m] if m >= 0 else "" for m in cols.event_meta.tolist()]
    derived_line = np.asarray([name in DERIVED_LINES for name in cols.line_name], dtype=bool)
    derived = derived_line[cols.event_line] if n else np.zeros(0, dtype=bool)
    table = EventTable(cols, plane_kind, start, end, names, derived)
    index = {text: at for at, text in enumerate(cols.strings)}
    for name in _TEXT_STATS:
        values = [""] * n
        key = index.get(name)
        if key is not None:
            owners, rows = _owners(cols, key, _TEXT_KINDS)
            strings = cols.strings
            for owner, value in zip(owners.tolist(), cols.event_stats.value[rows].tolist()):
                values[owner] = strings[value]
        table.text[name] = values
    for name in _INT_STATS:
        values_i = np.zeros(n, dtype=np.int64)
        present = np.zeros(n, dtype=bool)
        key = index.get(name)
        if key is not None:
            owners, rows = _owners(cols, key, _INT_KINDS)
            values_i[owners] = cols.event_stats.value[rows]
            present[owners] = True
        table.ints[name] = values_i
        table.has_int[name] = present
    return table
