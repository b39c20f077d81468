"""Hand encoding of protobuf wire-format fields, for hot paths that build
messages faster as bytes than through message objects.

Contract: :func:`varint` encodes an int as a base-128 varint (negative numbers as
64-bit two's complement, ten bytes, as protobuf writes ``int64``);
:func:`int_field` is a varint field, empty for 0 as proto3 omits defaults;
:func:`len_field` and :func:`str_field` are length-delimited fields (bytes, and
text encoded as UTF-8). The bytes equal what protobuf serializes for the same
fields in field-number order.
"""

from __future__ import annotations

__all__ = ["int_field", "len_field", "str_field", "varint"]

_U64 = (1 << 64) - 1
_BYTE = [bytes((i,)) for i in range(128)]


def varint(value: int) -> bytes:
    """``value`` as a varint (negative numbers as 64-bit two's complement)."""
    if 0 <= value < 128:
        return _BYTE[value]
    value &= _U64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def int_field(number: int, value: int) -> bytes:
    """A varint field; empty for 0 (proto3 does not write defaults)."""
    return varint(number << 3) + varint(value) if value else b""


def len_field(number: int, data: bytes) -> bytes:
    """A length-delimited field holding ``data``."""
    return varint((number << 3) | 2) + varint(len(data)) + data


def str_field(number: int, text: str) -> bytes:
    """A length-delimited field holding ``text`` as UTF-8."""
    return len_field(number, text.encode("utf-8"))
