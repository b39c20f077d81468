"""Step records and their memory records placed in one order, as ``AddStep`` reads them.

:func:`placed` lays out the rows of a :class:`~tfprof_lite.model.step_records.StepRecords`
and of its :class:`~tfprof_lite.model.memory_records.MemoryRecords` the way a
RunMetadata of each step holding both would list them:

* a memory record takes the place of the first record of its step with the
  same node on the same lane (that record's times and label are the memory
  record's); otherwise it is a record of its own, at its first event, with no
  duration, no label and no time (``untimed``: it moves the step's start and
  end, it adds no time);
* in a step, its records (less those taken) come first, then its memory
  records in their order;
* each step's device table lists the lanes of its records (those taken
  included) by first use, then the lanes of its memory records not listed yet.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tfprof_lite.model.step_records import StepRecords

__all__ = ["Placed", "placed"]

I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]


@dataclass
class Placed:
    """The rows in their order: ``source`` (>= 0: a record of the step records;
    -1 - r: memory record ``r``), ``step``, ``lane``, ``start``/``rel`` (µs),
    ``label`` (into the step records' label table, -1: none) and ``untimed``;
    ``code``: each row's device number in its step's table; the tables:
    ``table_lane`` (lanes, step by step) and ``table_at`` (step ``i``'s are
    ``table_at[i]:table_at[i + 1]``)."""

    source: I64
    step: I64
    lane: I64
    start: I64
    rel: I64
    label: I64
    untimed: Bools
    code: I64
    table_lane: I64
    table_at: I64


def placed(records: StepRecords, start: I64, rel: I64, label: I64) -> Placed:
    """The rows of ``records`` and their memory records (see the module
    docstring); ``start``/``rel``/``label``: the records' µs and labels."""
    n, steps = len(records), records.steps
    step = np.repeat(np.arange(steps, dtype=np.int64), np.diff(records.bounds))
    lane = records.lane.astype(np.int64)
    mem = records.memory
    if mem is None or not len(mem):
        code, table_lane, table_at = _tables(step, lane, steps, len(records.lanes))
        return Placed(np.arange(n, dtype=np.int64), step, lane, start, rel, label,
                      np.zeros(n, dtype=bool), code, table_lane, table_at)  # fmt: skip
    taken = _taken(records, step, lane)
    hit = taken >= 0
    at = np.maximum(taken, 0)
    m_start = np.where(hit, start[at] if n else 0, records.micros(mem.first_ps))
    keep = np.ones(n, dtype=bool)
    keep[taken[hit]] = False
    rows = np.flatnonzero(keep)
    m_step = mem.step.astype(np.int64)
    source = np.concatenate([rows, -1 - np.arange(len(mem), dtype=np.int64)])
    all_step = np.concatenate([step[rows], m_step])
    order = np.lexsort((source < 0, all_step))  # stable: by step, records first
    # The tables: every record's lane (those taken too), then the memory records'.
    code_of, table_lane, table_at = _tables(
        np.concatenate([step, m_step]), np.concatenate([lane, mem.lane.astype(np.int64)]),
        steps, len(records.lanes), ends_first=n,
    )  # fmt: skip
    code_all = np.concatenate([code_of[rows], code_of[n:]])
    return Placed(
        source=source[order], step=all_step[order],
        lane=np.concatenate([lane[rows], mem.lane.astype(np.int64)])[order],
        start=np.concatenate([start[rows], m_start])[order],
        rel=np.concatenate([rel[rows], np.where(hit, rel[at] if n else 0, 0)])[order],
        label=np.concatenate([label[rows], np.where(hit, label[at] if n else -1, -1)])[order],
        untimed=np.concatenate([np.zeros(len(rows), dtype=bool), ~hit])[order],
        code=code_all[order], table_lane=table_lane, table_at=table_at,
    )  # fmt: skip


def _taken(records: StepRecords, step: I64, lane: I64) -> I64:
    """Per memory record, the record whose place it takes (-1: none): the first
    of its step with its node on its lane."""
    mem = records.memory
    assert mem is not None
    width = max(len(records.texts), int(mem.node.max(initial=-1)) + 1, 1)
    lanes = max(len(records.lanes), 1)
    key = (step * lanes + lane) * width + records.node.astype(np.int64)
    keys, first = np.unique(key, return_index=True)
    wanted = (mem.step.astype(np.int64) * lanes + mem.lane) * width + mem.node.astype(np.int64)
    pos = np.minimum(np.searchsorted(keys, wanted), max(len(keys) - 1, 0))
    found = (keys[pos] == wanted) if len(keys) else np.zeros(len(wanted), dtype=bool)
    return np.where(found, first[pos] if len(keys) else -1, -1).astype(np.int64)


def _tables(step: I64, lane: I64, steps: int, lanes: int, ends_first: int | None = None
            ) -> tuple[I64, I64, I64]:  # fmt: skip
    """Each row's number in its step's table of lanes, the tables' lanes step
    by step, and where each step's begin. A step lists its lanes by first use
    in row order; with ``ends_first``, the rows from there on (memory records)
    come after every earlier row of their step."""
    n = len(step)
    part = np.zeros(n, dtype=bool)
    if ends_first is not None:
        part[ends_first:] = True
    order = np.lexsort((part, step))
    width = max(lanes, 1)
    key = step * width + lane
    keys, first = np.unique(key[order], return_index=True)
    by_use = np.argsort(first, kind="stable")  # (first uses ascend with the step)
    table_step = keys[by_use] // width
    local = np.arange(len(keys), dtype=np.int64) - np.searchsorted(table_step, table_step)
    rank = np.empty(len(keys), dtype=np.int64)
    rank[by_use] = local
    code = rank[np.searchsorted(keys, key)] if n else np.zeros(0, dtype=np.int64)
    table_at = np.searchsorted(table_step, np.arange(steps + 1)).astype(np.int64)
    return code, keys[by_use] % width, table_at
