"""The serialized ``NodeExecStats`` of the XSpace memory records, written as bytes.

A step's memory record keeps its ``NodeExecStats`` serialized (the step
columns' ``raw``) for the memory profile. The allocation records, one per
allocator event, are most of those bytes: :func:`allocation_records` writes
them for all events at once with NumPy (varints as 7-bit groups of the
64-bit two's complement, proto3 leaving out zeros);
:func:`node_exec_stats` puts one record's fields around them with
:mod:`tfprof_lite.proto.wire`. The bytes equal what protobuf serializes for the
same message (fields in number order, defaults left out).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tfprof_lite.proto.wire import int_field, len_field, str_field

__all__ = ["AllocatorUse", "OutputTensor", "allocation_records", "node_exec_stats"]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]

#: Pairs written at once by :func:`allocation_records`.
CHUNK = 1 << 13
_GROUPS = np.arange(10, dtype=np.uint64) * np.uint64(7)


def _varints(values: I64) -> tuple[U8, I64]:
    """Each value as a varint: a (n, 10) byte matrix and each row's length."""
    bits = values.astype(np.int64).astype(np.uint64)
    groups = (bits[:, None] >> _GROUPS) & np.uint64(0x7F)
    used = groups != 0
    lengths = np.where(used.any(axis=1), 10 - np.argmax(used[:, ::-1], axis=1), 1)
    more = np.arange(10) < (lengths - 1)[:, None]
    return (groups | (more * 0x80).astype(np.uint64)).astype(np.uint8), lengths.astype(np.int64)


def _int_fields(number: int, values: I64) -> tuple[U8, I64]:
    """Varint field ``number`` (< 16) of each value, empty where it is 0."""
    data, lengths = _varints(values)
    tagged = np.concatenate([np.full((len(values), 1), number << 3, dtype=np.uint8), data], 1)
    return tagged, np.where(values != 0, lengths + 1, 0)


def _join(parts: list[tuple[U8, I64]]) -> tuple[bytes, I64]:
    """Row ``i`` of every part, one after the other: the bytes of all rows and
    the offsets where each row starts (one more at the end)."""
    data = np.concatenate([part for part, _ in parts], axis=1)
    used = np.concatenate(
        [np.arange(part.shape[1])[None, :] < lengths[:, None] for part, lengths in parts], axis=1
    )
    offsets = np.zeros(len(data) + 1, dtype=np.int64)
    np.cumsum(sum(lengths for _, lengths in parts), out=offsets[1:])
    return data[used].tobytes(), offsets


def allocation_records(micros: I64, nbytes: I64) -> tuple[bytes, I64]:
    """``AllocatorMemoryUsed.allocation_records`` entries (field 6) of every
    (micros, bytes) pair: their bytes and each entry's start offset (one more
    at the end). Written :data:`CHUNK` pairs at a time: the byte matrices of
    the varints take ~250 bytes a pair while they live."""
    if not len(micros):
        return b"", np.zeros(1, dtype=np.int64)
    if len(micros) <= CHUNK:
        return _records(micros, nbytes)
    data: list[bytes] = []
    offsets = [np.zeros(1, dtype=np.int64)]
    done = 0
    for low in range(0, len(micros), CHUNK):
        part, at = _records(micros[low : low + CHUNK], nbytes[low : low + CHUNK])
        data.append(part)
        offsets.append(at[1:] + done)
        done += len(part)
    return b"".join(data), np.concatenate(offsets)


def _records(micros: I64, nbytes: I64) -> tuple[bytes, I64]:
    when, size = _int_fields(1, micros), _int_fields(2, nbytes)
    body = when[1] + size[1]  # at most 22 bytes: a one-byte length
    tag = (np.full((len(micros), 1), (6 << 3) | 2, dtype=np.uint8), np.ones(len(micros), np.int64))
    length = (body.astype(np.uint8)[:, None], np.ones(len(micros), dtype=np.int64))
    return _join([tag, length, when, size])


@dataclass
class AllocatorUse:
    """One ``AllocatorMemoryUsed`` of a record, its allocation records as bytes."""

    allocator: str
    total: int
    peak: int
    live: int
    in_use: int
    records: bytes


@dataclass
class OutputTensor:
    """One ``NodeOutput`` of a record (an allocation whose event names a shape)."""

    slot: int
    dtype: int
    shape: tuple[int, ...]
    requested: int
    allocated: int
    allocator: str
    ptr: int


def _text(number: int, text: str) -> bytes:
    return str_field(number, text) if text else b""


def _output(out: OutputTensor) -> bytes:
    dims = b"".join(len_field(2, int_field(1, size)) for size in out.shape)
    alloc = (
        int_field(1, out.requested)
        + int_field(2, out.allocated)
        + _text(3, out.allocator)
        + int_field(6, out.ptr)
    )
    desc = int_field(1, out.dtype) + (len_field(2, dims) if dims else b"") + len_field(4, alloc)
    return len_field(7, int_field(1, out.slot) + len_field(3, desc))


def node_exec_stats(
    node: str,
    label: str,
    start: int,
    rel: int,
    memory: list[AllocatorUse],
    outputs: list[OutputTensor],
) -> bytes:
    """A ``NodeExecStats`` (name, times, memory entries, outputs, label) serialized."""
    parts = [_text(1, node), int_field(2, start), int_field(4, rel), int_field(5, rel)]
    for use in memory:
        body = (
            _text(1, use.allocator)
            + int_field(2, use.total)
            + int_field(3, use.peak)
            + int_field(4, use.live)
            + int_field(5, use.in_use)
            + use.records
        )
        parts.append(len_field(6, body))
    parts.extend(_output(out) for out in outputs)
    parts.append(_text(8, label))
    return b"".join(parts)
