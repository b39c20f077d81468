"""Seeded byte mutations of serialized messages, for the native codecs'
decline-or-agree loops (and their sanitizer runs), and the comparison of
attribute values kept as bytes."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from tfprof_lite.proto import messages as pb

#: Bytes written over one byte: varint edges and common field keys.
OVERWRITES = (0x00, 0x7F, 0x80, 0xFF, 0x0A, 0x12)
#: Inserted runs: invalid UTF-8 (a bad pair, a surrogate), an unknown varint
#: field, a lone group start.
INSERTS = (b"\xc3\x28", b"\xed\xa0\x80", b"\x78\x01", b"\x0b")


def mutate(
    raw: bytes,
    rng: random.Random,
    overwrites: Sequence[int] = OVERWRITES,
    inserts: Sequence[bytes] = INSERTS,
) -> bytes:
    """``raw`` with one mutation: flipped bits, a truncation, an overwritten byte,
    a slice spliced elsewhere, a dropped slice, or an inserted run."""
    data = bytearray(raw)
    kind = rng.randrange(6)
    if kind == 0 and data:
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif kind == 1 and data:
        del data[rng.randrange(len(data)) :]
    elif kind == 2 and data:
        data[rng.randrange(len(data))] = rng.choice(list(overwrites))
    elif kind == 3:
        a, b = sorted(rng.randrange(len(data) + 1) for _ in range(2))
        at = rng.randrange(len(data) + 1)
        data[at:at] = data[a:b]
    elif kind == 4 and data:
        a, b = sorted(rng.randrange(len(data) + 1) for _ in range(2))
        del data[a:b]
    else:
        at = rng.randrange(len(data) + 1)
        data[at:at] = rng.choice(list(inserts))
    return bytes(data)


def attr_values(attrs: dict[str, bytes]) -> dict[str, Any]:
    """Attribute values parsed (equal messages may have different encodings)."""
    return {key: pb.AttrValue.FromString(raw) for key, raw in attrs.items()}
