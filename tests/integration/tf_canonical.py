"""Deterministic bytes of TF's tfprof output messages, for the differential tests.

`canonical_proto` serializes a ``GraphNodeProto`` / ``MultiGraphNodeProto`` /
``ProfileProto`` deterministically (maps sorted by key), also where the message
nests deeper than upb's parse limit of 100: the recursive ``children`` /
``graph_nodes`` fields are taken apart and spliced back at the wire level
(`_iter_fields`). `tests.integration.tf_oracle` re-exports these names.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

from tensorflow.core.profiler import tfprof_output_pb2


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return result, pos


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _iter_fields(data: bytes) -> Iterator[tuple[int, bytes, bytes | None]]:
    """Top-level wire fields: (number, whole encoded field, payload if LEN)."""
    pos = 0
    while pos < len(data):
        start = pos
        tag, pos = _read_varint(data, pos)
        wire_type = tag & 7
        payload: bytes | None = None
        if wire_type == 0:
            _, pos = _read_varint(data, pos)
        elif wire_type == 1:
            pos += 8
        elif wire_type == 5:
            pos += 4
        elif wire_type == 2:
            length, pos = _read_varint(data, pos)
            payload = data[pos : pos + length]
            pos += length
        else:
            raise ValueError(f"unsupported wire type {wire_type}")
        yield tag >> 3, data[start:pos], payload


def _nested_fields(cls: type) -> dict[int, type]:
    """Recursive message fields handled outside upb (number -> message class)."""
    if cls is tfprof_output_pb2.GraphNodeProto:
        return {12: tfprof_output_pb2.GraphNodeProto}  # children
    if cls is tfprof_output_pb2.MultiGraphNodeProto:
        return {
            10: tfprof_output_pb2.GraphNodeProto,  # graph_nodes
            11: tfprof_output_pb2.MultiGraphNodeProto,  # children
        }
    return {}


def _canonical(cls: type, data: bytes) -> bytes:
    nested = _nested_fields(cls)
    rest = bytearray()
    extracted: dict[int, list[bytes]] = {}
    for number, field, payload in _iter_fields(data):
        if number in nested and payload is not None:
            extracted.setdefault(number, []).append(_canonical(nested[number], payload))
        else:
            rest += field
    message = cls()
    message.ParseFromString(bytes(rest))
    flat = bytes(message.SerializeToString(deterministic=True))
    if not extracted:
        return flat
    out = bytearray()
    pending = sorted(extracted)

    def emit(number: int) -> None:
        for payload in extracted[number]:
            out.extend(_varint(number << 3 | 2) + _varint(len(payload)) + payload)

    for number, field, _ in _iter_fields(flat):
        while pending and pending[0] < number:
            emit(pending.pop(0))
        out += field
    for number in pending:
        emit(number)
    return bytes(out)


def canonical_proto(cls: type, data: bytes) -> bytes:
    """Deterministic serialization of ``data`` (a message of type ``cls``).

    Equals ``cls.FromString(data).SerializeToString(deterministic=True)`` but
    also works for tfprof outputs nested deeper than upb's parse limit of 100
    (op view returns its rows as a ``children`` linked list; TF's own Python
    API then logs "Cannot parse returned proto: ... Exceeded
    upb_DecodeOptions_MaxDepth" and returns a *partially* parsed message).
    ``children``/``graph_nodes`` are canonicalized recursively at the wire
    level and spliced back in field-number order.
    """
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20000))
    try:
        return _canonical(cls, data)
    finally:
        sys.setrecursionlimit(limit)
