"""The compiled programs an XSpace carries, read without decoding its events.

Contract: :func:`hlo_programs` walks serialized ``XSpace`` bytes at the wire
level and returns, for every event metadata of each ``/host:metadata`` plane
that has an ``Hlo Proto`` stat, ``(program_id, name, HloProto bytes)``:
``program_id`` from its ``program_id`` stat (None without one), ``name`` the
metadata's name without its ``(<id>)`` suffix (the module's name, as
:func:`tfprof_lite.formats.xspace.read.xla.hlo_names` gives it). Every other plane's
lines are skipped by their length, so a large file costs a few milliseconds and
no NumPy. Field numbers are those of ``xplane.proto``: ``XSpace.planes`` = 1;
``XPlane.name`` = 2, ``event_metadata`` = 4 (a map: key 1, value 2),
``stat_metadata`` = 5; ``XEventMetadata.name`` = 2, ``stats`` = 5;
``XStatMetadata.name`` = 2; ``XStat.metadata_id`` = 1, ``int64_value`` = 4,
``uint64_value`` = 3, ``bytes_value`` = 6.

Raises :class:`~tfprof_lite.errors.InvalidInputError` (naming ``what``) on bytes
that are not a well-formed message at the wire level.
"""

from __future__ import annotations

from tfprof_lite.errors import InvalidInputError

__all__ = ["METADATA_PLANE", "hlo_programs"]

#: The plane whose event metadata hold the programs.
METADATA_PLANE = "/host:metadata"

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


class _Malformed(ValueError):
    """The bytes end inside a field, or hold a wire type this reader refuses."""


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise _Malformed("a varint runs past the end")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _fields(data: bytes, start: int = 0, end: int | None = None) -> list[tuple[int, int, object]]:
    """``(field number, wire type, value)`` of each field in ``data[start:end]``:
    an int for varints and fixed fields, a ``(begin, end)`` span for the others."""
    stop = len(data) if end is None else end
    out: list[tuple[int, int, object]] = []
    at = start
    while at < stop:
        key, at = _varint(data, at)
        number, kind = key >> 3, key & 7
        if kind == _VARINT:
            value, at = _varint(data, at)
            out.append((number, kind, value))
        elif kind == _LEN:
            size, at = _varint(data, at)
            if at + size > stop:
                raise _Malformed("a field runs past the end")
            out.append((number, kind, (at, at + size)))
            at += size
        elif kind in (_I64, _I32):
            width = 8 if kind == _I64 else 4
            if at + width > stop:
                raise _Malformed("a fixed field runs past the end")
            out.append((number, kind, int.from_bytes(data[at : at + width], "little")))
            at += width
        else:
            raise _Malformed(f"wire type {kind}")
    return out


def _span(value: object) -> tuple[int, int]:
    if not isinstance(value, tuple):
        raise _Malformed("a message field is not length-delimited")
    return value


def _text(data: bytes, value: object) -> str:
    begin, end = _span(value)
    return data[begin:end].decode("utf-8", "replace")


def _map_values(data: bytes, entries: list[object]) -> list[tuple[int, int]]:
    """The value spans of map entries (key 1, value 2)."""
    out = []
    for entry in entries:
        begin, end = _span(entry)
        for number, _, value in _fields(data, begin, end):
            if number == 2:
                out.append(_span(value))
    return out


def _stat_names(data: bytes, entries: list[object]) -> dict[int, str]:
    names: dict[int, str] = {}
    for begin, end in _map_values(data, entries):
        found = {n: v for n, _, v in _fields(data, begin, end)}
        key = found.get(1, 0)
        names[key if isinstance(key, int) else 0] = _text(data, found[2]) if 2 in found else ""
    return names


def _program(data: bytes, span: tuple[int, int], names: dict[int, str]) -> tuple[
    int | None, str, bytes
] | None:  # fmt: skip
    name, hlo, program = "", None, None
    for number, _, value in _fields(data, *span):
        if number == 2:
            name = _text(data, value)
        elif number == 5:
            stat = {n: v for n, _, v in _fields(data, *_span(value))}
            meta_id = stat.get(1, 0)
            kind = names.get(meta_id, "") if isinstance(meta_id, int) else ""
            if kind == "Hlo Proto" and 6 in stat:
                begin, end = _span(stat[6])
                hlo = data[begin:end]
            elif kind == "program_id":
                raw = stat.get(4, stat.get(3))
                if isinstance(raw, int):
                    program = raw - (1 << 64) if raw >= 1 << 63 else raw
    if hlo is None:
        return None
    if name.endswith(")") and "(" in name:
        name = name[: name.rindex("(")]
    return program, name, hlo


def hlo_programs(data: bytes, what: str = "XSpace") -> list[tuple[int | None, str, bytes]]:
    """``(program_id, name, HloProto bytes)`` of every program in ``data``
    (see the module docstring)."""
    try:
        out = []
        for number, _, plane in _fields(data):
            if number != 1:
                continue
            fields = _fields(data, *_span(plane))
            name = next((_text(data, v) for n, _, v in fields if n == 2), "")
            if name != METADATA_PLANE:
                continue
            stats = _stat_names(data, [v for n, _, v in fields if n == 5])
            for span in _map_values(data, [v for n, _, v in fields if n == 4]):
                found = _program(data, span, stats)
                if found is not None:
                    out.append(found)
        return out
    except _Malformed as err:
        raise InvalidInputError(
            f"{what}: not a readable XSpace ({err}); pass the *.xplane.pb the profiler wrote"
        ) from None
