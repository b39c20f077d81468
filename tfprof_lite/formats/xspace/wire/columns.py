"""The flat columns an XSpace (``*.xplane.pb``) is read into: planes, lines, events, stats.

The decoders (:mod:`tfprof_lite.formats.xspace.wire.decode`) fill them.

An XSpace is what TensorFlow 2's, Keras' and JAX's profilers write: planes (a
host's threads, each device's streams, metadata), lines (one thread or stream),
events (an interval on a line, pointing at shared event metadata) and stats
(named values; the name is a stat metadata's). :class:`XSpaceColumns` holds a
whole file as NumPy columns and string tables, in an order fixed by the bytes
alone, so a native decoder can fill the same columns (``docs/xspace.md``).

Tables (rows in wire order unless said otherwise):

* ``strings``: every distinct string value a stat column refers to, interned;
  ``strings[0] == ""``. ``blobs``: the ``bytes_value`` payloads, in order.
* planes: ``plane_id``, ``plane_name``; their stats in ``plane_stats`` rows
  ``plane_stat_at[p]:plane_stat_at[p + 1]``.
* lines: ``line_plane`` (plane row), ``line_id``, ``line_display_id``,
  ``line_name``, ``line_display_name``, ``line_timestamp_ns`` (as stored),
  ``line_duration_ps``; events ``line_event_at[l]:line_event_at[l + 1]``.
* events: ``event_line`` (line row), ``event_meta`` (event metadata row, -1 when
  the plane has no metadata of that id), ``event_occurrence_rows`` and
  ``event_occurrence_counts`` (the events whose ``num_occurrences`` is not 0,
  and those counts: it is rarely set; :attr:`XSpaceColumns.event_occurrences`
  is the full column),
  ``event_duration_ps``, ``event_start_ps`` (start from :attr:`origin_ns`, in
  ps, whichever timestamp convention the file uses); stats in ``event_stats``
  rows ``event_stat_at[e]:event_stat_at[e + 1]``.
* event metadata, per plane sorted by id (the map's key; the last entry of a
  key wins): ``meta_plane``, ``meta_id``, ``meta_name``, ``meta_display_name``;
  stats in ``meta_stats`` rows ``meta_stat_at[m]:meta_stat_at[m + 1]``.
* stat metadata, per plane sorted by id: ``stat_meta_plane``, ``stat_meta_id``,
  ``stat_meta_name``.

A stat row (:class:`StatColumns`) is ``key`` (index into ``strings``: the stat
metadata's name, ``""`` when the plane has none of that id), ``kind`` (one of
the ``KIND_*`` constants: which value field was set) and ``value``, 64 bits
whose meaning follows the kind: the int64; the uint64's bits; the double's
bits; for ``str``, ``ref`` (resolved to the referenced stat metadata's *name*)
and ``compressed_str`` (gunzipped) an index into ``strings``; for ``bytes`` an
index into ``blobs``. :meth:`XSpaceColumns.stat_value` gives the Python value.

Timestamps: newer writers store line times relative to the ``Task Environment``
plane's ``profile_start_time`` stat, older ones since the epoch. A line whose
``timestamp_ns`` is below a present ``profile_start_time`` is relative to it;
otherwise absolute. :attr:`XSpaceColumns.origin_ns` is ``profile_start_time``
when there is one, else the earliest line start; the absolute start of event
``e`` in ns is ``origin_ns + event_start_ps[e] // 1000``
(:meth:`XSpaceColumns.event_start_ns`).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "KIND_BYTES",
    "KIND_COMPRESSED",
    "KIND_DOUBLE",
    "KIND_INT64",
    "KIND_NONE",
    "KIND_REF",
    "KIND_STR",
    "KIND_UINT64",
    "StatColumns",
    "XSpaceColumns",
]

I8 = npt.NDArray[np.int8]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]

#: ``StatColumns.kind``: which value field of the XStat was set.
KIND_NONE, KIND_DOUBLE, KIND_UINT64, KIND_INT64 = 0, 1, 2, 3
KIND_STR, KIND_BYTES, KIND_REF, KIND_COMPRESSED = 4, 5, 6, 7

_MOD64 = 1 << 64
_HALF64 = 1 << 63
_DOUBLE = struct.Struct("<d")
_BITS = struct.Struct("<q")


def _i32(values: Any = ()) -> I32:
    return np.asarray(values, dtype=np.int32).reshape(-1)


def _i64(values: Any = ()) -> I64:
    return np.asarray(values, dtype=np.int64).reshape(-1)


@dataclass
class StatColumns:
    """Stat rows: name (``key``), which value (``kind``) and the value's bits."""

    key: I32 = field(default_factory=_i32)
    kind: I8 = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    value: I64 = field(default_factory=_i64)

    def __len__(self) -> int:
        return len(self.key)


def _zeros(n: int) -> I64:
    """``n`` zeros in no memory (a read-only view of one zero)."""
    return np.broadcast_to(np.zeros(1, dtype=np.int64), (n,))


@dataclass
class XSpaceColumns:
    """One XSpace in columns (see the module docstring for every column)."""

    strings: list[str] = field(default_factory=lambda: [""])
    blobs: list[bytes] = field(default_factory=list)
    hostnames: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    origin_ns: int = 0
    relative: bool = False
    plane_id: I64 = field(default_factory=_i64)
    plane_name: list[str] = field(default_factory=list)
    plane_stat_at: I64 = field(default_factory=lambda: _i64([0]))
    plane_stats: StatColumns = field(default_factory=StatColumns)
    line_plane: I32 = field(default_factory=_i32)
    line_id: I64 = field(default_factory=_i64)
    line_display_id: I64 = field(default_factory=_i64)
    line_name: list[str] = field(default_factory=list)
    line_display_name: list[str] = field(default_factory=list)
    line_timestamp_ns: I64 = field(default_factory=_i64)
    line_duration_ps: I64 = field(default_factory=_i64)
    line_event_at: I64 = field(default_factory=lambda: _i64([0]))
    event_line: I32 = field(default_factory=_i32)
    event_meta: I32 = field(default_factory=_i32)
    event_occurrence_rows: I32 = field(default_factory=_i32)
    event_occurrence_counts: I64 = field(default_factory=_i64)
    event_duration_ps: I64 = field(default_factory=_i64)
    event_start_ps: I64 = field(default_factory=_i64)
    event_stat_at: I64 = field(default_factory=lambda: _i64([0]))
    event_stats: StatColumns = field(default_factory=StatColumns)
    meta_plane: I32 = field(default_factory=_i32)
    meta_id: I64 = field(default_factory=_i64)
    meta_name: list[str] = field(default_factory=list)
    meta_display_name: list[str] = field(default_factory=list)
    meta_stat_at: I64 = field(default_factory=lambda: _i64([0]))
    meta_stats: StatColumns = field(default_factory=StatColumns)
    stat_meta_plane: I32 = field(default_factory=_i32)
    stat_meta_id: I64 = field(default_factory=_i64)
    stat_meta_name: list[str] = field(default_factory=list)

    def stat_value(self, stats: StatColumns, row: int) -> Any:
        """The Python value of stat row ``row`` of ``stats`` (None for no value)."""
        kind, bits = int(stats.kind[row]), int(stats.value[row])
        if kind in (KIND_INT64, KIND_NONE):
            return bits if kind == KIND_INT64 else None
        if kind == KIND_UINT64:
            return bits % _MOD64
        if kind == KIND_DOUBLE:
            return _DOUBLE.unpack(_BITS.pack(bits))[0]
        if kind == KIND_BYTES:
            return self.blobs[bits]
        return self.strings[bits]

    def stats_of(self, stats: StatColumns, at: I64, row: int) -> dict[str, Any]:
        """The stats of owner ``row`` (``at`` = its offsets) as ``{name: value}``."""
        return {
            self.strings[int(stats.key[i])]: self.stat_value(stats, i)
            for i in range(int(at[row]), int(at[row + 1]))
        }

    def event_stat_dict(self, event: int) -> dict[str, Any]:
        """Event ``event``'s own stats as ``{name: value}``."""
        return self.stats_of(self.event_stats, self.event_stat_at, event)

    def plane_stat_dict(self, plane: int) -> dict[str, Any]:
        """Plane ``plane``'s stats as ``{name: value}``."""
        return self.stats_of(self.plane_stats, self.plane_stat_at, plane)

    def meta_stat_dict(self, meta: int) -> dict[str, Any]:
        """Event metadata row ``meta``'s stats as ``{name: value}``."""
        return self.stats_of(self.meta_stats, self.meta_stat_at, meta)

    def event_name(self, event: int) -> str:
        """The name of event ``event`` (its metadata's; ``""`` without metadata)."""
        meta = int(self.event_meta[event])
        return self.meta_name[meta] if meta >= 0 else ""

    @property
    def event_occurrences(self) -> I64:
        """Every event's ``num_occurrences`` (0 when unset), made on each call."""
        out = np.zeros(len(self.event_line), dtype=np.int64)
        out[self.event_occurrence_rows] = self.event_occurrence_counts
        return out

    @property
    def event_offset_ps(self) -> I64:
        """Every event's ``offset_ps`` (0 where ``num_occurrences`` is set), made
        on each call: its start less its line's (both from the origin)."""
        lines = self.line_start_ps()
        return self.event_start_ps - lines[self.event_line] if len(lines) else _i64()

    def line_start_ps(self) -> I64:
        """Every line's start from :attr:`origin_ns` in ps, modulo 2^64 (a line
        whose start does not fit has no event, or the file would be refused)."""
        start = self.origin_ns if self.relative else 0
        out = []
        for stamp in self.line_timestamp_ns.tolist():
            ps = ((stamp + start if start and stamp < start else stamp) - self.origin_ns) * 1000
            out.append((ps + _HALF64) % _MOD64 - _HALF64)
        return _i64(out)

    def event_start_ns(self) -> I64:
        """Every event's absolute start, ns since the epoch."""
        return self.origin_ns + self.event_start_ps // 1000

    def event_plane(self) -> I32:
        """Every event's plane row."""
        return self.line_plane[self.event_line] if len(self.event_line) else _i32()

    def drop_event_stats(self) -> None:
        """Let go of the event stats (for an owner that has read what it needs
        of them): no event has a stat from here on."""
        self.event_stats = StatColumns()
        self.event_stat_at = _zeros(len(self.event_line) + 1)

    def drop_event_durations(self) -> None:
        """Let go of the event durations (as :meth:`drop_event_stats`): every
        event lasts 0 from here on."""
        self.event_duration_ps = _zeros(len(self.event_line))

    def key_of(self, name: str) -> int:
        """The ``strings`` index of ``name``, or -1 when no stat uses it."""
        try:
            return self.strings.index(name)
        except ValueError:
            return -1
