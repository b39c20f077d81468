"""Per-event facts of an XSpace that the conversion into the model needs.

:class:`EventTable` puts next to :class:`~tfprof_lite.formats.xspace.wire.columns.XSpaceColumns`
what the conversion asks of every event, in columns: its plane kind (host,
GPU), start and end in ps from the file's origin, its name, and the values of
the few stats the conversion reads (``correlation_id``, ``tf_op``, ``hlo_op``,
``hlo_module``, ``kernel_details``, ``memcpy_details``, ``_r``, ``step_num``,
``eager_op``, ``program_id``, ``run_id``), looked up once for all events by stat name.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from tfprof_lite.formats.xspace.wire.columns import (
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
    "EventCodes",
    "EventTable",
    "distinct_codes",
    "event_table",
    "gpu_ordinal",
    "read_event_stats",
]

I64 = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
I32 = npt.NDArray[np.int32]
I8 = npt.NDArray[np.int8]

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
_INT_STATS = ("correlation_id", "_r", "step_num", "program_id", "run_id")
#: Int stats kept as a column per event; the others are kept as (event, value)
#: pairs of the events that have them. None: even ``correlation_id`` is on
#: under a third of a large GPU file's events (launches and GPU events).
_DENSE_INTS: frozenset[str] = frozenset()
_TEXT_KINDS = (KIND_STR, KIND_REF, KIND_COMPRESSED)
_INT_KINDS = (KIND_INT64, KIND_UINT64)


def distinct_codes(values: npt.NDArray[np.integer[Any]], size: int) -> tuple[I64, I64]:
    """``np.unique(values, return_inverse=True)`` of codes in ``-1 .. size - 1``
    (string or metadata rows, -1: none): the distinct codes, ascending, and each
    value's index among them; from a table of the codes present, without
    sorting the values (which takes some 40 bytes a value)."""
    present = np.zeros(size + 1, dtype=bool)
    present[values + 1] = True
    rank = np.cumsum(present) - 1
    return np.flatnonzero(present) - 1, rank[values + 1]


@functools.cache
def gpu_ordinal(plane_name: str) -> int:
    """The ordinal of a ``/device:GPU:<n>`` plane, -1 for any other plane (cached:
    asked once per device event, of a few plane names)."""
    found = _GPU_PLANE.fullmatch(plane_name)
    return int(found.group(1)) if found else -1


class EventCodes:
    """One text stat's string codes by event, kept for the events that have it
    (``owners``: their rows ascending, int32 below 2^31 events; ``values``:
    their codes): a
    column over every event would take 2 or 4 bytes an event for stats most
    events lack. Read like that column: ``codes[events]`` (-1 where absent)."""

    def __init__(
        self, n: int, owners: npt.NDArray[np.signedinteger[Any]], values: npt.NDArray[Any]
    ) -> None:
        self.n = n
        self.owners = owners
        self.values = values

    @property
    def dtype(self) -> np.dtype[Any]:
        """The codes' type (int16 or int32)."""
        return self.values.dtype

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, events: npt.NDArray[np.integer[Any]]) -> npt.NDArray[Any]:
        out = np.full(len(events), -1, dtype=self.values.dtype)
        owners = self.owners
        if len(owners) and len(events):
            # The last code of an event wins, as in a column written in stat order.
            pos = np.searchsorted(owners, events, side="right") - 1
            hit = pos >= 0
            hit[hit] = owners[pos[hit]] == events[hit]
            out[hit] = self.values[pos[hit]]
        return out

    def dense(self) -> npt.NDArray[Any]:
        """The codes of every event."""
        out = np.full(self.n, -1, dtype=self.values.dtype)
        out[self.owners] = self.values
        return out

    def tolist(self) -> list[int]:
        """:meth:`dense` as a list."""
        return list(self.dense().tolist())


class _Texts(Mapping[str, list[str]]):
    """Stat name -> per-event text, each list made from its codes when first read."""

    def __init__(self, codes: dict[str, EventCodes], strings: list[str]) -> None:
        # The table's columns, not the table: no reference cycle keeps a table
        # (and the file's columns) alive past its last user.
        self._codes = codes
        self._strings = strings
        self._made: dict[str, list[str]] = {}

    def __getitem__(self, name: str) -> list[str]:
        values = self._made.get(name)
        if values is None:
            values = self._made[name] = _strings_at(self._strings, self._codes[name].dense())
        return values

    def __iter__(self) -> Iterator[str]:
        return iter(self._codes)

    def __len__(self) -> int:
        return len(self._codes)


def _strings_at(strings: list[str], codes: npt.NDArray[np.integer[Any]]) -> list[str]:
    """``strings[code]`` for each code (``""`` for -1)."""
    if not len(codes):
        return []
    if 4 * len(codes) >= len(strings):
        table = np.empty(len(strings) + 1, dtype=object)
        table[: len(strings)] = strings
        table[-1] = ""
        return list(table[codes].tolist())
    present = np.flatnonzero(codes >= 0)
    values = [""] * len(codes)
    for at, code in zip(present.tolist(), codes[present].tolist()):
        values[at] = strings[code]
    return values


class _EventNames(Sequence[str]):
    """Each event's name (its metadata's; ``""`` without one), looked up when
    read: a list of them would take 8 bytes an event for the few that are read."""

    def __init__(self, meta_name: list[str], event_meta: I32) -> None:
        self._meta_name = meta_name
        self._event_meta = event_meta

    def __len__(self) -> int:
        return len(self._event_meta)

    @overload
    def __getitem__(self, event: int) -> str: ...

    @overload
    def __getitem__(self, event: slice) -> list[str]: ...

    def __getitem__(self, event: int | slice) -> str | list[str]:
        if isinstance(event, slice):
            return [self[e] for e in range(len(self))[event]]
        meta = int(self._event_meta[event])
        return self._meta_name[meta] if meta >= 0 else ""


class _Ints(Mapping[str, I64]):
    """Stat name -> per-event int value (0 where absent): a dense column, or one
    made on each read from the (event, value) pairs of a sparse stat."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.dense: dict[str, I64] = {}
        self.sparse: dict[str, tuple[I64, I64]] = {}

    def __getitem__(self, name: str) -> I64:
        found = self.dense.get(name)
        if found is not None:
            return found
        owners, values = self.sparse[name]
        out = np.zeros(self.n, dtype=np.int64)
        out[owners] = values
        return out

    def at(self, name: str, events: I64) -> I64:
        """The values of stat ``name`` of ``events`` (0 where absent)."""
        found = self.dense.get(name)
        if found is not None:
            return found[events]
        owners, values = self.sparse[name]
        if not len(owners):
            return np.zeros(len(events), dtype=np.int64)
        # The last pair of an event wins, as in a dense column.
        pos = np.searchsorted(owners, events, side="right") - 1
        hit = pos >= 0
        hit[hit] = owners[pos[hit]] == events[hit]
        return np.where(hit, values[np.maximum(pos, 0)], 0)

    def __iter__(self) -> Iterator[str]:
        return iter([*self.dense, *self.sparse])

    def __len__(self) -> int:
        return len(self.dense) + len(self.sparse)


class EventTable:
    """Columns per event (index = event row of the XSpace columns).

    ``codes[stat]``: the string row (``cols.strings``) of each event's text stat,
    -1 where absent (int16 when the file has fewer than 32767 strings, else
    int32); ``text[stat]``: the same as strings (made when first read);
    ``names[event]``: the event's name (looked up when read).
    """

    def __init__(
        self,
        cols: XSpaceColumns,
        plane_kind: I8,
        start: I64,
        end: I64,
        names: Sequence[str],
        derived: BoolArray,
    ) -> None:
        self.cols = cols
        self.plane_kind = plane_kind
        self.start = start
        self.end = end
        self.names = names
        self.derived = derived
        self.codes: dict[str, EventCodes] = {}
        self.ints = _Ints(len(start))
        self.has_int: dict[str, BoolArray] = {}
        self.text: Mapping[str, list[str]] = _Texts(self.codes, cols.strings)
        #: Facts derived from the table, kept for whoever asks again (by name).
        self.memo: dict[str, Any] = {}
        self._host: I64 | None = None
        self._device: I64 | None = None

    def __len__(self) -> int:
        return len(self.start)

    def host_events(self) -> I64:
        """Rows of the events on host planes (not on derived lines)."""
        if self._host is None:
            self._host = np.flatnonzero((self.plane_kind == PLANE_HOST) & ~self.derived)
        return self._host

    def device_events(self) -> I64:
        """Rows of the events on GPU planes (not on derived lines)."""
        if self._device is None:
            self._device = np.flatnonzero((self.plane_kind == PLANE_GPU) & ~self.derived)
        return self._device

    def drop_stats(self) -> None:
        """Let go of the per-event names and stat columns (for a caller that
        reads only the events' rows, planes and times from here on)."""
        self.host_events()
        self.device_events()
        self.names = []
        self.codes.clear()
        self.ints.dense.clear()
        self.ints.sparse.clear()
        self.has_int.clear()
        self.text = _Texts(self.codes, self.cols.strings)
        self.memo.clear()

    def line_of(self, event: int) -> int:
        """The line row of ``event``."""
        return int(self.cols.event_line[event])


def _plane_kinds(cols: XSpaceColumns) -> I8:
    kinds = []
    for name in cols.plane_name:
        if name == "/host:CPU":
            kinds.append(PLANE_HOST)
        elif gpu_ordinal(name) >= 0:
            kinds.append(PLANE_GPU)
        else:
            kinds.append(PLANE_OTHER)
    return np.asarray(kinds, dtype=np.int8)


def _stat_rows(cols: XSpaceColumns, key: int | None) -> I64:
    """The event stat rows named by string row ``key`` (None: no such name),
    one stat name at a time: the rows of all at once would be some 8 bytes a
    stat the conversion reads."""
    if key is None:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(cols.event_stats.key == key)


def _owners(cols: XSpaceColumns, rows: I64, kinds: tuple[int, ...]) -> tuple[I64, I64]:
    """(event rows, stat rows) of the stat rows ``rows`` of ``kinds``."""
    rows = rows[np.isin(cols.event_stats.kind[rows], kinds)]
    owners = np.searchsorted(cols.event_stat_at, rows, side="right") - 1
    return owners.astype(np.int64), rows.astype(np.int64)


def event_table(cols: XSpaceColumns, stats: bool = True) -> EventTable:
    """The per-event columns of ``cols`` (``stats``: with the stat columns;
    without, :func:`read_event_stats` adds them later)."""
    n = len(cols.event_line)
    plane_kind = _plane_kinds(cols)[cols.event_plane()] if n else np.zeros(0, dtype=np.int8)
    start = cols.event_start_ps.astype(np.int64, copy=False)  # the decoded column itself
    end = np.maximum(cols.event_duration_ps, 0)
    end += start
    names = _EventNames(cols.meta_name, cols.event_meta)
    derived_line = np.asarray([name in DERIVED_LINES for name in cols.line_name], dtype=bool)
    derived = derived_line[cols.event_line] if n else np.zeros(0, dtype=bool)
    table = EventTable(cols, plane_kind, start, end, names, derived)
    if stats:
        read_event_stats(table)
    return table


def read_event_stats(table: EventTable) -> None:
    """Fill the table's stat columns (``codes``, ``ints``, ``has_int``) from its
    file's event stats."""
    cols = table.cols
    n = len(table)
    wanted = set(_TEXT_STATS) | set(_INT_STATS)
    keys = {text: at for at, text in enumerate(cols.strings) if text in wanted}
    code_type = np.int16 if len(cols.strings) < np.iinfo(np.int16).max else np.int32
    row_type = np.int32 if n < 2**31 else np.int64
    seen: list[npt.NDArray[np.signedinteger[Any]]] = []
    for name in _TEXT_STATS:
        owners, at = _owners(cols, _stat_rows(cols, keys.get(name)), _TEXT_KINDS)
        narrow: npt.NDArray[np.signedinteger[Any]] = owners.astype(row_type)
        # Stats of the same events (tf_op, hlo_op, hlo_module) share one array of them.
        narrow = next((o for o in seen if np.array_equal(o, narrow)), narrow)
        if not any(o is narrow for o in seen):
            seen.append(narrow)
        table.codes[name] = EventCodes(n, narrow, cols.event_stats.value[at].astype(code_type))
    for name in _INT_STATS:
        present = np.zeros(n, dtype=bool)
        owners, at = _owners(cols, _stat_rows(cols, keys.get(name)), _INT_KINDS)
        present[owners] = True
        table.has_int[name] = present
        values: I64 = cols.event_stats.value[at].astype(np.int64, copy=False)
        if name in _DENSE_INTS:
            dense = np.zeros(n, dtype=np.int64)
            dense[owners] = values
            table.ints.dense[name] = dense
        else:
            table.ints.sparse[name] = (owners.astype(row_type), values)
