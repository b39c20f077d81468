"""An index of every field of a serialized protobuf message, and span edits on it.

:func:`index_message` walks the wire format once, guided by a message descriptor (a
length-delimited field whose schema type is a message is walked into), and records
each field's byte span. :func:`apply_edits` replaces the spans of some fields with
new bytes and rewrites the length prefix of every enclosing message, so an edit deep
inside a file keeps the rest of it valid. Indexing a seed once and editing spans is
what keeps the mutator fast on 100 kB files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

__all__ = [
    "I32",
    "I64",
    "LEN",
    "VARINT",
    "FieldSpan",
    "MessageIndex",
    "apply_edits",
    "encode_varint",
    "index_message",
    "read_varint",
]

VARINT, I64, LEN, I32 = 0, 1, 2, 5
_MASK64 = (1 << 64) - 1
_MAX_DEPTH = 40
# FieldDescriptor.TYPE_* values of the integer kinds that proto3 packs when repeated.
_PACKABLE_VARINT_TYPES = frozenset({3, 4, 5, 8, 13, 14, 17, 18})  # int64 .. sint64, enum
_STRING_TYPES = frozenset({9, 12})  # string, bytes
_MESSAGE_TYPE = 11


@dataclass(frozen=True)
class FieldSpan:
    """Where one field is in the file.

    Attributes:
        start: offset of the field's key.
        value_start: offset of its value (after the length prefix for ``LEN``).
        end: offset just past the field.
        number: the field number.
        wire: the wire type.
        name: the schema's full field name, or ``#<number>`` when unknown.
        parent: index of the enclosing ``LEN`` field in ``MessageIndex.fields``, -1 at
            the top level.
        kind: ``"message"``, ``"packed"``, ``"string"`` or ``""``.
    """

    start: int
    value_start: int
    end: int
    number: int
    wire: int
    name: str
    parent: int
    kind: str


@dataclass
class MessageIndex:
    """Every field of one serialized message, and the fields grouped by schema name."""

    data: bytes
    fields: list[FieldSpan] = field(default_factory=list)
    by_name: dict[str, list[int]] = field(default_factory=dict)
    _groups: dict[str, list[list[int]]] = field(default_factory=dict, repr=False)

    def groups(self, category: str) -> list[list[int]]:
        """Field positions grouped by schema name, for the fields of one category:
        ``int`` (varint, fixed or packed integers), ``varint``, ``len``, ``string``
        or ``any``."""
        found = self._groups.get(category)
        if found is None:
            keep = _CATEGORIES[category]
            found = []
            for name in sorted(self.by_name):
                positions = [i for i in self.by_name[name] if keep(self.fields[i])]
                if positions:
                    found.append(positions)
            self._groups[category] = found
        return found

    def siblings(self, position: int) -> list[int]:
        """Positions of the fields in the same message as field ``position``."""
        parent = self.fields[position].parent
        return [i for i, span in enumerate(self.fields) if span.parent == parent]

    def key_bytes(self, index: int) -> bytes:
        """The key (tag) bytes of field ``index``."""
        span = self.fields[index]
        return encode_varint(span.number << 3 | span.wire)

    def value_bytes(self, index: int) -> bytes:
        """The value of field ``index`` (the payload, for ``LEN``)."""
        span = self.fields[index]
        return self.data[span.value_start : span.end]

    def field_bytes(self, index: int) -> bytes:
        """The whole encoded field ``index``."""
        span = self.fields[index]
        return self.data[span.start : span.end]

    def ancestors(self, index: int) -> list[int]:
        """Indexes of the fields enclosing field ``index``, innermost first."""
        found = []
        parent = self.fields[index].parent
        while parent >= 0:
            found.append(parent)
            parent = self.fields[parent].parent
        return found


_CATEGORIES: dict[str, Callable[[FieldSpan], bool]] = {
    "int": lambda f: f.wire in (VARINT, I64, I32) or f.kind == "packed",
    "varint": lambda f: f.wire == VARINT,
    "len": lambda f: f.wire == LEN,
    "string": lambda f: f.kind == "string",
    "any": lambda f: True,
}


def encode_varint(value: int) -> bytes:
    """The varint encoding of ``value`` (negative numbers as their 64-bit two's complement)."""
    value &= _MASK64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """``(value, next position)`` of the varint at ``pos``; ValueError if malformed."""
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("bad varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return result & _MASK64, pos


def _value_end(data: bytes, wire: int, pos: int, limit: int) -> tuple[int, int]:
    """``(value start, value end)`` of a field whose key ends at ``pos``."""
    if wire == VARINT:
        return pos, read_varint(data, pos)[1]
    if wire in (I64, I32):
        end = pos + (8 if wire == I64 else 4)
    elif wire == LEN:
        size, pos = read_varint(data, pos)
        end = pos + size
    else:
        raise ValueError(f"unsupported wire type {wire}")
    if end > limit:
        raise ValueError("truncated field")
    return pos, end


def _kind(desc: Any, wire: int) -> str:
    if desc is None or wire != LEN:
        return ""
    if desc.type == _MESSAGE_TYPE:
        return "message"
    if desc.type in _PACKABLE_VARINT_TYPES:
        return "packed"
    return "string" if desc.type in _STRING_TYPES else ""


def _walk(
    index: MessageIndex, start: int, limit: int, message: Any, parent: int, depth: int
) -> bool:
    """Index the fields in ``data[start:limit]``; False (nothing kept) if malformed."""
    data, first = index.data, len(index.fields)
    pos = start
    try:
        while pos < limit:
            key, value_pos = read_varint(data, pos)
            number, wire = key >> 3, key & 7
            if number == 0:
                raise ValueError("field number 0")
            value_start, end = _value_end(data, wire, value_pos, limit)
            desc = message.fields_by_number.get(number) if message is not None else None
            name = desc.full_name if desc is not None else f"#{number}"
            kind = _kind(desc, wire)
            index.fields.append(FieldSpan(pos, value_start, end, number, wire, name, parent, kind))
            if kind == "message" and desc is not None and depth < _MAX_DEPTH:
                me = len(index.fields) - 1
                if not _walk(index, value_start, end, desc.message_type, me, depth + 1):
                    index.fields[me] = FieldSpan(
                        pos, value_start, end, number, wire, name, parent, ""
                    )
            pos = end
    except ValueError:
        del index.fields[first:]
        return False
    return True


def index_message(data: bytes, message: Any = None) -> Optional[MessageIndex]:
    """The field index of ``data`` (a serialized ``message`` descriptor); None if the
    top level does not parse."""
    index = MessageIndex(data)
    if not _walk(index, 0, len(data), message, -1, 0):
        return None
    for position, span in enumerate(index.fields):
        index.by_name.setdefault(span.name, []).append(position)
    return index


def _depth(index: MessageIndex, position: int) -> int:
    return len(index.ancestors(position))


def _prefix_changes(index: MessageIndex, edits: dict[int, bytes]) -> list[tuple[int, int, bytes]]:
    """``(start, end, new bytes)`` of every length prefix the edits change."""
    growth: dict[int, int] = {}
    for position, new in edits.items():
        span = index.fields[position]
        if span.parent >= 0:
            growth[span.parent] = growth.get(span.parent, 0) + len(new) - (span.end - span.start)
        for parent in index.ancestors(position):
            growth.setdefault(parent, 0)
    prefixes = []
    for parent in sorted(growth, key=lambda p: -_depth(index, p)):  # children first
        span = index.fields[parent]
        prefix_start = span.start + len(index.key_bytes(parent))
        new_prefix = encode_varint(span.end - span.value_start + growth[parent])
        prefixes.append((prefix_start, span.value_start, new_prefix))
        if span.parent >= 0:
            change = growth[parent] + len(new_prefix) - (span.value_start - prefix_start)
            growth[span.parent] = growth.get(span.parent, 0) + change
    return prefixes


def apply_edits(index: MessageIndex, edits: dict[int, bytes]) -> bytes:
    """The file with field ``i`` replaced by ``edits[i]`` for each edit, and the
    length prefixes of the enclosing messages fixed. An edit inside another edited
    field is ignored."""
    kept = {i: new for i, new in edits.items() if not any(a in edits for a in index.ancestors(i))}
    replacements = [(index.fields[i].start, index.fields[i].end, new) for i, new in kept.items()]
    replacements.extend(_prefix_changes(index, kept))
    replacements.sort(key=lambda r: (r[0], r[1]))
    out = bytearray()
    pos = 0
    data = index.data
    for start, end, new in replacements:
        out += data[pos:start]
        out += new
        pos = end
    out += data[pos:]
    return bytes(out)
