"""Many steps into the model at once, as one ``add_step`` per step would.

:func:`add_steps` takes the step columns of many new step numbers (RunMetadata
steps), :func:`add_records` the model's typed records of many steps read out
of a window of events (:mod:`tfprof_lite.model.step_records`: an XSpace's,
:func:`tfprof_lite.formats.xspace.read.conversion.add_plan`) in batches of
whole steps, and :func:`add_spans` gives steps their own spans. Both apply
tfprof's ``AddStep`` rules (:mod:`tfprof_lite.model.step_ingest`) to all the
records of a batch in one pass: the steps' rows are laid end to end in one
block (:class:`~tfprof_lite.model.record_block.Block`: a step index per row,
each step's device strings numbered in one table), the node
lookup, canonical device binding, times, spans and memory records are computed
over the block, and each step's :class:`~tfprof_lite.model.execs.StepExecs`
is deferred (:meth:`~tfprof_lite.model.execs.StepExecs.deferred`): its column
groups, device names, kept memory records and kernels are spans of the block's
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

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tfprof_lite.base.arrays import I64, empty_i64
from tfprof_lite.model.devices import (
    DEVICE_CANONICAL,
    classify_device,
)
from tfprof_lite.model.exec_columns import COLUMN_TYPES, Columns, KernelColumns
from tfprof_lite.model.execs import StepExecs
from tfprof_lite.model.record_block import UNKNOWN, Block
from tfprof_lite.model.step_ingest import (
    MemoryRows,
    _add_memory,
    _add_times,
    _check_streams,
    _distinct,
    _node_ids,
    bind_canonical,
)
from tfprof_lite.model.step_records import StepRecords
from tfprof_lite.model.step_spans import StepSpan
from tfprof_lite.model.step_sums import running_sums
from tfprof_lite.proto.steps import StepColumns

if TYPE_CHECKING:
    from tfprof_lite.model.profile import ProfileModel

__all__ = ["BATCH_ROWS", "add_records", "add_spans", "add_steps"]


#: :func:`add_records` adds the steps in blocks of about this many records.
BATCH_ROWS = 1 << 18


def _distinct_keys(keys: I64) -> I64:
    """The distinct values, ascending (a bare ``np.unique`` imports ``numpy.ma``)."""
    found: I64 = np.unique(keys, return_index=True)[0]
    return found


def add_steps(
    model: ProfileModel,
    numbers: Sequence[int],
    columns: Sequence[StepColumns],
) -> bool:
    """Add step ``numbers[i]``'s ``columns[i]`` for every ``i`` (see the module
    docstring); False, having changed nothing, when a number is in the model
    already or repeats."""
    if not _new(model, numbers):
        return False
    if numbers:
        _add_block(model, numbers, Block.of_columns(columns))
    return True


def add_records(model: ProfileModel, records: StepRecords, rows: int | None = None) -> None:
    """Add the steps of ``records`` (see :mod:`tfprof_lite.model.step_records`)
    in batches of whole steps of about ``rows`` records (default
    :data:`BATCH_ROWS`). A step with no record is left out (:func:`add_spans`
    gives the steps their spans, after); steps the model holds already are
    added one by one, as ``add_step`` adds a RunMetadata's."""
    rows = BATCH_ROWS if rows is None else rows
    bounds = records.bounds.tolist()
    first = 0
    while first < records.steps:
        last = first + 1
        while last < records.steps and bounds[last + 1] - bounds[first] <= rows:
            last += 1
        part = _with_rows(records.take(first, last))
        if _new(model, part.numbers):
            if part.numbers:
                _add_block(model, part.numbers, Block.of_records(part))
        else:
            _one_by_one(model, part)
        first = last


def _with_rows(records: StepRecords) -> StepRecords:
    """``records`` without its steps that have no record (nor memory record)."""
    sizes = np.diff(records.bounds)
    mem = records.memory
    if mem is not None and len(mem):
        sizes = sizes + np.bincount(mem.step, minlength=records.steps)
    if (sizes > 0).all():
        return records
    keep = np.flatnonzero(sizes > 0)
    records.numbers = [records.numbers[i] for i in keep.tolist()]
    records.bounds = np.append(records.bounds[keep], records.bounds[-1])
    records.spans = [records.spans[i] for i in keep.tolist() if i < len(records.spans)]
    if mem is not None and len(mem):
        new_index = np.cumsum(sizes > 0) - 1
        mem.step = new_index[mem.step]
    return records


def _new(model: ProfileModel, numbers: Sequence[int]) -> bool:
    """Whether ``numbers`` are distinct and none is in the model."""
    return len(set(numbers)) == len(numbers) and not any(n in model.steps for n in numbers)


def _one_by_one(model: ProfileModel, records: StepRecords) -> None:
    """Each step of ``records`` through ``add_step`` (its RunMetadata shape)."""
    block = Block.of_records(records)
    for i, number in enumerate(records.numbers):
        execs = model.steps.get(number)
        before = len(execs.kernels) if execs is not None else 0
        model.add_step(number, block.step_columns(i))
        kernels = model.steps[number].kernels
        exact = block.step_exact(i)
        if len(kernels) == before + len(exact):
            kernels.dur_ns[before:] = exact.tolist()


def add_spans(
    model: ProfileModel, numbers: Sequence[int], spans: Sequence[StepSpan | None]
) -> None:
    """Give step ``numbers[i]`` of ``model`` its span ``spans[i]`` (None: none).

    A step with a span and no record (a marker around nothing traced) is made,
    empty; a step given a span again (another file of the same step) keeps the
    span over both."""
    for number, span in zip(numbers, spans, strict=False):
        if span is None:
            continue
        if number not in model.steps:
            model.add_step(number, StepColumns(has_step_stats=True))
        execs = model.steps[number]
        execs.span = span if execs.span is None else execs.span.widened(span)


def _add_block(model: ProfileModel, numbers: Sequence[int], block: Block) -> None:
    """Add step ``numbers[i]``'s rows of ``block`` for every ``i`` (new numbers)."""
    run = model._running  # noqa: SLF001
    if run is None or run.seen != StepExecs.changes:  # current before the steps come
        running_sums(model, len(model.names))
    for lowered in block.tables:
        _check_streams(model, lowered)
    kernels = _kernels(block)
    cols, devices = block.cols, block.devices
    nid = _node_ids(model, cols)
    classes = np.asarray([classify_device(d) for d in devices], dtype=np.int64)
    row_cls = classes[cols.dev] if len(cols) else empty_i64()
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
    _make_steps(model, numbers, _Source(block, scratch, marks, kernels), seeds)
    _fold(model, numbers, scratch, step_of[rows], kept)


def _memory_marks(
    marks: dict[str, I64], memory: MemoryRows | None, cols: StepColumns, step_of: I64
) -> None:
    """The step of each memory record, output, allocation and raw record."""
    if memory is None:
        marks.update(mem=empty_i64(), outs=empty_i64(), allocs=empty_i64(), raws=empty_i64())
        return
    marks["mem"] = step_of[memory.rows]
    marks["outs"] = step_of[cols.o_row[memory.outs]] if cols.o_row.size else empty_i64()
    marks["allocs"] = step_of[cols.a_row[memory.allocs]] if cols.a_row.size else empty_i64()
    marks["raws"] = step_of[cols.r_row[memory.raws]] if cols.r_row.size else empty_i64()


def _kernels(block: Block) -> tuple[I64, list[tuple[int, int]]]:
    """The GPU tracer rows of the block, and each step's (first, end) among them."""
    rows, at = block.tracer_rows()
    return rows, list(zip(at[:-1], at[1:], strict=True))


class _Source:
    """The new steps' parts over the batch's arrays (:class:`StepSource`): each
    step's column groups are spans of the scratch step's columns, its kernels a
    span of the block's GPU tracer rows."""

    def __init__(
        self,
        block: Block,
        scratch: StepExecs,
        marks: dict[str, I64],
        kernels: tuple[I64, list[tuple[int, int]]],
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
        self.exact = block.exact.tolist()

    def group(self, index: int, name: str) -> Columns:
        """Step ``index``'s column group ``name``."""
        cut = self.cuts[name]
        return Columns(COLUMN_TYPES[name], self.shared[name], cut[index], cut[index + 1])

    def device_names(self, index: int) -> list[str]:
        """Step ``index``'s device strings."""
        return list(self.names[index])

    def device_table(self, index: int) -> list[str]:
        """Step ``index``'s device strings (the shared table)."""
        return self.names[index]

    def span_of(self, index: int, name: str) -> tuple[dict[str, Any], int, int]:
        """Where step ``index``'s group ``name`` lies in the shared arrays."""
        cut = self.cuts[name]
        return self.shared[name], cut[index], cut[index + 1] - cut[index]

    def raws(self, index: int) -> tuple[list[int], list[object]]:
        """Step ``index``'s kept memory records (NodeExecStats bytes or typed records)."""
        lo, hi = self.raw_cut[index], self.raw_cut[index + 1]
        return self.raw_node[lo:hi], self.raw_stats[lo:hi]

    def kernels(self, index: int) -> KernelColumns:
        """Step ``index``'s GPU tracer records (exact durations in ns where given)."""
        lo, hi = self.spans[index]
        if hi <= lo:
            return KernelColumns()
        dur = self.k_dur[lo:hi]
        exact = self.exact[lo:hi]
        dur_ns = [e if e != UNKNOWN else d * 1000 for e, d in zip(exact, dur, strict=True)]
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
        starts = ends = empty_i64()
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
    present = _distinct_keys(pair_steps * n + pair_nodes) % n if n else empty_i64()
    totals = scratch.totals(n)
    run.count += np.bincount(present, minlength=n).astype(np.int64)
    for name, values in run.sums.items():
        values += getattr(totals, name)
    for number in numbers:
        run.included[number] = model.steps[number].version
    run.seen = StepExecs.changes
