"""XSpace (``*.xplane.pb``) bytes as flat columns: planes, lines, events, stats.

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
  the plane has no metadata of that id), ``event_offset_ps``,
  ``event_occurrences`` (``num_occurrences``, 0 when unset),
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

import gzip
import struct
import zlib
from array import array
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from tfprof_lite.base.reading import read_input, read_input_with
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.proto.xplane_parse import parse_xspace

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
    "columns_from_message",
    "decode_xspace",
    "decode_xspace_file",
    "parse_xspace",
]

I8 = npt.NDArray[np.int8]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]

#: ``StatColumns.kind``: which value field of the XStat was set.
KIND_NONE, KIND_DOUBLE, KIND_UINT64, KIND_INT64 = 0, 1, 2, 3
KIND_STR, KIND_BYTES, KIND_REF, KIND_COMPRESSED = 4, 5, 6, 7

_KINDS = {
    "double_value": KIND_DOUBLE,
    "uint64_value": KIND_UINT64,
    "int64_value": KIND_INT64,
    "str_value": KIND_STR,
    "bytes_value": KIND_BYTES,
    "ref_value": KIND_REF,
    "compressed_str_value": KIND_COMPRESSED,
}
_TASK_ENV = "Task Environment"
_START_STAT = "profile_start_time"
_HALF64 = 1 << 63
_MOD64 = 1 << 64
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
    event_offset_ps: I64 = field(default_factory=_i64)
    event_occurrences: I64 = field(default_factory=_i64)
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

    def event_start_ns(self) -> I64:
        """Every event's absolute start, ns since the epoch."""
        return self.origin_ns + self.event_start_ps // 1000

    def event_plane(self) -> I32:
        """Every event's plane row."""
        return self.line_plane[self.event_line] if len(self.event_line) else _i32()

    def key_of(self, name: str) -> int:
        """The ``strings`` index of ``name``, or -1 when no stat uses it."""
        try:
            return self.strings.index(name)
        except ValueError:
            return -1


class _Builder:
    """The pure walk's state: interned strings and the growing stat tables."""

    def __init__(self, what: str, keep: frozenset[str] | None = None) -> None:
        self.what = what
        self.keep = keep
        self.keep_cache: dict[int, bool] = {}  # stat metadata id -> kept, for this plane
        self.strings: list[str] = [""]
        self.index: dict[str, int] = {"": 0}
        self.blobs: list[bytes] = []
        self.key_cache: dict[int, int] = {}
        # Machine-word arrays, not lists: a large file has tens of millions of
        # stats, and a list costs a pointer and an int object per value.
        self.tables: dict[str, tuple[array[int], array[int], array[int]]] = {
            name: (array("i"), array("b"), array("q")) for name in ("plane", "meta", "event")
        }

    def intern(self, text: str) -> int:
        at = self.index.get(text)
        if at is None:
            at = self.index[text] = len(self.strings)
            self.strings.append(text)
        return at

    def kept(self, stats: Any, names: dict[int, str]) -> Any:
        """The event stats of ``stats`` that the filter keeps."""
        keep, cache = self.keep, self.keep_cache
        if keep is None:
            return stats
        out = []
        for stat in stats:
            mid = stat.metadata_id
            kept = cache.get(mid)
            if kept is None:
                kept = cache[mid] = names.get(mid, "") in keep
            if kept:
                out.append(stat)
        return out

    def add_stats(self, table: str, stats: Any, names: dict[int, str]) -> None:
        keys, kinds, values = self.tables[table]
        cache = self.key_cache  # stat metadata id -> interned name, for this plane
        index = self.index
        for stat in stats:
            which = stat.WhichOneof("value")
            mid = stat.metadata_id
            key = cache.get(mid)
            if key is None:
                key = cache[mid] = self.intern(names.get(mid, ""))
            keys.append(key)
            if which == "int64_value":
                kinds.append(KIND_INT64)
                values.append(stat.int64_value)
            elif which == "str_value":
                text = stat.str_value
                at = index.get(text)
                kinds.append(KIND_STR)
                values.append(self.intern(text) if at is None else at)
            elif which == "ref_value":
                ref = stat.ref_value
                at = cache.get(ref)
                if at is None:
                    at = cache[ref] = self.intern(names.get(ref, ""))
                kinds.append(KIND_REF)
                values.append(at)
            elif which is None:
                kinds.append(KIND_NONE)
                values.append(0)
            else:
                kind = _KINDS[which]
                kinds.append(kind)
                values.append(self._bits(kind, getattr(stat, which), names))

    def _bits(self, kind: int, raw: Any, names: dict[int, str]) -> int:
        if kind == KIND_INT64:
            return int(raw)
        if kind == KIND_UINT64:
            return int(raw) - _MOD64 if raw >= _HALF64 else int(raw)
        if kind == KIND_DOUBLE:
            return int(_BITS.unpack(_DOUBLE.pack(raw))[0])
        if kind == KIND_STR:
            return self.intern(raw)
        if kind == KIND_REF:
            return self.intern(names.get(raw, ""))
        if kind == KIND_BYTES:
            self.blobs.append(bytes(raw))
            return len(self.blobs) - 1
        return self.intern(self._gunzip(raw))

    def _gunzip(self, raw: bytes) -> str:
        try:
            return gzip.decompress(raw).decode("utf-8")
        except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
            raise InvalidInputError(
                f"{self.what}: a compressed string stat does not decompress ({exc}); "
                "the file is corrupt: capture the profile again"
            ) from None

    def stat_columns(self, table: str) -> StatColumns:
        keys, kinds, values = self.tables[table]
        return StatColumns(
            key=_i32(keys), kind=np.asarray(kinds, dtype=np.int8), value=_i64(values)
        )


def _start_time(space: Any) -> int:
    """``profile_start_time`` of the Task Environment plane, 0 when absent."""
    for plane in space.planes:
        if plane.name != _TASK_ENV:
            continue
        names = {key: meta.name for key, meta in plane.stat_metadata.items()}
        for stat in plane.stats:
            if names.get(stat.metadata_id) == _START_STAT:
                which = stat.WhichOneof("value")
                if which in ("uint64_value", "int64_value"):
                    return int(getattr(stat, which))
    return 0


def _line_origins(space: Any, start: int) -> tuple[int, list[int]]:
    """The origin (ns) and, per line in order, its start in ns from the origin."""
    absolute: list[int] = []
    for plane in space.planes:
        for line in plane.lines:
            stamp = line.timestamp_ns
            absolute.append(stamp + start if start and stamp < start else stamp)
    origin = start if start else (min(absolute) if absolute else 0)
    return origin, [value - origin for value in absolute]


def columns_from_message(
    space: Any, what: str = "XSpace", event_stats: Collection[str] | None = None
) -> XSpaceColumns:
    """The columns of a parsed XSpace message (ours, upb backend); with
    ``event_stats``, the event stat table holds only the stats of those names.

    Raises:
        InvalidInputError: a ``compressed_str_value`` that does not gunzip.
    """
    build = _Builder(what, None if event_stats is None else frozenset(event_stats))
    start = _start_time(space)
    origin, line_starts = _line_origins(space, start)
    cols = XSpaceColumns(
        hostnames=list(space.hostnames),
        errors=list(space.errors),
        warnings=list(space.warnings),
        origin_ns=origin,
        relative=bool(start),
    )
    planes: dict[str, list[Any]] = {k: [] for k in ("id", "name", "stat_at")}
    lines: dict[str, list[Any]] = {
        k: [] for k in ("plane", "id", "display", "name", "dname", "ts", "dur", "at")
    }
    events: dict[str, array[int]] = {
        k: array("i" if k in ("line", "meta") else "q")
        for k in ("line", "meta", "offset", "occ", "dur", "start", "stat_at")
    }
    metas: dict[str, list[Any]] = {k: [] for k in ("plane", "id", "name", "dname", "stat_at")}
    smetas: dict[str, list[Any]] = {k: [] for k in ("plane", "id", "name")}
    line_row = 0
    for p_row, plane in enumerate(space.planes):
        names = {key: meta.name for key, meta in plane.stat_metadata.items()}
        build.key_cache, build.keep_cache = {}, {}
        for key in sorted(names):
            smetas["plane"].append(p_row)
            smetas["id"].append(key)
            smetas["name"].append(names[key])
        planes["id"].append(plane.id)
        planes["name"].append(plane.name)
        planes["stat_at"].append(len(build.tables["plane"][0]))
        build.add_stats("plane", plane.stats, names)
        meta_rows = _add_metadata(build, metas, plane, p_row, names)
        for line in plane.lines:
            _add_line(lines, line, p_row, len(events["line"]))
            try:  # the event columns are int64 arrays: a start past 64 bits overflows
                _add_events(
                    build, events, line, line_row, line_starts[line_row] * 1000, meta_rows, names
                )
            except OverflowError:
                raise _beyond_64_bits(what) from None
            line_row += 1
    try:
        _fill(cols, build, planes, lines, events, metas, smetas)
    except OverflowError:
        raise _beyond_64_bits(what) from None
    return cols


def _beyond_64_bits(what: str) -> InvalidInputError:
    return InvalidInputError(
        f"{what}: event times beyond 64 bits of picoseconds; the file is corrupt"
    )


def _add_metadata(
    build: _Builder, metas: dict[str, list[Any]], plane: Any, p_row: int, names: dict[int, str]
) -> dict[int, int]:
    """Append plane ``p_row``'s event metadata (sorted by id); their row by id."""
    rows: dict[int, int] = {}
    entries = plane.event_metadata
    for key in sorted(entries):
        meta = entries[key]
        rows[key] = len(metas["id"])
        metas["plane"].append(p_row)
        metas["id"].append(key)
        metas["name"].append(meta.name)
        metas["dname"].append(meta.display_name)
        metas["stat_at"].append(len(build.tables["meta"][0]))
        build.add_stats("meta", meta.stats, names)
    return rows


def _add_line(lines: dict[str, list[Any]], line: Any, p_row: int, first_event: int) -> None:
    lines["plane"].append(p_row)
    lines["id"].append(line.id)
    lines["display"].append(line.display_id)
    lines["name"].append(line.name)
    lines["dname"].append(line.display_name)
    lines["ts"].append(line.timestamp_ns)
    lines["dur"].append(line.duration_ps)
    lines["at"].append(first_event)


def _add_events(
    build: _Builder,
    events: dict[str, array[int]],
    line: Any,
    line_row: int,
    base_ps: int,
    meta_rows: dict[int, int],
    names: dict[int, str],
) -> None:
    """Append the events of ``line`` (row ``line_row``, starting ``base_ps`` from the origin)."""
    e_line, e_meta, e_off = events["line"], events["meta"], events["offset"]
    e_occ, e_dur, e_start, e_at = events["occ"], events["dur"], events["start"], events["stat_at"]
    stat_keys = build.tables["event"][0]
    get_row = meta_rows.get
    add_stats = build.add_stats
    for event in line.events:
        offset = event.offset_ps
        e_line.append(line_row)
        e_meta.append(get_row(event.metadata_id, -1))
        e_off.append(offset)
        e_occ.append(event.num_occurrences)
        e_dur.append(event.duration_ps)
        e_start.append(base_ps + offset)
        e_at.append(len(stat_keys))
        if event.stats:
            add_stats("event", build.kept(event.stats, names), names)


def _offsets(starts: list[Any] | array[int], total: int) -> I64:
    out = np.empty(len(starts) + 1, dtype=np.int64)
    out[:-1] = starts
    out[-1] = total
    return out


def _fill(
    cols: XSpaceColumns,
    build: _Builder,
    planes: dict[str, list[Any]],
    lines: dict[str, list[Any]],
    events: dict[str, array[int]],
    metas: dict[str, list[Any]],
    smetas: dict[str, list[Any]],
) -> None:
    """Move the walk's lists into ``cols`` as arrays."""
    cols.strings, cols.blobs = build.strings, build.blobs
    cols.plane_id, cols.plane_name = _i64(planes["id"]), planes["name"]
    cols.plane_stat_at = _offsets(planes["stat_at"], len(build.tables["plane"][0]))
    cols.plane_stats = build.stat_columns("plane")
    cols.line_plane, cols.line_id = _i32(lines["plane"]), _i64(lines["id"])
    cols.line_display_id = _i64(lines["display"])
    cols.line_name, cols.line_display_name = lines["name"], lines["dname"]
    cols.line_timestamp_ns, cols.line_duration_ps = _i64(lines["ts"]), _i64(lines["dur"])
    cols.line_event_at = _offsets(lines["at"], len(events["line"]))
    cols.event_line, cols.event_meta = _i32(events["line"]), _i32(events["meta"])
    cols.event_offset_ps, cols.event_occurrences = _i64(events["offset"]), _i64(events["occ"])
    cols.event_duration_ps, cols.event_start_ps = _i64(events["dur"]), _i64(events["start"])
    cols.event_stat_at = _offsets(events["stat_at"], len(build.tables["event"][0]))
    cols.event_stats = build.stat_columns("event")
    cols.meta_plane, cols.meta_id = _i32(metas["plane"]), _i64(metas["id"])
    cols.meta_name, cols.meta_display_name = metas["name"], metas["dname"]
    cols.meta_stat_at = _offsets(metas["stat_at"], len(build.tables["meta"][0]))
    cols.meta_stats = build.stat_columns("meta")
    cols.stat_meta_plane, cols.stat_meta_id = _i32(smetas["plane"]), _i64(smetas["id"])
    cols.stat_meta_name = smetas["name"]


def decode_xspace(
    raw: bytes | bytearray | memoryview,
    what: str = "XSpace",
    event_stats: Collection[str] | None = None,
) -> XSpaceColumns:
    """The columns of XSpace ``raw`` (``what`` names it in errors), natively when built.

    ``event_stats``: when given, the event stat table holds only the stats of
    these names (their stat metadata's; ``""`` for a stat without one), and only
    their string values are interned: a large file's other event stats (most of
    them) take no memory. The other tables are whole.

    Raises:
        InvalidInputError: see :func:`parse_xspace`, :func:`columns_from_message`;
            an event start beyond int64 picoseconds from the origin."""
    from tfprof_lite.proto.xplane_native import native_columns

    data = raw if isinstance(raw, bytes) else bytes(raw)
    keep = None if event_stats is None else tuple(sorted(set(event_stats)))
    return native_columns(data, keep) or columns_from_message(parse_xspace(data, what), what, keep)


def decode_xspace_file(
    path: str,
    what: str = "an XSpace (*.xplane.pb)",
    event_stats: Collection[str] | None = None,
    limit: int | str | None = None,
) -> XSpaceColumns:
    """:func:`decode_xspace` of the user file ``path`` (``what`` it should be),
    read through the bounded reader (:func:`~tfprof_lite.base.reading.read_input_with`:
    its checks, ``limit`` and messages). The native decoder reads the file into
    memory that it gives back as the columns grow, so its peak is about the larger
    of the file and the columns, not their sum; when it declines, the file is read
    again for the pure path.

    Raises:
        InvalidInputError: see :func:`decode_xspace` and
            :func:`~tfprof_lite.base.reading.read_input`; an empty file.
    """
    from tfprof_lite.proto.xplane_native import available, native_file_columns

    keep = None if event_stats is None else tuple(sorted(set(event_stats)))

    def native(fd: int, size: int) -> XSpaceColumns | None:
        if not size:
            raise InvalidInputError(f"{path}: the file is empty, expected {what}")
        return native_file_columns(fd, size, keep)

    if available():
        cols = read_input_with(path, native, what, limit)
        if cols is not None:
            return cols
    raw = read_input(path, what, limit)
    if not raw:
        raise InvalidInputError(f"{path}: the file is empty, expected {what}")
    return columns_from_message(parse_xspace(raw, path), path, keep)
