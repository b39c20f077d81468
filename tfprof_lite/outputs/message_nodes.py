"""Encoded GraphNodeProto fields of every graph node, for the returned messages.

Contract: :func:`node_heads` gives each graph node's ``name``, ``device`` and
``input_shapes`` fields in wire format; they depend on the graph alone (and on
which nodes have a device bound), so they are kept across ``add_step`` and built
again only when nodes are added or a step binds a new device. The native
encoder (``_profileencode.heads``) builds them when it is available;
:func:`build_heads_pure` is the Python path giving the same bytes: it walks the
nodes with C-level loops (``map`` over the node lists) and encodes each distinct
device, input shape entry and string length once.
:func:`encode_fields` encodes stat rows as varint fields for all rows at once
(natively when the encoder is built, else with NumPy);
:class:`TotalsCache` keeps the last encoded total rows so that a query whose
totals did not change encodes nothing again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain, count
from operator import add, methodcaller
from typing import Any

import numpy as np
import numpy.typing as npt

from tfprof_lite._native import active
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.proto.wire import int_field, len_field, varint
from tfprof_lite.views.inputs import input_table

__all__ = [
    "TotalsCache",
    "build_heads_pure",
    "encode_fields",
    "encode_sized",
    "encode_sized_pure",
    "framings",
    "node_heads",
    "string_fields",
    "varint_lengths",
]

IntArray = npt.NDArray[np.int64]
U64Array = npt.NDArray[np.uint64]

_NAME = 1  # GraphNodeProto.name
_DEVICE = 10  # GraphNodeProto.device
_INPUT_SHAPES = 16  # GraphNodeProto.input_shapes (map<int32, TensorShapeProto>)
_UNKNOWN_RANK = b"\x18\x01"  # TensorShapeProto.unknown_rank = true


# ---------------------------------------------------------------- stat fields
def varint_lengths(values: U64Array) -> IntArray:
    """Bytes of the varint encoding of each of ``values``."""
    lengths = np.ones(values.shape, dtype=np.int64)
    for k in range(1, 10):
        lengths += values >= np.uint64(1 << (7 * k))
    return lengths


def _pack(values: U64Array, tags: list[bytes], kind: IntArray) -> tuple[bytes, IntArray]:
    """Encode cell i as ``tags[kind[i]]`` + varint ``values[i]``; returns the bytes
    and the end offset of every cell (tags are one or two bytes long).

    Every cell is laid out in a fixed-width row (two tag bytes, then the 7-bit
    groups); keeping the used bytes of each row, in order, gives the encoding.
    Group j of a value is ``value >> 7j``: it has a continuation bit when it is
    above 0x7F, and group j + 1 is written exactly then.
    """
    m = len(values)
    first = np.array([t[0] for t in tags], dtype=np.uint8)
    second = np.array([t[1] if len(t) > 1 else 0 for t in tags], dtype=np.uint8)
    width = max(1, -(-int(values.max(initial=0)).bit_length() // 7))
    cells = np.empty((m, 2 + width), dtype=np.uint8)
    cells[:, 0] = first[kind]
    cells[:, 1] = second[kind]
    work: npt.NDArray[Any] = values.astype(np.uint32) if width <= 4 else values
    shifts: npt.NDArray[Any] = (np.arange(width) * 7).astype(work.dtype)
    groups = work[:, None] >> shifts
    more = groups > 0x7F
    cells[:, 2:] = groups & 0x7F
    cells[:, 2:] |= more.view(np.uint8) << 7
    used = np.empty(cells.shape, dtype=bool)
    used[:, 0] = True
    used[:, 1] = second[kind] != 0
    used[:, 2] = True
    used[:, 3:] = more[:, :-1]
    lengths = used.sum(axis=1)
    return cells[used].tobytes(), np.cumsum(lengths)


def encode_fields(values: IntArray, fields: Sequence[int]) -> list[bytes]:
    """Each row of ``values`` as varint fields (column j is field ``fields[j]``);
    zeros are left out, as proto3 serializers do. Equal rows are encoded once."""
    return encode_sized(values, fields)[0]


def encode_sized(
    values: IntArray, fields: Sequence[int], prefixes: list[bytes] | None = None
) -> tuple[list[bytes], IntArray]:
    """:func:`encode_fields` and the length of each row's bytes (by the native
    encoder when it is built, else with NumPy: the same bytes); with
    ``prefixes`` (one per row), each row's bytes start with its prefix."""
    module = active("_profileencode")
    if module is not None and values.ndim == 2 and values.shape[1] == len(fields):
        tags = [varint(number << 3) for number in fields]
        flat = np.ascontiguousarray(values, dtype=np.int64)
        encoded: list[bytes] | None = module.encode_rows(flat.tobytes(), tags, prefixes)
        if encoded is not None:
            lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
            return encoded, lengths
    rows, lengths = encode_sized_pure(values, fields)
    if prefixes is None:
        return rows, lengths
    if len(prefixes) != len(rows):
        raise ValueError(f"{len(prefixes)} prefixes for {len(rows)} rows")
    sizes = np.fromiter(map(len, prefixes), dtype=np.int64, count=len(prefixes))
    return list(map(add, prefixes, rows)), sizes + lengths


def encode_sized_pure(values: IntArray, fields: Sequence[int]) -> tuple[list[bytes], IntArray]:
    """:func:`encode_sized` with NumPy (the path without the native encoder)."""
    distinct = _distinct_rows(values)
    if distinct is not None:
        first, where = distinct
        encoded, lengths = _encode_rows(values[first], fields)
        picked: list[bytes] = np.array(encoded, dtype=object)[where].tolist()
        return picked, lengths[where]
    return _encode_rows(values, fields)


# Odd 64-bit multipliers: a row's key is the wrapping sum of its values times them.
_MIX = np.array(
    [(0x9E3779B97F4A7C15 + 2 * k * 0x632BE59BD9B4E019) % (1 << 64) for k in range(64)],
    dtype=np.uint64,
)


def _distinct_rows(values: IntArray) -> tuple[IntArray, IntArray] | None:
    """(first row of each distinct row, each row's distinct index), or None when
    rows are mostly distinct (or two distinct rows share a key).

    Rows are grouped by a 64-bit key and every row is checked against its group's
    first row, so a shared key never merges different rows.
    """
    rows, cols = values.shape
    if rows < 64 or cols > len(_MIX):
        return None
    flat = np.ascontiguousarray(values, dtype=np.int64).view(np.uint64)
    with np.errstate(over="ignore"):
        keys = (flat * _MIX[:cols]).sum(axis=1, dtype=np.uint64)
    uniq, first, where = np.unique(keys, return_index=True, return_inverse=True)
    if 2 * len(uniq) > rows or not np.array_equal(flat[first][where], flat):
        return None
    return first, where.ravel()


def _encode_rows(values: IntArray, fields: Sequence[int]) -> tuple[list[bytes], IntArray]:
    """:func:`encode_sized` for every row, one by one."""
    rows, cols = values.shape
    flat = np.ascontiguousarray(values, dtype=np.int64).view(np.uint64).ravel()
    cells = np.flatnonzero(flat)
    tags = [varint(number << 3) for number in fields]
    data, ends = _pack(flat[cells], tags, cells % cols)
    first = np.searchsorted(cells // cols, np.arange(rows + 1))
    edges = np.concatenate(([0], ends))[first]
    bounds = edges.tolist()
    encoded = list(map(data.__getitem__, map(slice, bounds[:-1], bounds[1:])))
    return encoded, np.diff(edges)


def framings(tag: bytes, lengths: IntArray) -> list[bytes]:
    """``tag`` + varint length for each of ``lengths`` (a one- or two-byte tag)."""
    kind = np.zeros(len(lengths), dtype=np.int64)
    data, ends = _pack(lengths.astype(np.uint64), [tag], kind)
    bounds = [0, *ends.tolist()]
    return list(map(data.__getitem__, map(slice, bounds[:-1], bounds[1:])))


class TotalsCache:
    """The encoded rows of the last stat matrix given, re-encoding only rows that
    changed (the encoding of a row depends on its values alone); ``lengths`` holds
    the length of each row's bytes."""

    def __init__(self, fields: Sequence[int]) -> None:
        self.fields = tuple(fields)
        self._values: IntArray | None = None
        self._encoded: list[bytes] = []
        self.lengths = np.zeros(0, dtype=np.int64)

    def encode(self, values: IntArray) -> list[bytes]:
        """``encode_fields(values, fields)``, from the last call's rows where equal."""
        last = self._values
        if last is None or last.shape != values.shape:
            encoded, self.lengths = encode_sized(values, self.fields)
        else:
            changed = np.flatnonzero((last != values).any(axis=1))
            encoded = list(self._encoded)
            if changed.size:
                fresh, sizes = encode_sized(values[changed], self.fields)
                for row, data in zip(changed.tolist(), fresh):
                    encoded[row] = data
                self.lengths = self.lengths.copy()
                self.lengths[changed] = sizes
        self._values = values.copy()
        self._encoded = encoded
        return encoded


# ---------------------------------------------------------------- node heads
def string_fields(number: int, texts: Iterable[str]) -> list[bytes]:
    """Each of ``texts`` as a length-delimited field ``number`` (UTF-8)."""
    encoded = list(map(str.encode, texts))
    lengths = list(map(len, encoded))
    tag = varint((number << 3) | 2)
    heads = {size: tag + varint(size) for size in set(lengths)}
    return list(map(add, map(heads.__getitem__, lengths), encoded))


def node_heads(model: ProfileModel) -> list[bytes]:
    """Per graph node: its name, device and input-shape fields.

    Kept per graph version; a step that binds a node to its first device makes
    them again (binding only ever fills an empty device, so the number of
    unbound nodes tells).
    """
    unbound = model.canonical_device.count("")
    cache: dict[int, list[bytes]] = model.per_graph("message_node_heads", dict)
    got = cache.get(unbound)
    if got is None:
        cache.clear()
        got = cache[unbound] = _build_heads(model)
    return got


def _build_heads(model: ProfileModel) -> list[bytes]:
    module = active("_profileencode")
    if module is not None:
        table = input_table(model)
        heads: list[bytes] | None = module.heads(
            model.names,
            model.canonical_device,
            np.ascontiguousarray(table.offsets, dtype=np.int64).tobytes(),
            np.ascontiguousarray(table.pos, dtype=np.int64).tobytes(),
            np.ascontiguousarray(table.producer, dtype=np.int64).tobytes(),
            table.srcs,
            model.src_output,
            model.output_shapes,
        )
        if heads is not None:
            return heads
    return build_heads_pure(model)


def build_heads_pure(model: ProfileModel) -> list[bytes]:
    """:func:`node_heads` built in Python (the path without the native encoder)."""
    devices = model.canonical_device
    fields = {d: string_fields(_DEVICE, [d])[0] if d else b"" for d in set(devices)}
    names = string_fields(_NAME, model.names)
    return list(
        map(add, map(add, names, map(fields.__getitem__, devices)), _input_shape_fields(model))
    )


def _shape_bytes(dims: Sequence[int]) -> bytes:
    """A TensorShapeProto: dims, or ``unknown_rank`` for no dims."""
    if not dims:
        return _UNKNOWN_RANK
    return b"".join(len_field(2, int_field(1, d)) for d in dims)


def _input_shape_fields(model: ProfileModel) -> list[bytes]:
    """Per node, its ``input_shapes`` map entries in input order: each input's
    producer output shape (unknown rank when the producer or shape is unknown)."""
    table = input_table(model)
    n = len(model.inputs)
    if not len(table):
        return [b""] * n
    node, pos, producer, srcs = table.node, table.pos, table.producer, table.srcs
    shape = _edge_shapes(model, node, producer, srcs)
    key = pos * (int(shape.max()) + 1) + shape
    distinct, where = np.unique(key, return_inverse=True)
    shapes = _ShapeTable.of(model)
    base = int(shape.max()) + 1
    entries = [
        len_field(_INPUT_SHAPES, int_field(1, k // base) + len_field(2, shapes.data[k % base]))
        for k in distinct.tolist()
    ]
    per_edge = np.array(entries, dtype=object)[where.ravel()].tolist()
    joined = b"".join(per_edge)
    sizes = np.fromiter(map(len, entries), dtype=np.int64, count=len(entries))[where.ravel()]
    at = np.concatenate(([0], np.cumsum(sizes)))[table.offsets].tolist()  # node bounds
    return list(map(joined.__getitem__, map(slice, at[:-1], at[1:])))


class _ShapeTable:
    """Distinct output shapes, numbered: ``codes[nid]`` numbers output 0 of each
    node, ``data[code]`` is the encoded shape, ``number(dims)`` numbers any shape."""

    def __init__(self, model: ProfileModel) -> None:
        self._ids: dict[tuple[int, ...], int] = {(): 0}
        self.data: list[bytes] = [_UNKNOWN_RANK]
        first = map(tuple, map(methodcaller("get", 0, ()), model.output_shapes))
        numbered: dict[tuple[int, ...], int] = {}
        raw = list(map(numbered.setdefault, first, count()))
        remap = {k: self.number(dims) for dims, k in numbered.items()}
        self.codes = np.array([*map(remap.__getitem__, raw), 0], dtype=np.int64)

    def number(self, dims: tuple[int, ...]) -> int:
        code = self._ids.get(dims)
        if code is None:
            code = self._ids[dims] = len(self.data)
            self.data.append(_shape_bytes(dims))
        return code

    @staticmethod
    def of(model: ProfileModel) -> _ShapeTable:
        table: _ShapeTable = model.per_graph("message_shape_table", lambda: _ShapeTable(model))
        return table


def _edge_shapes(
    model: ProfileModel, node: IntArray, producer: IntArray, srcs: list[str]
) -> IntArray:
    """The shape number of every input (unknown producer: unknown rank)."""
    table = _ShapeTable.of(model)
    shape: IntArray = table.codes[producer]  # producer -1 picks the trailing 0
    if any(chain.from_iterable(map(dict.values, model.src_output))):  # an output > 0 is read
        outputs = model.output_shapes
        slots = model.src_output
        for e, (nid, p, src) in enumerate(zip(node.tolist(), producer.tolist(), srcs)):
            slot = slots[nid].get(src, 0)
            if p >= 0 and slot:
                shape[e] = table.number(tuple(outputs[p].get(slot, ())))
    return shape
