"""The seeded mutator: byte-level and protobuf-aware edits of a serialized message.

Everything is a function of the ``random.Random`` passed in (no clock, no global
state), so a case is rebuilt exactly from its seed. :func:`mutate` applies one to
three edits and returns the new bytes with a short description of each edit.
"""

from __future__ import annotations

import random
import struct
from typing import Any, Callable, Optional

from tests.fuzz.wire_tree import (
    I32,
    I64,
    MessageIndex,
    apply_edits,
    encode_varint,
    index_message,
    read_varint,
)

__all__ = ["EXTREME_INTS", "INTERESTING_STRINGS", "mutate"]

#: Integer values planted into varint and fixed fields (written modulo 2**64).
EXTREME_INTS = (
    0,
    1,
    -1,
    2**31 - 1,
    2**31,
    -(2**31),
    2**32,
    2**53 + 1,
    2**62,
    2**63 - 1,
    2**63,
    -(2**63),
    2**64 - 1,
)
_FLOAT64_BITS = tuple(
    struct.unpack("<Q", struct.pack("<d", v))[0]
    for v in (float("nan"), float("inf"), float("-inf"), 1e308, -0.0, 5e-324)
)
_FLOAT32_BITS = tuple(
    struct.unpack("<I", struct.pack("<f", v))[0]
    for v in (float("nan"), float("inf"), float("-inf"), 3.4e38)
)
#: Strings planted into string and bytes fields.
INTERESTING_STRINGS = (
    b"",
    b"\xff\xfe\x80",  # not UTF-8
    b"a" * 5000,
    b"(a+)+$[",  # regex metacharacters, an unbalanced class
    b"line1\nline2\r\n",
    b"\x00nul\x00",
    b"../../etc/passwd",
    b"/",
    b"//",
    b"\xe2\x80\xae\xf0\x9f\x94\xa5 \xc3\xa9",  # right-to-left mark, emoji, accent
    b"%s%d{}{0}",
    b"<script>&amp;",
    b"/job:a/replica:0/task:0/device:GPU:99999999999",
    b"name/with//empty///parts/",
)
_MASK64 = (1 << 64) - 1
_INTERESTING_BYTES = (0x00, 0x01, 0x7F, 0x80, 0xFF, 0x08, 0x0A, 0x12, 0x1A)

#: Share of edits that are protobuf-aware (when the schema is known).
_PROTO_RATE = 0.75
Result = Optional[tuple[bytes, str]]
Edit = Callable[[random.Random, bytes, Any, list[bytes]], Result]


# --- byte-level edits -------------------------------------------------------------


def _bit_flips(rng: random.Random, data: bytes, _m: Any, _d: list[bytes]) -> Result:
    if not data:
        return None
    out = bytearray(data)
    count = rng.randint(1, 8)
    for _ in range(count):
        pos = rng.randrange(len(out))
        out[pos] ^= 1 << rng.randrange(8)
    return bytes(out), f"bit_flips(x{count})"


def _byte_replace(rng: random.Random, data: bytes, _m: Any, _d: list[bytes]) -> Result:
    if not data:
        return None
    out = bytearray(data)
    count = rng.randint(1, 4)
    for _ in range(count):
        pos = rng.randrange(len(out))
        out[pos] = rng.choice(_INTERESTING_BYTES) if rng.random() < 0.5 else rng.randrange(256)
    return bytes(out), f"byte_replace(x{count})"


def _truncate(rng: random.Random, data: bytes, _m: Any, _d: list[bytes]) -> Result:
    if len(data) < 2:
        return None
    cut = rng.randrange(1, len(data))
    return data[:cut], f"truncate({cut}/{len(data)})"


def _splice(rng: random.Random, data: bytes, _m: Any, donors: list[bytes]) -> Result:
    if not data or not donors:
        return None
    donor = rng.choice(donors)
    if not donor:
        return None
    cut, dcut = rng.randrange(len(data)), rng.randrange(len(donor))
    return data[:cut] + donor[dcut:], f"splice({cut}+donor[{dcut}:])"


def _insert_random(rng: random.Random, data: bytes, _m: Any, _d: list[bytes]) -> Result:
    pos = rng.randrange(len(data) + 1)
    size = rng.randint(1, 64)
    blob = bytes(rng.randrange(256) for _ in range(size))
    return data[:pos] + blob + data[pos:], f"insert_random({size}@{pos})"


def _delete_chunk(rng: random.Random, data: bytes, _m: Any, _d: list[bytes]) -> Result:
    if len(data) < 2:
        return None
    start = rng.randrange(len(data))
    size = rng.randint(1, min(256, len(data) - start))
    return data[:start] + data[start + size :], f"delete_chunk({size}@{start})"


# --- protobuf-aware edits (on the seed's field index) -------------------------------


def _pick(rng: random.Random, index: MessageIndex, category: str) -> Optional[int]:
    """A random field of ``category``: first a schema field (so that rare fields are
    picked as often as the thousands of code-trace fields), then one occurrence."""
    groups = index.groups(category)
    return rng.choice(rng.choice(groups)) if groups else None


def _with_key(index: MessageIndex, position: int, value: bytes) -> bytes:
    return index.key_bytes(position) + value


def _set_extreme(rng: random.Random, index: MessageIndex, pos: int) -> tuple[bytes, str]:
    span = index.fields[pos]
    value = rng.choice(EXTREME_INTS)
    note = f"set_extreme({span.name}={value})"
    if span.kind == "packed":
        values = _packed_values(index.value_bytes(pos))
        if values:
            slot = rng.randrange(len(values))
            values[slot] = value
            body = b"".join(encode_varint(v) for v in values)
            note = f"set_extreme({span.name}[{slot}]={value})"
        else:
            body = encode_varint(value)
        return _with_key(index, pos, encode_varint(len(body)) + body), note
    if span.wire == I64:
        if rng.random() < 0.4:
            value = rng.choice(_FLOAT64_BITS)
            note = f"set_extreme({span.name}=float64 bits {value:#x})"
        return _with_key(index, pos, struct.pack("<Q", value & _MASK64)), note
    if span.wire == I32:
        value = rng.choice(_FLOAT32_BITS) if rng.random() < 0.4 else value & 0xFFFFFFFF
        return _with_key(
            index, pos, struct.pack("<I", value)
        ), f"set_fixed32({span.name}={value:#x})"
    return _with_key(index, pos, encode_varint(value)), note


def _encode_all(index: MessageIndex, pos: int, value: int) -> bytes:
    """Field ``pos`` with ``value`` as its value (every element, when packed)."""
    span = index.fields[pos]
    if span.kind == "packed":
        count = max(len(_packed_values(index.value_bytes(pos))), 1)
        body = encode_varint(value) * count
        return _with_key(index, pos, encode_varint(len(body)) + body)
    if span.wire == I64:
        return _with_key(index, pos, struct.pack("<Q", value & _MASK64))
    if span.wire == I32:
        return _with_key(index, pos, struct.pack("<I", value & 0xFFFFFFFF))
    return _with_key(index, pos, encode_varint(value))


def _extreme_everywhere(
    rng: random.Random, index: MessageIndex, edits: dict[int, bytes]
) -> Optional[str]:
    """One extreme value in every occurrence of one integer field (totals overflow)."""
    groups = index.groups("int")
    if not groups:
        return None
    group = rng.choice(groups)
    value = rng.choice(EXTREME_INTS)
    for pos in group:
        edits[pos] = _encode_all(index, pos, value)
    return f"extreme_everywhere({index.fields[group[0]].name}={value} x{len(group)})"


def _packed_values(payload: bytes) -> list[int]:
    values: list[int] = []
    pos = 0
    try:
        while pos < len(payload):
            value, pos = read_varint(payload, pos)
            values.append(value)
    except ValueError:
        return []
    return values


def _corrupt_varint(rng: random.Random, index: MessageIndex, pos: int) -> tuple[bytes, str]:
    name = index.fields[pos].name
    bad, what = rng.choice(
        (
            (b"\xff" * 10 + b"\x01", "overlong"),  # longer than any 64-bit varint
            (b"\x80\x80\x80", "unterminated"),  # runs into the next field
            (b"\x80" * 9 + b"\x00", "padded zero"),  # ten bytes, value 0
        )
    )
    return _with_key(index, pos, bad), f"corrupt_varint({name}: {what})"


def _corrupt_length(rng: random.Random, index: MessageIndex, pos: int) -> tuple[bytes, str]:
    body = index.value_bytes(pos)
    size = rng.choice((0, len(body) - 1, len(body) + 1, len(body) + 1000, 2**31, 2**63 - 1))
    size = max(size, 0)
    note = f"corrupt_length({index.fields[pos].name}: {len(body)}->{size})"
    return _with_key(index, pos, encode_varint(size) + body), note


def _set_string(rng: random.Random, index: MessageIndex, pos: int) -> tuple[bytes, str]:
    text = rng.choice(INTERESTING_STRINGS)
    note = f"set_string({index.fields[pos].name}={text[:24]!r})"
    return _with_key(index, pos, encode_varint(len(text)) + text), note


def _change_number(rng: random.Random, index: MessageIndex, pos: int) -> tuple[bytes, str]:
    span = index.fields[pos]
    number = rng.choice((rng.randint(1, 20), span.number + 1, max(span.number - 1, 1), 2**29 - 1))
    rest = index.field_bytes(pos)[len(index.key_bytes(pos)) :]
    return encode_varint(number << 3 | span.wire) + rest, f"change_number({span.name}->{number})"


def _change_wire(rng: random.Random, index: MessageIndex, pos: int) -> tuple[bytes, str]:
    span = index.fields[pos]
    wire = rng.choice([w for w in range(8) if w != span.wire])
    rest = index.field_bytes(pos)[len(index.key_bytes(pos)) :]
    return encode_varint(span.number << 3 | wire) + rest, f"change_wire({span.name}->{wire})"


def _duplicate(rng: random.Random, index: MessageIndex, pos: int) -> tuple[bytes, str]:
    copies = rng.choice((1, 1, 2, 50))
    note = f"duplicate({index.fields[pos].name} x{copies})"
    return index.field_bytes(pos) * (copies + 1), note


def _drop(_rng: random.Random, index: MessageIndex, pos: int) -> tuple[bytes, str]:
    return b"", f"drop({index.fields[pos].name})"


_SPAN_EDITS: dict[str, tuple[str, Callable[[random.Random, MessageIndex, int], tuple[bytes, str]]]]
_SPAN_EDITS = {
    "extreme": ("int", _set_extreme),
    "varint": ("varint", _corrupt_varint),
    "length": ("len", _corrupt_length),
    "string": ("string", _set_string),
    "number": ("any", _change_number),
    "wire": ("any", _change_wire),
    "dup": ("any", _duplicate),
    "drop": ("any", _drop),
}


def _proto_edit(rng: random.Random, index: MessageIndex, edits: dict[int, bytes]) -> Optional[str]:
    """Add one protobuf-aware edit to ``edits``; returns its note (None: no field fits)."""
    what = rng.choice(_PROTO_EDIT_WEIGHTS)
    if what == "swap":
        return _swap(rng, index, edits)
    if what == "everywhere":
        return _extreme_everywhere(rng, index, edits)
    category, edit = _SPAN_EDITS[what]
    pos = _pick(rng, index, category)
    if pos is None or pos in edits:
        return None
    edits[pos], note = edit(rng, index, pos)
    return note


def _swap(rng: random.Random, index: MessageIndex, edits: dict[int, bytes]) -> Optional[str]:
    pos = _pick(rng, index, "any")
    if pos is None:
        return None
    other = rng.choice(index.siblings(pos))
    if other == pos or pos in edits or other in edits:
        return None
    edits[pos], edits[other] = index.field_bytes(other), index.field_bytes(pos)
    return f"swap({index.fields[pos].name}, {index.fields[other].name})"


#: Protobuf-aware edits, repeated by weight: mostly ones that keep the file parsable.
_PROTO_EDIT_WEIGHTS = (
    ("extreme",) * 5
    + ("everywhere",) * 2
    + ("dup", "dup", "drop", "drop", "string", "string", "swap", "swap")
    + ("number", "wire", "varint", "length")
)

_BYTE_EDITS: tuple[Edit, ...] = (
    _bit_flips,
    _byte_replace,
    _truncate,
    _splice,
    _insert_random,
    _delete_chunk,
)


def mutate(
    rng: random.Random, data: bytes, index: Optional[MessageIndex], donors: list[bytes]
) -> tuple[bytes, list[str]]:
    """One to three edits of ``data``; ``index`` is its field index (or None).

    Three in four edits are protobuf-aware when there is an index: they are applied
    together on the index (keeping the rest of the wire format valid, so the input
    gets past the parser), then the byte-level edits. ``donors`` are other files used
    by the splice edit. Returns the mutated bytes and a note per edit.
    """
    notes: list[str] = []
    edits: dict[int, bytes] = {}
    byte_edits = 0
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        note = None
        if index is not None and index.fields and rng.random() < _PROTO_RATE:
            for _attempt in range(4):
                note = _proto_edit(rng, index, edits)
                if note is not None:
                    notes.append(note)
                    break
        if note is None:
            byte_edits += 1
    if edits and index is not None:
        data = apply_edits(index, edits)
    for _ in range(byte_edits):
        for _attempt in range(4):
            result = rng.choice(_BYTE_EDITS)(rng, data, None, donors)
            if result is not None:
                data, note = result
                notes.append(note)
                break
    return data, notes


def mutation_outcomes(
    rng: random.Random,
    seeds: list[bytes],
    descriptor: Any,
    count: int,
    outcome: Callable[[bytes], str],
) -> dict[str, int]:
    """How often ``outcome`` (which asserts what it checks) returns each value on
    ``count`` mutations of every seed (a message of ``descriptor``'s type, the
    other seeds its splice donors); a failed assertion names the edits and input."""
    counts: dict[str, int] = {}
    for seed in seeds:
        index = index_message(seed, descriptor)
        for _ in range(count):
            data, notes = mutate(rng, seed, index, seeds)
            try:
                result = outcome(data)
            except AssertionError as err:
                raise AssertionError(f"{notes}: {err} (input {data.hex()})") from None
            counts[result] = counts.get(result, 0) + 1
    return counts
