"""Merging the profiles of several tasks into one :class:`ClusterProfile`.

:func:`merge_inputs` takes :class:`~tfprof_lite.model.cluster.TaskInput` s and
builds one :class:`~tfprof_lite.model.profile.ProfileModel` in which

* every record belongs to the task of the device it ran on, and a node is kept
  apart per task under its qualified name (``job_worker/replica_0/task_1/MatMul``:
  :func:`~tfprof_lite.model.cluster.qualify`); with ``by_name`` the tasks are
  dropped and same-named nodes add up, as one machine's profile would;
* steps are matched by training step: the global step each input recorded
  (``step_basis="global"``), or each input's own step numbers (``"local"``;
  inputs whose files are named by global step are numbered 0, 1, ... instead);
  ``"auto"`` takes global steps when every input recorded them and some global
  step is shared by two inputs (synchronous training), else step numbers
  (asynchronous between-graph training gives every worker its own global steps);
* every time is moved onto one clock (:mod:`tfprof_lite.model.clock`).

Inputs are the tasks of one run: two inputs whose client ran the same task
(two runs of one program, both ``/job:localhost/replica:0/task:0``) are refused
with :class:`~tfprof_lite.errors.SameTaskError` before anything is built, unless
``allow_same_task`` asks for the merge.

Two passes: :func:`~tfprof_lite.model.cluster_scan.scan_inputs` reads the raw
columns for the tasks, transfers and clock constraints; then raw columns go
into the merged model through the model's own ``add_step`` (names qualified,
starts shifted), and loaded models are copied
(:mod:`tfprof_lite.model.cluster_copy`). No per-task model is built for raw
inputs, so memory stays about that of the merged profile.
"""

from __future__ import annotations

import dataclasses
import gc
from dataclasses import dataclass, field

import numpy as np

from tfprof_lite.errors import InvalidInputError, SameTaskError
from tfprof_lite.model.clock import ClockEstimate, estimate_offsets
from tfprof_lite.model.cluster import (
    UNKNOWN_TASK,
    TaskInput,
    Transfers,
    split_qualified,
    task_of,
    task_prefix,
    task_sort_key,
)
from tfprof_lite.model.cluster_copy import Builder, merge_model
from tfprof_lite.model.cluster_scan import Scan, scan_inputs
from tfprof_lite.model.execs import StepExecs
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.proto.steps import StepColumns

__all__ = ["STEP_BASES", "ClusterProfile", "describe_task", "merge_inputs"]

#: How steps of different inputs are matched.
STEP_BASES = ("auto", "global", "local")
#: Record names ``add_step`` drops or keeps as they are (not node names).
_UNQUALIFIED = frozenset({"RecvTensor", "_SOURCE"})


@dataclass
class ClusterProfile:
    """Several tasks' profiles merged onto one clock (see the module docstring).

    Attributes:
        model: the merged profile store (qualified node names unless ``by_name``).
        tasks: every task, in (job, replica, task) order.
        own_tasks: per input, the task that ran its client session.
        sources: per input, where it came from.
        hosts: task -> host name, where known.
        clock: the offsets applied per task.
        step_basis: ``"global"`` or ``"local"``: how steps were matched.
        transfers: merged step -> tensor transfers between tasks (aligned times).
        labels: (task, node name) -> a ``timeline_label`` of a ps task's node.
        op_types: plain node name -> op type read from the records' labels.
        by_name: whether same-named nodes of different tasks were added up.
    """

    model: ProfileModel
    tasks: list[str] = field(default_factory=list)
    own_tasks: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    hosts: dict[str, str] = field(default_factory=dict)
    clock: ClockEstimate = field(default_factory=ClockEstimate)
    step_basis: str = "local"
    transfers: dict[int, Transfers] = field(default_factory=dict)
    labels: dict[tuple[str, str], str] = field(default_factory=dict)
    op_types: dict[str, str] = field(default_factory=dict)
    by_name: bool = False

    def task_index(self) -> dict[str, int]:
        """Task -> its position in :attr:`tasks`."""
        return {t: i for i, t in enumerate(self.tasks)}


def _step_maps(inputs: list[TaskInput], basis: str) -> tuple[list[dict[int, int]], str]:
    """Per input source step -> merged step, and the basis used."""
    if basis not in STEP_BASES:
        raise InvalidInputError(f"step matching must be one of {', '.join(STEP_BASES)}")
    steps = [inp.source_steps() for inp in inputs]
    recorded = all(set(s) <= set(inp.step_keys) for s, inp in zip(steps, inputs) if s)
    if basis == "auto":
        basis = "local"
        if recorded:
            seen: dict[int, int] = {}
            for inp in inputs:
                for key in set(inp.step_keys.values()):
                    seen[key] = seen.get(key, 0) + 1
            if len(inputs) == 1 or any(c > 1 for c in seen.values()):
                basis = "global"
    maps = []
    for inp, own in zip(inputs, steps):
        if basis == "global":
            maps.append({s: inp.step_keys.get(s, s) for s in own})
        elif inp.global_numbers:
            maps.append({s: i for i, s in enumerate(own)})
        else:
            maps.append({s: s for s in own})
    return maps, basis


def _model_tasks(inputs: list[TaskInput], found: set[str]) -> None:
    """Add the tasks of the loaded models' devices to ``found``."""
    for inp in inputs:
        if inp.model is None:
            continue
        for execs in inp.model.steps.values():
            found.update(t for d in execs.device_names if (t := task_of(d)))
        for dev in set(inp.model.canonical_device):
            if dev and (t := task_of(dev)):
                found.add(t)


def _retagged(
    cols: StepColumns,
    tasks: dict[str, int],
    own: int,
    prefixes: list[str] | None,
    shift: np.ndarray,
) -> StepColumns:
    """``cols`` with every record named for its device's task and moved by its
    task's clock offset (starts of 0, meaning none, stay 0)."""
    dev_task = np.asarray(
        [tasks.get(task_of(d.lower()) or "", own) for d in cols.devices] + [own], dtype=np.int64
    )
    row_task = dev_task[cols.dev] if len(cols) else np.zeros(0, np.int64)
    names = cols.name
    if prefixes is not None:
        names = [
            n if n in _UNQUALIFIED or "MEMCPY" in n else prefixes[t] + n
            for n, t in zip(names, row_task.tolist())
        ]
    start = np.where(cols.start > 0, cols.start + shift[row_task], cols.start)
    return dataclasses.replace(cols, name=names, start=start)


def _note_ops(cols: StepColumns, op_types: dict[str, str]) -> None:
    """Op types of the records' nodes, read once per name from ``name = Op(...)``."""
    for name, label in zip(cols.name, cols.label):
        if name not in op_types and " = " in label:
            op_types[name.split(":", 1)[0]] = label.split(" = ", 1)[1].split("(", 1)[0].lstrip("_")


def _plain_ops(model: ProfileModel, first: int) -> None:
    """Nodes ``first..`` met in records take their plain name as op (a node first
    met in RunMetadata has its name as op, as in tfprof), so the op view adds
    the same node of every task up."""
    for nid in range(first, len(model)):
        name = model.names[nid]
        if model.ops[nid] == name:
            plain = split_qualified(name)[1]
            model.ops[nid] = plain
            model.op_types[nid].discard(name)
            model.op_types[nid].add(plain)


def _by_name(cluster: ClusterProfile, tasks: dict[str, int]) -> None:
    """Replace the per-task merged model by one with a node per plain name."""
    per_task = cluster.model
    cluster.model = ProfileModel()
    cluster.by_name = True
    builder = Builder(cluster.model, cluster.tasks, True)
    zero = np.zeros(len(cluster.tasks), dtype=np.int64)
    own = tasks[cluster.own_tasks[0]]
    merge_model(builder, per_task, own, tasks, {s: s for s in per_task.steps}, zero)
    cluster.model.id_to_string.update(per_task.id_to_string)
    cluster.model.has_trace = per_task.has_trace


def _aligned_transfers(
    scan: Scan, maps: list[dict[int, int]], renumber: list[int], shift: np.ndarray
) -> dict[int, Transfers]:
    out: dict[int, Transfers] = {}
    for (source, step), rows in scan.transfers.items():
        rows.src = [renumber[i] for i in rows.src]
        rows.dst = [renumber[i] for i in rows.dst]
        rows.start = [s + int(shift[d]) for s, d in zip(rows.start, rows.dst)]
        rows.end = [e + int(shift[d]) for e, d in zip(rows.end, rows.dst)]
        out.setdefault(maps[source].get(step, step), Transfers()).extend(rows)
    return out


def _plan(
    inputs: list[TaskInput], maps: list[dict[int, int]], basis: str, same_clock: bool
) -> ClusterProfile:
    """The first pass and everything decided from it: tasks, clients, the clock,
    the aligned transfers; the model is still empty."""
    scan = scan_inputs(inputs)
    own = [inp.own_task(c or None) or UNKNOWN_TASK for inp, c in zip(inputs, scan.counts)]
    found = set(scan.tasks) | set(own)
    _model_tasks(inputs, found)
    task_list = sorted(found, key=task_sort_key)
    tasks = {t: i for i, t in enumerate(task_list)}
    hosts = {own[i]: inp.host for i, inp in enumerate(inputs) if inp.host}
    clock = estimate_offsets(task_list, scan.constraints, hosts, same_clock)
    return ClusterProfile(
        model=ProfileModel(),
        tasks=task_list,
        own_tasks=own,
        sources=[inp.label for inp in inputs],
        hosts=hosts,
        clock=clock,
        step_basis=basis,
        transfers=_aligned_transfers(
            scan, maps, [tasks[t] for t in scan.tasks], _shift(clock, task_list)
        ),
        labels=scan.labels,
    )


def describe_task(task: str) -> str:
    """``task /job:...`` for messages; the stand-in for records of no task says so."""
    if task == UNKNOWN_TASK:
        return "no known task (their devices name none)"
    return f"task {task}"


def _refuse_same_task(cluster: ClusterProfile) -> None:
    """Raises :class:`SameTaskError` for the first two inputs of one client task."""
    seen: dict[str, int] = {}
    for i, task in enumerate(cluster.own_tasks):
        if task not in seen:
            seen[task] = i
            continue
        first, second = cluster.sources[seen[task]], cluster.sources[i]
        raise SameTaskError(
            f"{first} and {second} are both profiles of {describe_task(task)}: profiles of "
            "one task are not the tasks of a cluster (compare two runs with "
            "tfprof_lite.analysis.diff; allow_same_task=True merges them anyway)",
            (first, second),
            task,
        )


def _shift(clock: ClockEstimate, tasks: list[str]) -> np.ndarray:
    """Each task's offset, by task index."""
    return np.asarray([clock.offsets.get(t, 0) for t in tasks], dtype=np.int64)


def merge_inputs(
    inputs: list[TaskInput],
    *,
    by_name: bool = False,
    step_basis: str = "auto",
    same_clock: bool = False,
    allow_same_task: bool = False,
) -> ClusterProfile:
    """Merge the profiles of several tasks (see the module docstring).

    Raises:
        InvalidInputError: no inputs, or an unknown ``step_basis``.
        SameTaskError: two inputs are of one task and ``allow_same_task`` is false.
    """
    if not inputs:
        raise InvalidInputError("nothing to merge: give at least one profile")
    maps, basis = _step_maps(inputs, step_basis)
    collecting = gc.isenabled()
    gc.disable()  # millions of long-lived small objects: no cyclic collection meanwhile
    try:
        cluster = _plan(inputs, maps, basis, same_clock)
        if not allow_same_task:
            _refuse_same_task(cluster)
        tasks = cluster.task_index()
        shift = _shift(cluster.clock, cluster.tasks)
        _build(cluster, inputs, tasks, maps, shift)  # per task (add_step: one device per node)
        if by_name:
            _by_name(cluster, tasks)
    finally:
        if collecting:
            gc.enable()
    return cluster


def _build(
    cluster: ClusterProfile,
    inputs: list[TaskInput],
    tasks: dict[str, int],
    maps: list[dict[int, int]],
    shift: np.ndarray,
) -> None:
    """The second pass: every input into the merged model."""
    merged = cluster.model
    builder = Builder(merged, cluster.tasks, cluster.by_name)
    prefixes = None if cluster.by_name else [task_prefix(t) for t in cluster.tasks]
    for i, inp in enumerate(inputs):
        own = tasks[cluster.own_tasks[i]]
        if inp.model is not None:
            merge_model(builder, inp.model, own, tasks, maps[i], shift)
            for key, text in inp.model.id_to_string.items():
                merged.id_to_string.setdefault(key, text)
            merged.has_trace = merged.has_trace or inp.model.has_trace
            for step in inp.source_steps():
                for cols in inp.step_columns(step):
                    _note_ops(cols, cluster.op_types)
            continue
        for step in inp.source_steps():
            for cols in inp.step_columns(step):
                _note_ops(cols, cluster.op_types)
                first = len(merged)
                merged.add_step(
                    maps[i].get(step, step), _retagged(cols, tasks, own, prefixes, shift)
                )
                _plain_ops(merged, first)
    for step in cluster.transfers:
        merged.steps.setdefault(step, StepExecs())
    merged.data_version += 1
    merged.graph_version += 1
