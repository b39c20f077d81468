"""Steps' records laid end to end, the block :mod:`tfprof_lite.model.step_batch` adds.

:class:`Block` holds many steps' rows in one set of columns (a
:class:`~tfprof_lite.proto.steps.StepColumns` whose ``dev`` numbers the
block's distinct lower-cased device strings), each row's step and each row's
device number in its step's own table of device strings. Two producers:

* :meth:`Block.of_columns`: the step columns of RunMetadata steps, one per
  step, joined;
* :meth:`Block.of_records`: a :class:`~tfprof_lite.model.step_records.StepRecords`
  (an XSpace's steps), read column by column: each lane's device string and
  each distinct kernel label are rendered once, never per row or per step.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

import numpy as np
import numpy.typing as npt

from tfprof_lite.base.arrays import I64, empty_i64
from tfprof_lite.model.devices import is_tracer_device
from tfprof_lite.model.memory_records import MemoryRecords, MemoryRef
from tfprof_lite.model.record_memory import Placed, placed
from tfprof_lite.model.step_records import ROLE_COPY, ROLE_KERNEL, StepRecords
from tfprof_lite.proto.steps import StepColumns

__all__ = ["UNKNOWN", "Block"]

#: :attr:`Block.exact` of a tracer row whose exact duration is not known.
UNKNOWN = np.iinfo(np.int64).min

#: The row-index columns of step columns (offset when steps are laid end to end).
_ROW_FIELDS = ("o_row", "a_row", "r_row")
_ARRAY_FIELDS = ("start", "rel", "total", "peak", "live", "gpu_allocs", "gpu_in_use", "temp",
                 "persist", "o_slot", "o_bytes", "o_ptr", "a_micros", "a_bytes")  # fmt: skip


class Block:
    """Steps' rows end to end: ``cols`` (``dev``: an index into ``devices``,
    the distinct lower-cased device strings), ``step`` (each row's step
    index), ``code`` (each row's device number in its step's own table,
    ``names[step]``), ``tables`` (the distinct tables, lower-cased) and
    ``exact`` (the exact durations in ns of the GPU tracer rows, in row order;
    ``UNKNOWN`` where not known)."""

    def __init__(self) -> None:
        self.cols = StepColumns()
        self.step = empty_i64()
        self.code = empty_i64()
        self.bounds = np.zeros(1, dtype=np.int64)
        self.devices: list[str] = []
        self.names: list[list[str]] = []
        self.tables: list[list[str]] = []
        self.exact = empty_i64()
        #: Each step's device strings as written (``names`` is lower-cased);
        #: empty when the block keeps only those.
        self.written: list[list[str]] = []
        self._tracer: tuple[I64, list[int]] | None = None  # (:meth:`tracer_rows`)

    @classmethod
    def of_columns(cls, columns: Sequence[StepColumns]) -> Block:
        """The block of one step's columns per step (their tracer records' exact
        durations unknown: the columns hold µs)."""
        block = cls()
        tables: dict[tuple[str, ...], tuple[I64, I64, list[str]]] = {}
        index: dict[str, int] = {}
        gids, codes = [], []
        for cols in columns:
            key = tuple(cols.devices)
            table = tables.get(key)
            if table is None:
                lowered = [d.lower() for d in key]
                own: dict[str, int] = {}
                local = [own.setdefault(d, len(own)) for d in lowered]
                ids = [index.setdefault(d, len(index)) for d in lowered]
                ids_at = np.asarray(ids, np.int64).reshape(-1)
                table = tables[key] = (ids_at, np.asarray(local, np.int64).reshape(-1), list(own))
                block.tables.append(lowered)
            gids.append(table[0])
            codes.append(table[1])
            block.names.append(table[2])
        block.devices = list(index)
        sizes = np.asarray([len(c) for c in columns], dtype=np.int64)
        block.bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        block.step = np.repeat(np.arange(len(columns), dtype=np.int64), sizes)
        table_at = np.repeat(_starts([len(g) for g in gids]), sizes)
        local_dev = _cat([c.dev for c in columns], np.int64) + table_at
        block.code = _cat(codes, np.int64)[local_dev] if len(local_dev) else local_dev
        dev = _cat(gids, np.int64)[local_dev] if len(local_dev) else local_dev
        block.cols = _joined(columns, dev, block.bounds)
        block.exact = _unknown_exact(block)
        return block

    @classmethod
    def of_records(cls, records: StepRecords) -> Block:
        """The block of ``records``, their memory records placed among them
        (:mod:`tfprof_lite.model.record_memory`; see the module docstring)."""
        block = cls()
        lane_devices = [lane.device() for lane in records.lanes]
        lowered = [d.lower() for d in lane_devices]
        index: dict[str, int] = {}
        global_of_lane = np.asarray([index.setdefault(d, len(index)) for d in lowered], np.int64)
        block.devices = list(index)
        start = records.micros(records.start_ps)
        rel = records.micros(records.end_ps) - start
        label, table = _labels(records)
        rows = placed(records, start, rel, label)
        block.step = rows.step
        block.bounds = np.searchsorted(rows.step, np.arange(records.steps + 1)).astype(np.int64)
        block.code = rows.code
        block.name_tables(rows, lowered, lane_devices)
        block.cols = _record_columns(records, rows, global_of_lane, table)
        plain = rows.source[block.tracer_rows()[0]]  # (memory records are on no tracer lane)
        block.exact = (records.end_ps[plain] - records.start_ps[plain]) // 1000
        return block

    def name_tables(self, rows: Placed, lowered: list[str], written: list[str]) -> None:
        """Each step's table of device strings (lower-cased, each distinct table
        once; ``written``: the lanes' strings as written)."""
        lanes, at = rows.table_lane.tolist(), rows.table_at.tolist()
        interned: dict[tuple[int, ...], tuple[list[str], list[str]]] = {}
        for i in range(len(at) - 1):
            key = tuple(lanes[at[i] : at[i + 1]])
            found = interned.get(key)
            if found is None:
                found = interned[key] = ([lowered[k] for k in key], [written[k] for k in key])
                self.tables.append(found[0])
            self.names.append(found[0])
            self.written.append(found[1])

    def step_columns(self, index: int) -> StepColumns:
        """Step ``index``'s rows as its own step columns (devices: its table)."""
        lo, hi = int(self.bounds[index]), int(self.bounds[index + 1])
        cols = self.cols
        names = self.written[index] if self.written else self.names[index]
        out = StepColumns(devices=list(names),
                          dev=self.code[lo:hi].astype(np.int32), name=cols.name[lo:hi],
                          label=cols.label[lo:hi], has_step_stats=cols.has_step_stats)  # fmt: skip
        for name in _ARRAY_FIELDS[:9]:
            setattr(out, name, np.asarray(getattr(cols, name)[lo:hi]))
        if cols.untimed.size:
            out.untimed = cols.untimed[lo:hi]
        for row_field, sparse in (
            ("o_row", ("o_slot", "o_bytes", "o_ptr")),
            ("a_row", ("a_micros", "a_bytes")),
            ("r_row", ("raw",)),
        ):
            rows = getattr(cols, row_field)
            a, b = np.searchsorted(rows, [lo, hi]).tolist()
            setattr(out, row_field, (rows[a:b] - lo).astype(np.int32))
            for name in sparse:
                setattr(out, name, getattr(cols, name)[a:b])
        return out

    def tracer_rows(self) -> tuple[I64, list[int]]:
        """The GPU tracer rows (ascending; ``exact`` holds their durations) and
        where each step's begin among them (found once)."""
        if self._tracer is None:
            tracer = np.asarray([is_tracer_device(d) for d in self.devices] + [False], bool)
            hit = tracer[self.cols.dev.astype(np.int64)] if len(self.cols) else tracer[:0]
            rows = np.flatnonzero(hit)
            self._tracer = rows, np.searchsorted(rows, self.bounds).tolist()
        return self._tracer

    def step_exact(self, index: int) -> I64:
        """Step ``index``'s exact tracer durations (ns; empty when not known)."""
        at = self.tracer_rows()[1]
        found = self.exact[at[index] : at[index + 1]]
        return found if not (found == UNKNOWN).any() else empty_i64()


def _record_columns(
    records: StepRecords, rows: Placed, global_of_lane: I64, table: list[str]
) -> StepColumns:
    """The step columns of the placed rows: names, labels and times in µs; the
    memory columns of the memory records (all zeros without: views of one zero)."""
    texts = np.empty(len(table) + 1, dtype=object)
    texts[:-1] = table
    texts[-1] = ""  # (label -1: none)
    mem, source = records.memory, rows.source
    plain = source >= 0
    node = np.where(plain, records.node[np.maximum(source, 0)] if len(records) else 0, 0)
    if mem is not None and len(mem):
        node[~plain] = mem.node[-1 - source[~plain]]
    n = len(source)
    out = StepColumns(
        dev=global_of_lane[rows.lane].astype(np.int32) if n else np.zeros(0, np.int32),
        name=texts[node].tolist() if n else [], label=texts[rows.label].tolist() if n else [],
        start=rows.start, rel=rows.rel.astype(np.int64), has_step_stats=True,
    )  # fmt: skip
    if mem is None or not len(mem):
        zeros = np.broadcast_to(np.zeros(1, dtype=np.int64), (n,))
        out.total = out.peak = out.live = out.gpu_in_use = out.temp = out.persist = zeros
        out.gpu_allocs = np.broadcast_to(np.zeros(1, dtype=np.int32), (n,))
        return out
    _memory_columns(out, mem, rows)
    return out


def _memory_columns(out: StepColumns, mem: MemoryRecords, rows: Placed) -> None:
    """The memory records' columns into ``out`` (see :func:`_record_columns`)."""
    n = len(rows.source)
    at = np.flatnonzero(rows.source < 0)  # the memory records' rows, record by record
    record = -1 - rows.source[at]
    for name in ("total", "peak", "live", "gpu_in_use"):
        column = np.zeros(n, dtype=np.int64)
        column[at] = getattr(mem, name)[record]
        setattr(out, name, column)
    out.gpu_allocs = np.zeros(n, dtype=np.int32)
    out.gpu_allocs[at] = mem.gpu_allocs[record]
    out.temp = out.persist = np.broadcast_to(np.zeros(1, dtype=np.int64), (n,))
    out.untimed = rows.untimed
    row_of = np.empty(len(mem), dtype=np.int64)
    row_of[record] = at
    per_record = np.diff(mem.out_at)
    outs = np.arange(int(mem.out_at[0]), int(mem.out_at[-1]))  # (a record's follow the last's)
    out.o_row = np.repeat(row_of, per_record).astype(np.int32)
    out.o_slot = mem.o_slot[outs].astype(np.int32)
    out.o_bytes = np.maximum(mem.o_allocated[outs], mem.o_requested[outs])
    out.o_ptr = mem.o_ptr[outs]
    a_record, out.a_micros, out.a_bytes = mem.gpu_events()
    out.a_row = row_of[a_record].astype(np.int32)
    out.r_row = at.astype(np.int32)
    starts, rels = rows.start[at].tolist(), rows.rel[at].tolist()
    out.raw = [MemoryRef(mem, r, s, s + d)
               for r, s, d in zip(record.tolist(), starts, rels, strict=True)]  # fmt: skip


def _labels(records: StepRecords) -> tuple[I64, list[str]]:
    """Each row's timeline label as an index into a table of strings (the
    records' texts, then the labels made, each distinct one once): a
    kernel's ``<kernel> <details>``, a copy's ``<kind> <details>``
    (``<kind>`` without details), any other record's its node's name."""
    label = records.node.astype(np.int64)
    made = np.flatnonzero((records.role == ROLE_KERNEL) | (records.role == ROLE_COPY))
    texts = records.texts
    if not len(made):
        return label, texts
    kernel, details = records.kernel[made].astype(np.int64), records.details[made].astype(np.int64)
    width = len(texts) + 1
    key = (kernel + 1) * width + details + 1
    keys, inverse = np.unique(key, return_inverse=True)
    extra: dict[str, int] = {}
    ids = []
    for k in keys.tolist():
        name, detail = texts[k // width - 1] if k // width else "", k % width - 1
        text = f"{name} {texts[detail]}" if detail >= 0 and texts[detail] else name
        ids.append(extra.setdefault(text, len(texts) + len(extra)))
    label[made] = np.asarray(ids, dtype=np.int64)[inverse.reshape(-1)]
    return label, texts + list(extra)


def _unknown_exact(block: Block) -> I64:
    """:data:`UNKNOWN` per GPU tracer row of ``block``."""
    return np.full(len(block.tracer_rows()[0]), UNKNOWN, dtype=np.int64)


def _starts(sizes: Sequence[int]) -> I64:
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if sizes else empty_i64()


def _cat(parts: Sequence[npt.NDArray[Any]], dtype: Any) -> npt.NDArray[Any]:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)


def _joined(columns: Sequence[StepColumns], dev: I64, bounds: I64) -> StepColumns:
    """One :class:`StepColumns` of every step's rows (row indexes offset)."""
    out = StepColumns(devices=[], dev=dev.astype(np.int32), has_step_stats=True)
    out.name = list(chain.from_iterable(c.name for c in columns))
    out.label = list(chain.from_iterable(c.label for c in columns))
    out.raw = list(chain.from_iterable(c.raw for c in columns))
    for name in _ARRAY_FIELDS:
        setattr(out, name, _cat([getattr(c, name) for c in columns], getattr(out, name).dtype))
    for name in _ROW_FIELDS:
        parts = [getattr(c, name).astype(np.int64) + base
                 for c, base in zip(columns, bounds) if getattr(c, name).size]  # fmt: skip
        setattr(out, name, _cat(parts, np.int64))
    if any(c.untimed.size for c in columns):
        out.untimed = _cat([c.untimed if c.untimed.size else np.zeros(len(c), bool)
                            for c in columns], bool)  # fmt: skip
    return out
