"""The pure path's walk: a parsed XSpace into its columns
(:class:`~tfprof_lite.formats.xspace.wire.columns.XSpaceColumns`).

:func:`walk` fills the columns from an XSpace message (protobuf's parse of the
whole file), in the order the module docstring of :mod:`tfprof_lite.formats.xspace.wire.decode`
fixes. :func:`walk_bytes` gives the same columns for the bytes of a file
while holding only one line's message at a time: the XSpace and each plane are
split at their ``planes`` and ``lines`` records (a short walk over the wire
format), the rest of each is parsed as its own message and each line is parsed
when the walk reaches it. Protobuf reads the pieces as it reads the whole
(repeated fields are concatenated records; every other field keeps its order
within its message), and every piece goes through the checks
:func:`~tfprof_lite.formats.xspace.wire.parse.parse_xspace` makes of the whole (a known
field with another wire type, a named plane). Anything unusual in the bytes (a
piece that does not parse or fails those checks, groups, an error raised while
walking) sends them to the whole-message parse instead, so the result or the
error is that of :func:`~tfprof_lite.formats.xspace.wire.decode.decode_xspace`'s pure path.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from array import array
from collections.abc import Collection, Iterator
from typing import Any

import numpy as np

from tfprof_lite.errors import InvalidInputError
from tfprof_lite.formats.xspace.wire.columns import (
    I64,
    KIND_BYTES,
    KIND_COMPRESSED,
    KIND_DOUBLE,
    KIND_INT64,
    KIND_NONE,
    KIND_REF,
    KIND_STR,
    KIND_UINT64,
    StatColumns,
    XSpaceColumns,
    _i32,
    _i64,
)
from tfprof_lite.formats.xspace.wire.parse import parse_xspace

__all__ = ["walk", "walk_bytes"]

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


def _origin(space: Any, start: int) -> int:
    """The origin (ns): ``start`` when set, else the earliest line timestamp (0
    without lines; the lines are read only then)."""
    if start:
        return start
    return min((line.timestamp_ns for plane in space.planes for line in plane.lines), default=0)


def _line_start(line: Any, start: int, origin: int) -> int:
    """The start of ``line`` in ns from the origin (relative to ``start`` when its
    timestamp is below a set ``start``, else absolute)."""
    stamp = int(line.timestamp_ns)
    return (stamp + start if start and stamp < start else stamp) - origin


def walk(space: Any, what: str, event_stats: Collection[str] | None) -> XSpaceColumns:
    """:func:`tfprof_lite.formats.xspace.wire.decode.columns_from_message`: ``space`` is an XSpace
    message or a :class:`_SplitSpace` (anything with the same attributes)."""
    build = _Builder(what, None if event_stats is None else frozenset(event_stats))
    start = _start_time(space)
    origin = _origin(space, start)
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
        k: array("i" if k in ("line", "meta", "occ_row") else "q")
        for k in ("line", "meta", "occ_row", "occ", "dur", "start", "stat_at")
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
                base_ps = _line_start(line, start, origin) * 1000
                _add_events(build, events, line, line_row, base_ps, meta_rows, names)
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
    e_line, e_meta, e_occ_row = events["line"], events["meta"], events["occ_row"]
    e_occ, e_dur, e_start, e_at = events["occ"], events["dur"], events["start"], events["stat_at"]
    stat_keys = build.tables["event"][0]
    get_row = meta_rows.get
    add_stats = build.add_stats
    for event in line.events:
        offset = event.offset_ps
        e_line.append(line_row)
        e_meta.append(get_row(event.metadata_id, -1))
        occurrences = event.num_occurrences
        if occurrences:
            e_occ_row.append(len(e_line) - 1)
            e_occ.append(occurrences)
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
    cols.event_occurrence_rows = _i32(events["occ_row"])
    cols.event_occurrence_counts = _i64(events["occ"])
    cols.event_duration_ps, cols.event_start_ps = _i64(events["dur"]), _i64(events["start"])
    cols.event_stat_at = _offsets(events["stat_at"], len(build.tables["event"][0]))
    cols.event_stats = build.stat_columns("event")
    cols.meta_plane, cols.meta_id = _i32(metas["plane"]), _i64(metas["id"])
    cols.meta_name, cols.meta_display_name = metas["name"], metas["dname"]
    cols.meta_stat_at = _offsets(metas["stat_at"], len(build.tables["meta"][0]))
    cols.meta_stats = build.stat_columns("meta")
    cols.stat_meta_plane, cols.stat_meta_id = _i32(smetas["plane"]), _i64(smetas["id"])
    cols.stat_meta_name = smetas["name"]


# ------------------------------------------------------------------ split parse
_PLANES, _LINES = 1, 3  # XSpace.planes, XPlane.lines
_LEN = 2  # the length-delimited wire type


class _Unusual(Exception):
    """Bytes the split parse leaves to the whole-message parse."""


def _varint(data: memoryview, pos: int, end: int, most: int = 10) -> tuple[int, int]:
    """The varint at ``pos`` (at most ``most`` bytes) and the position after it."""
    value = shift = 0
    for _ in range(most):
        if pos >= end:
            break
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            if value >= 1 << 64:
                break
            return value, pos
        shift += 7
    raise _Unusual


def _fields(data: memoryview, pos: int, end: int) -> Iterator[tuple[int, int, int, int, int]]:
    """(field number, wire type, start, start of the payload, end) of each record
        of ``data[pos:end]``. Stricter than protobuf where they differ (a tag of more
    than 2 bytes, a length of more than 5): such bytes go to the whole parse."""
    while pos < end:
        key, at = _varint(data, pos, end, 2)  # protobuf's own tags take 1 or 2 bytes
        number, wire = key >> 3, key & 7
        if not number:
            raise _Unusual
        if wire == 0:
            _, after = _varint(data, at, end)
        elif wire == 1 or wire == 5:
            after = at + (8 if wire == 1 else 4)
        elif wire == _LEN:
            size, at = _varint(data, at, end, 5)  # a length is a 32-bit varint
            after = at + size
        else:  # groups
            raise _Unusual
        if after > end:
            raise _Unusual
        yield number, wire, pos, at, after
        pos = after


def _parsed(kind: str, data: bytes | memoryview) -> Any:
    """``data`` as a message of ``kind`` that passes parse_xspace's wire-type check."""
    from tfprof_lite.proto import kinds, messages

    message = getattr(messages, kind)()
    try:
        message.ParseFromString(data)
    except Exception:  # noqa: BLE001 - protobuf's DecodeError and friends
        raise _Unusual from None
    if kinds.mismatched(message):
        raise _Unusual
    return message


class _SplitPlane:
    """A plane: its fields but the lines (one message) and its lines' bytes, each
    parsed when asked for."""

    def __init__(self, head: Any, data: memoryview, spans: list[tuple[int, int]]) -> None:
        self.head = head
        self.data = data
        self.spans = spans

    def __getattr__(self, name: str) -> Any:
        return getattr(self.head, name)

    @property
    def lines(self) -> Iterator[Any]:
        """The lines, parsed one by one."""
        return (_parsed("XLine", self.data[low:high]) for low, high in self.spans)


class _SplitSpace:
    """An XSpace split into its fields but the planes (one message) and its planes."""

    def __init__(self, head: Any, planes: list[_SplitPlane]) -> None:
        self.hostnames, self.errors, self.warnings = head.hostnames, head.errors, head.warnings
        self.planes = planes


def _split(
    data: memoryview, pos: int, end: int, number: int
) -> tuple[bytes, list[tuple[int, int]]]:
    """The records of ``data[pos:end]`` but the length-delimited ``number`` ones,
    and the payload spans of those."""
    rest = bytearray()
    spans: list[tuple[int, int]] = []
    last = pos
    for field, wire, start, payload, after in _fields(data, pos, end):
        if field == number and wire == _LEN:
            rest += data[last:start]
            spans.append((payload, after))
            last = after
    rest += data[last:end]
    return bytes(rest), spans


def _split_space(raw: bytes) -> _SplitSpace:
    data = memoryview(raw)
    rest, plane_spans = _split(data, 0, len(data), _PLANES)
    planes = []
    for low, high in plane_spans:
        plane_rest, line_spans = _split(data, low, high, _LINES)
        planes.append(_SplitPlane(_parsed("XPlane", plane_rest), data, line_spans))
    if not any(plane.name for plane in planes):
        raise _Unusual
    return _SplitSpace(_parsed("XSpace", rest), planes)


def walk_bytes(raw: bytes, what: str, event_stats: Collection[str] | None) -> XSpaceColumns:
    """The pure path's columns of XSpace ``raw`` (what ``parse_xspace`` and
    :func:`walk` give), holding one line's message at a time (module docstring).

    Raises:
        InvalidInputError: as :func:`~tfprof_lite.formats.xspace.wire.parse.parse_xspace`
            and :func:`walk`.
    """
    try:
        return walk(_split_space(raw), what, event_stats)
    except (_Unusual, InvalidInputError):
        return walk(parse_xspace(raw, what), what, event_stats)
