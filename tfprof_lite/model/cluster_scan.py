"""The first pass of a merge: what every input's raw step columns say.

:func:`scan_inputs` reads each input's RunMetadata columns once and keeps only
what the merge needs before it builds anything: the tasks met (and how many
records each input has per task, to find the task that ran its client), the
tensor transfers between tasks (bytes corrected from the producer's recorded
output size where there is one), one clock constraint per transfer whose
producer ran in the same step of the same input, and the ``timeline_label`` of
every node of a parameter-server job (what the ps load reads variables from).
Only the rows that matter are walked in Python (``RecvTensor`` rows, their
producers, the rows of ``ps`` devices); the columns are dropped after each step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tfprof_lite.model.cluster import TaskInput, Transfers, task_of, transfers_from_columns
from tfprof_lite.proto.steps import StepColumns

__all__ = ["Scan", "scan_inputs"]


@dataclass
class Scan:
    """What the first pass found (see the module docstring)."""

    tasks: dict[str, int] = field(default_factory=dict)
    counts: list[dict[str, int]] = field(default_factory=list)
    transfers: dict[tuple[int, int], Transfers] = field(default_factory=dict)
    constraints: list[tuple[str, str, int]] = field(default_factory=list)
    labels: dict[tuple[str, str], str] = field(default_factory=dict)


def _row_tasks(cols: StepColumns) -> list[str | None]:
    return [task_of(d.lower()) for d in cols.devices]


def _count(cols: StepColumns, dev_task: list[str | None], counts: dict[str, int]) -> None:
    if not len(cols):
        return
    per_dev = np.bincount(cols.dev, minlength=len(cols.devices)).tolist()
    for task, n in zip(dev_task, per_dev):
        if task is not None:
            counts[task] = counts.get(task, 0) + int(n)


def _ps_labels(
    cols: StepColumns, dev_task: list[str | None], labels: dict[tuple[str, str], str]
) -> None:
    ps_devs = [i for i, t in enumerate(dev_task) if t is not None and t.startswith("/job:ps/")]
    if not ps_devs:
        return
    for row in np.flatnonzero(np.isin(cols.dev, ps_devs)).tolist():
        label = cols.label[row]
        if label and " = " in label:
            task = dev_task[int(cols.dev[row])]
            assert task is not None
            labels.setdefault((task, cols.name[row].split(":", 1)[0]), label)


def _producers(
    cols: StepColumns, dev_task: list[str | None], wanted: set[str]
) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """(task, node) -> earliest end and first-output bytes, for nodes in ``wanted``."""
    ends: dict[tuple[str, str], int] = {}
    sizes: dict[tuple[str, str], int] = {}
    rows = [r for r, n in enumerate(cols.name) if n.split(":", 1)[0] in wanted]
    if not rows:
        return ends, sizes
    dev = cols.dev.tolist()
    for row in rows:
        task = dev_task[dev[row]]
        if task is None:
            continue
        key = (task, cols.name[row].split(":", 1)[0])
        end = int(cols.start[row] + cols.rel[row])
        if key not in ends or end < ends[key]:
            ends[key] = end
    picked = set(rows)
    for row, slot, nbytes in zip(cols.o_row.tolist(), cols.o_slot.tolist(), cols.o_bytes.tolist()):
        task = dev_task[dev[row]] if row in picked else None
        if slot == 0 and task is not None:
            sizes[(task, cols.name[row].split(":", 1)[0])] = nbytes
    return ends, sizes


def _scan_step(scan: Scan, source: int, step: int, cols_list: list[StepColumns]) -> None:
    counts = scan.counts[source]
    found: list[Transfers] = []
    for cols in cols_list:
        dev_task = _row_tasks(cols)
        for task in dev_task:
            if task is not None:
                scan.tasks.setdefault(task, len(scan.tasks))
        _count(cols, dev_task, counts)
        _ps_labels(cols, dev_task, scan.labels)
        found.append(transfers_from_columns(cols, scan.tasks, source))
    names = list(scan.tasks)
    wanted = {node for got in found for node in got.node}
    ends: dict[tuple[str, str], int] = {}
    sizes: dict[tuple[str, str], int] = {}
    if wanted:
        for cols in cols_list:
            got_ends, got_sizes = _producers(cols, _row_tasks(cols), wanted)
            for key, end in got_ends.items():
                ends[key] = min(end, ends.get(key, end))
            sizes.update(got_sizes)
    rows = scan.transfers.setdefault((source, step), Transfers())
    for got in found:
        for row, (s, d, node, end) in enumerate(zip(got.src, got.dst, got.node, got.end)):
            produced = ends.get((names[s], node))
            if produced is not None:
                scan.constraints.append((names[s], names[d], produced - end))
            got.nbytes[row] = sizes.get((names[s], node), got.nbytes[row])
        rows.extend(got)


def scan_inputs(inputs: list[TaskInput]) -> Scan:
    """The first pass over every input's raw columns (see the module docstring)."""
    scan = Scan()
    for source, inp in enumerate(inputs):
        scan.counts.append({})
        for step in inp.source_steps():
            cols_list = inp.step_columns(step)
            if cols_list:
                _scan_step(scan, source, step, cols_list)
    return scan
