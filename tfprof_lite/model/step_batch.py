"""Many steps' columns into the model at once, as one ``add_step`` per step would.

:func:`add_steps` takes the step columns of many new step numbers (an
XSpace's steps, :func:`tfprof_lite.formats.xspace.read.conversion.add_plan`) and applies
tfprof's ``AddStep`` rules (:mod:`tfprof_lite.model.step_ingest`) to all their
records in one pass: the steps' rows are laid end to end in one block (a step
index per row, each step's device strings numbered in one table), the node
lookup, canonical device binding, times, spans and memory records are computed
over the block, and each step's :class:`~tfprof_lite.model.execs.StepExecs`
is deferred (:meth:`~tfprof_lite.model.execs.StepExecs.deferred`): its column
groups, device names, kept NodeExecStats and kernels are spans of the block's
arrays (:class:`_Source`), made when first read, and its node spans and present
nodes are computed for all steps at once. The all-steps sums of the model are
added from the block at once.

Contract: the model ends as ``model.add_step(number, cols)`` for each step in
order would leave it (nodes, their canonical devices, coverage, every step's
columns, kernels, raw memory records, the all-steps sums); steps whose number
the model holds already, or that repeat, make it decline (it returns False and
changes nothing), and the caller adds them one by one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from tfprof_lite.model.devices import (
    DEVICE_CANONICAL,
    classify_device,
    is_tracer_device,
)
from tfprof_lite.model.exec_columns import COLUMN_TYPES, Columns, KernelColumns
from tfprof_lite.model.execs import StepExecs
from tfprof_lite.model.step_ingest import (
    MemoryRows,
    _add_memory,
    _add_times,
    _check_streams,
    _distinct,
    _node_ids,
    bind_canonical,
)
from tfprof_lite.model.step_sums import running_sums
from tfprof_lite.proto.steps import StepColumns

if TYPE_CHECKING:
    from tfprof_lite.model.profile import ProfileModel

__all__ = ["BATCH_ROWS", "add_many", "add_steps"]

I64 = npt.NDArray[np.int64]

#: :func:`add_many` adds the steps in batches of about this many records.
BATCH_ROWS = 1 << 18

#: The row-index columns of step columns (offset when steps are laid end to end).
_ROW_FIELDS = ("o_row", "a_row", "r_row")
_ARRAY_FIELDS = ("start", "rel", "total", "peak", "live", "gpu_allocs", "gpu_in_use", "temp",
                 "persist", "o_slot", "o_bytes", "o_ptr", "a_micros", "a_bytes")  # fmt: skip


class _Block:
    """Steps' columns end to end: ``cols`` (``dev``: an index into ``devices``,
    the distinct lower-cased device strings), ``step`` (each row's step index)
    and ``code`` (each row's device number in its step's own table, ``names``)."""

    def __init__(self, columns: Sequence[StepColumns]) -> None:
        tables: dict[tuple[str, ...], tuple[I64, I64, list[str]]] = {}
        index: dict[str, int] = {}
        gids, codes, self.names, self.tables = [], [], [], []
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
                self.tables.append(lowered)
            gids.append(table[0])
            codes.append(table[1])
            self.names.append(table[2])
        self.devices = list(index)
        sizes = np.asarray([len(c) for c in columns], dtype=np.int64)
        self.bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.step = np.repeat(np.arange(len(columns), dtype=np.int64), sizes)
        table_at = np.repeat(_starts([len(g) for g in gids]), sizes)
        local_dev = _cat([c.dev for c in columns], np.int64) + table_at
        self.code = _cat(codes, np.int64)[local_dev] if len(local_dev) else local_dev
        dev = _cat(gids, np.int64)[local_dev] if len(local_dev) else local_dev
        self.cols = _joined(columns, dev, self.bounds)


def _starts(sizes: Sequence[int]) -> I64:
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if sizes else _i64()


def _distinct_keys(keys: I64) -> I64:
    """The distinct values, ascending (a bare ``np.unique`` imports ``numpy.ma``)."""
    found: I64 = np.unique(keys, return_index=True)[0]
    return found


def _i64() -> I64:
    return np.zeros(0, dtype=np.int64)


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


def add_steps(
    model: ProfileModel,
    numbers: Sequence[int],
    columns: Sequence[StepColumns],
    exact: Sequence[I64] | None = None,
) -> bool:
    """Add step ``numbers[i]``'s ``columns[i]`` for every ``i`` (see the module
    docstring); False, having changed nothing, when a number is in the model
    already or repeats. ``exact[i]``: the durations (ns) of step ``i``'s GPU
    tracer records, kept when there is one per record."""
    if len(set(numbers)) != len(numbers) or any(n in model.steps for n in numbers):
        return False
    if not numbers:
        return True
    run = model._running  # noqa: SLF001
    if run is None or run.seen != StepExecs.changes:  # current before the steps come
        running_sums(model, len(model.names))
    block = _Block(columns)
    for lowered in block.tables:
        _check_streams(model, lowered)
    kernels = _kernels(block)
    cols, devices = block.cols, block.devices
    nid = _node_ids(model, cols)
    classes = np.asarray([classify_device(d) for d in devices], dtype=np.int64)
    row_cls = classes[cols.dev] if len(cols) else _i64()
    dev = cols.dev.astype(np.int64)
    valid = nid >= 0
    canon = valid & (row_cls == DEVICE_CANONICAL)
    node_dev = bind_canonical(model, nid, canon, dev, devices)  # (as the steps one by one)
    keep = valid & ~(canon & (dev != node_dev[np.maximum(nid, 0)]))
    rows = np.flatnonzero(keep)
    kept = nid[rows]
    for node in _distinct(kept):
        model.has_execs[node] = True
    scratch = StepExecs()
    scratch.pairs.append(node=kept, dev=block.code[rows])
    started, timed = _add_times(scratch, cols, rows, kept, block.code[rows], row_cls[rows])
    mem_rows = rows[dev[rows] == node_dev[kept]]
    memory = _add_memory(model, scratch, cols, mem_rows, nid, devices)
    step_of = block.step
    spans_step = step_of[rows][started]
    marks = {
        "pairs": step_of[rows],
        "spans": spans_step,
        "times": spans_step[timed],
    }
    _memory_marks(marks, memory, cols, step_of)
    seeds = _seeds(marks, scratch, len(numbers), len(model.names))
    _make_steps(model, numbers, _Source(block, scratch, marks, kernels, exact or ()), seeds)
    _fold(model, numbers, scratch, step_of[rows], kept)
    return True


def _memory_marks(
    marks: dict[str, I64], memory: MemoryRows | None, cols: StepColumns, step_of: I64
) -> None:
    """The step of each memory record, output, allocation and raw record."""
    if memory is None:
        marks.update(mem=_i64(), outs=_i64(), allocs=_i64(), raws=_i64())
        return
    marks["mem"] = step_of[memory.rows]
    marks["outs"] = step_of[cols.o_row[memory.outs]] if cols.o_row.size else _i64()
    marks["allocs"] = step_of[cols.a_row[memory.allocs]] if cols.a_row.size else _i64()
    marks["raws"] = step_of[cols.r_row[memory.raws]] if cols.r_row.size else _i64()


def _kernels(block: _Block) -> tuple[I64, list[tuple[int, int]]]:
    """The GPU tracer rows of the block, and each step's (first, end) among them."""
    devices, cols = block.devices, block.cols
    tracers = [i for i, d in enumerate(devices) if is_tracer_device(d)]
    rows = np.flatnonzero(np.isin(cols.dev, tracers)) if tracers else _i64()
    at = np.searchsorted(block.step[rows], np.arange(len(block.names) + 1))
    return rows, list(zip(at[:-1].tolist(), at[1:].tolist(), strict=True))


class _Source:
    """The new steps' parts over the batch's arrays (:class:`StepSource`): each
    step's column groups are spans of the scratch step's columns, its kernels a
    span of the block's GPU tracer rows."""

    def __init__(
        self,
        block: _Block,
        scratch: StepExecs,
        marks: dict[str, I64],
        kernels: tuple[I64, list[tuple[int, int]]],
        exact: Sequence[I64],
    ) -> None:
        steps = np.arange(len(block.names) + 1)
        self.cuts = {group: np.searchsorted(marks[group], steps).tolist() for group in COLUMN_TYPES}
        self.shared = {group: {name: getattr(scratch, group)[name] for name in types}
                       for group, types in COLUMN_TYPES.items()}  # fmt: skip
        outs = self.shared["outs"]
        outs["mem"] = outs["mem"] - np.asarray(self.cuts["mem"], dtype=np.int64)[marks["outs"]]
        self.raw_cut = np.searchsorted(marks["raws"], steps).tolist()
        self.raw_node, self.raw_stats = scratch.raw_node, scratch.raw_stats
        self.names = block.names
        rows, self.spans = kernels
        cols = block.cols
        self.k_dev = [block.devices[d] for d in cols.dev[rows].tolist()]
        self.k_name = [cols.name[r] for r in rows.tolist()]
        self.k_label = [cols.label[r] for r in rows.tolist()]
        self.k_start, self.k_dur = cols.start[rows].tolist(), cols.rel[rows].tolist()
        self.exact = exact

    def group(self, index: int, name: str) -> Columns:
        """Step ``index``'s column group ``name``."""
        cut = self.cuts[name]
        return Columns(COLUMN_TYPES[name], self.shared[name], cut[index], cut[index + 1])

    def device_names(self, index: int) -> list[str]:
        """Step ``index``'s device strings."""
        return list(self.names[index])

    def raws(self, index: int) -> tuple[list[int], list[bytes]]:
        """Step ``index``'s kept NodeExecStats."""
        lo, hi = self.raw_cut[index], self.raw_cut[index + 1]
        return self.raw_node[lo:hi], self.raw_stats[lo:hi]

    def kernels(self, index: int) -> KernelColumns:
        """Step ``index``'s GPU tracer records (exact durations in ns where given)."""
        lo, hi = self.spans[index]
        if hi <= lo:
            return KernelColumns()
        dur = self.k_dur[lo:hi]
        exact = self.exact[index] if index < len(self.exact) else _i64()
        dur_ns = exact.tolist() if len(exact) == hi - lo else [d * 1000 for d in dur]
        return KernelColumns(self.k_dev[lo:hi], self.k_name[lo:hi], self.k_label[lo:hi],
                             self.k_start[lo:hi], dur, dur_ns)  # fmt: skip


def _make_steps(model: ProfileModel, numbers: Sequence[int], source: _Source,
                seeds: dict[str, list[Any]]) -> None:  # fmt: skip
    """One deferred StepExecs per step, over ``source``."""
    deferred = StepExecs.deferred
    spans, present, walls = seeds["spans"], seeds["present"], seeds["wall"]
    for i, number in enumerate(numbers):
        cache = {"spans": spans[i], "present": present[i], "wall": walls[i]}
        model.steps[number] = deferred(source, i, cache)
    StepExecs.changes += len(numbers)
    model.data_version += len(numbers)


def _seeds(marks: dict[str, I64], scratch: StepExecs, steps: int, n: int) -> dict[str, list[Any]]:
    """Every step's :meth:`~StepExecs.node_spans` and
    :meth:`~StepExecs.present_nodes`, computed for all steps at once (as each
    step would: nodes ascending, each node's first start and latest end)."""
    spans = scratch.spans
    key = marks["spans"] * n + spans["node"].astype(np.int64)
    order = np.argsort(key, kind="stable")
    keys, first = np.unique(key[order], return_index=True)
    if len(keys):
        starts = np.minimum.reduceat(spans["start"][order], first)
        ends = np.maximum.reduceat(spans["end"][order], first)
    else:
        starts = ends = _i64()
    at = np.searchsorted(keys // max(n, 1), np.arange(steps + 1)).tolist()
    nodes = keys % max(n, 1)
    node_spans = [(nodes[lo:hi], starts[lo:hi], ends[lo:hi]) for lo, hi in zip(at, at[1:])]
    walls = _walls(starts, ends, at)
    pairs = _distinct_keys(marks["pairs"] * n + scratch.pairs["node"].astype(np.int64))
    at = np.searchsorted(pairs // max(n, 1), np.arange(steps + 1)).tolist()
    present = pairs % max(n, 1)
    return {
        "spans": node_spans,
        "present": [present[lo:hi] for lo, hi in zip(at, at[1:])],
        "wall": walls,
    }


def _walls(starts: I64, ends: I64, at: list[int]) -> list[tuple[int, int] | None]:
    """Each step's (first start, last end) over its records (the nodes' spans of
    step ``i``: ``at[i]:at[i + 1]``), as :meth:`StepExecs.wall_span` reads them
    without the step's own span: the non-zero starts and ends only, the end the
    start when none; None without a start."""
    bounds = np.asarray(at, dtype=np.int64)
    lows = bounds[:-1][bounds[:-1] < bounds[1:]]  # the steps with spans
    if not len(lows):
        return [None] * (len(at) - 1)
    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    has_start = np.add.reduceat((starts != 0).astype(np.int64), lows).tolist()
    has_end = np.add.reduceat((ends != 0).astype(np.int64), lows).tolist()
    first = np.minimum.reduceat(np.where(starts != 0, starts, big), lows).tolist()
    last = np.maximum.reduceat(np.where(ends != 0, ends, small), lows).tolist()
    out: list[tuple[int, int] | None] = []
    k = 0
    for lo, hi in zip(at, at[1:]):
        if hi <= lo:
            out.append(None)
            continue
        out.append((first[k], last[k] if has_end[k] else first[k]) if has_start[k] else None)
        k += 1
    return out


def _fold(model: ProfileModel, numbers: Sequence[int], scratch: StepExecs, pair_steps: I64,
          pair_nodes: I64) -> None:  # fmt: skip
    """Add the new steps' sums to the model's running sums at once (the per-node
    step counts: the distinct (step, node) pairs)."""
    run = model._running  # noqa: SLF001 - current since add_steps began
    n = len(model.names)
    if run is None:
        running_sums(model, n)
        return
    run.pad(n)
    present = _distinct_keys(pair_steps * n + pair_nodes) % n if n else _i64()
    totals = scratch.totals(n)
    run.count += np.bincount(present, minlength=n).astype(np.int64)
    for name, values in run.sums.items():
        values += getattr(totals, name)
    for number in numbers:
        run.included[number] = model.steps[number].version
    run.seen = StepExecs.changes


def add_many(
    model: ProfileModel, steps: Iterable[tuple[int, StepColumns, I64]], rows: int | None = None
) -> None:
    """Add (number, columns, exact tracer durations in ns) of each step with
    records, in batches of about ``rows`` records (:func:`add_steps`; a batch
    of one step, or one it declines, goes through ``add_step``); the GPU tracer
    records keep the exact durations (the columns hold µs). ``rows``: default
    :data:`BATCH_ROWS`; 1 adds every step by itself."""
    rows = BATCH_ROWS if rows is None else rows
    batch: list[tuple[int, StepColumns, I64]] = []
    held = 0
    for item in steps:
        if len(item[1]):
            batch.append(item)
            held += len(item[1])
        del item
        if held >= rows:
            _add_batch(model, batch)
            batch, held = [], 0
    _add_batch(model, batch)


def _add_batch(model: ProfileModel, batch: list[tuple[int, StepColumns, I64]]) -> None:
    numbers = [number for number, _, _ in batch]
    durations = [ns for _, _, ns in batch]
    if len(batch) > 1 and add_steps(model, numbers, [cols for _, cols, _ in batch], durations):
        return
    del durations
    while batch:
        number, cols, exact = batch.pop(0)
        execs = model.steps.get(number)
        before = len(execs.kernels) if execs is not None else 0
        model.add_step(number, cols)
        kernels = model.steps[number].kernels
        if len(kernels) == before + len(exact):
            kernels.dur_ns[before:] = exact.tolist()
        del cols, exact
