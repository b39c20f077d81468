"""Merging the profiles of several tasks into one :class:`ClusterProfile`.

:func:`merge_inputs` takes :class:`~tfprof_lite.model.cluster.TaskInput` s and
builds one :class:`~tfprof_lite.model.profile.ProfileModel` in which

* every record belongs to the task of the device it ran on (records on devices
  without a task, and nodes that never ran, belong to their node's canonical
  device's task, else to the input's own task), and a node is kept apart per
  task under its qualified name (``job:worker/replica:0/task:1/MatMul``); with
  ``by_name`` the tasks are dropped and same-named nodes add up, as a
  single-machine profile would;
* steps are matched by training step: the global step each input recorded
  (``step_basis="global"``), or each input's own step numbers (``"local"``);
  ``"auto"`` takes global steps when every input recorded them and some global
  step is shared by two inputs (synchronous training), else step numbers
  (asynchronous between-graph training gives every worker its own global steps);
* every time is shifted onto one clock (:mod:`tfprof_lite.model.clock`).

Everything is copied as NumPy blocks; per distinct (node, task) pair one
Python-level node is made.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from tfprof_lite.errors import InvalidInputError
from tfprof_lite.model.clock import ClockEstimate, estimate_offsets
from tfprof_lite.model.cluster import (
    UNKNOWN_TASK,
    TaskInput,
    Transfers,
    qualify,
    task_of,
    task_sort_key,
    transfers_from_columns,
)
from tfprof_lite.model.execs import MEM_VALUES, StepExecs
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.proto.steps import StepColumns

__all__ = ["STEP_BASES", "ClusterProfile", "merge_inputs"]

IntArray = npt.NDArray[np.int64]
#: Maps (source nodes, task indices) to merged node ids.
Remap = Callable[[IntArray, IntArray], IntArray]

#: How steps of different inputs are matched.
STEP_BASES = ("auto", "global", "local")


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
        labels: (task, node name) -> a ``timeline_label`` of the node, where seen.
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
    by_name: bool = False

    def task_index(self) -> dict[str, int]:
        """Task -> its position in :attr:`tasks`."""
        return {t: i for i, t in enumerate(self.tasks)}


def _step_maps(inputs: list[TaskInput], basis: str) -> tuple[list[dict[int, int]], str]:
    """Per input source step -> merged step, and the basis used."""
    if basis not in STEP_BASES:
        raise InvalidInputError(f"step matching must be one of {', '.join(STEP_BASES)}")
    recorded = all(set(i.model.steps) <= set(i.step_keys) for i in inputs if i.model.steps)
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
    for inp in inputs:
        if basis == "global":
            maps.append({s: inp.step_keys.get(s, s) for s in inp.model.steps})
        elif inp.global_numbers:
            maps.append({s: i for i, s in enumerate(sorted(inp.model.steps))})
        else:
            maps.append({s: s for s in inp.model.steps})
    return maps, basis


def _producer_ends(
    inp: TaskInput, step: int, sizes: dict[tuple[str, str], int]
) -> dict[tuple[str, str], int]:
    """(task, node) -> earliest end of the node's records in one source step;
    fills ``sizes`` with the bytes of each node's first output where recorded."""
    ends: dict[tuple[str, str], int] = {}
    for cols in inp.columns.get(step, ()):
        for row, slot, nbytes in zip(
            cols.o_row.tolist(), cols.o_slot.tolist(), cols.o_bytes.tolist()
        ):
            task = task_of(cols.devices[cols.dev[row]].lower())
            if slot == 0 and task is not None:
                sizes[(task, cols.name[row].split(":", 1)[0])] = nbytes
        dev_task = [task_of(d.lower()) for d in cols.devices]
        end = (cols.start + cols.rel).tolist()
        for row, (name, dev) in enumerate(zip(cols.name, cols.dev.tolist())):
            task = dev_task[dev]
            if task is None or name == "RecvTensor":
                continue
            key = (task, name.split(":", 1)[0])
            if key not in ends or end[row] < ends[key]:
                ends[key] = end[row]
    return ends


def _collect(
    inputs: list[TaskInput], maps: list[dict[int, int]], tasks: dict[str, int]
) -> tuple[dict[int, Transfers], list[tuple[str, str, int]], dict[tuple[str, str], str]]:
    """Transfers per merged step, clock constraints and node labels from raw columns."""
    transfers: dict[int, Transfers] = {}
    constraints: list[tuple[str, str, int]] = []
    labels: dict[tuple[str, str], str] = {}
    names = list(tasks)
    for src, inp in enumerate(inputs):
        for step, cols_list in inp.columns.items():
            sizes: dict[tuple[str, str], int] = {}
            ends = _producer_ends(inp, step, sizes)
            for cols in cols_list:
                _labels(cols, labels)
                got = transfers_from_columns(cols, tasks, src)
                names = list(tasks)
                for row, (s, d, node, end) in enumerate(zip(got.src, got.dst, got.node, got.end)):
                    produced = ends.get((names[s], node))
                    if produced is not None:
                        constraints.append((names[s], names[d], produced - end))
                    got.nbytes[row] = sizes.get((names[s], node), got.nbytes[row])
                transfers.setdefault(maps[src].get(step, step), Transfers()).extend(got)
    return transfers, constraints, labels


def _labels(cols: StepColumns, labels: dict[tuple[str, str], str]) -> None:
    """Keep the first ``timeline_label`` of every (task, node) that has one."""
    dev_task = [task_of(d.lower()) for d in cols.devices]
    for name, label, dev in zip(cols.name, cols.label, cols.dev.tolist()):
        task = dev_task[dev]
        if label and task is not None and " = " in label:
            labels.setdefault((task, name.split(":", 1)[0]), label)


def _all_tasks(inputs: list[TaskInput], own: list[str]) -> dict[str, int]:
    found = set(own)
    for inp in inputs:
        for execs in inp.model.steps.values():
            found.update(t for d in execs.device_names if (t := task_of(d)))
        for dev in inp.model.canonical_device:
            if dev and (t := task_of(dev)):
                found.add(t)
    return {t: i for i, t in enumerate(sorted(found, key=task_sort_key))}


class _Builder:
    """Copies inputs into the merged model (one instance per merge)."""

    def __init__(self, merged: ProfileModel, tasks: list[str], by_name: bool) -> None:
        self.merged = merged
        self.tasks = tasks
        self.by_name = by_name

    def node(self, src: ProfileModel, nid: int, task: int, home: IntArray) -> int:
        """The merged id of source node ``nid`` of ``task`` (made when new)."""
        name = src.names[nid]
        qname = name if self.by_name else qualify(self.tasks[task], name)
        merged = self.merged
        got = merged.index.get(qname)
        if got is not None:
            return got
        new = merged.load_node(qname, src.ops[nid])
        merged.op_types[new] = set(src.op_types[nid])
        merged.shapes[new] = src.shapes[nid]
        merged.output_shapes[new] = src.output_shapes[nid]
        merged.attrs[new] = src.attrs[nid]
        merged.str_attrs[new] = src.str_attrs[nid]
        merged.static_float_ops[new] = src.static_float_ops[nid]
        merged.traces[new] = src.traces[nid]
        merged.canonical_device[new] = src.canonical_device[nid]
        merged.host_device[new] = src.host_device[nid]
        for pos, inp in src.inputs[nid].items():
            producer = src.index.get(inp)
            where = self.tasks[int(home[producer])] if producer is not None else self.tasks[task]
            qin = inp if self.by_name else qualify(where, inp)
            merged.inputs[new][pos] = qin
            merged.src_output[new][qin] = src.src_output[nid].get(inp, 0)
        return new


def _homes(src: ProfileModel, own: int, tasks: dict[str, int]) -> IntArray:
    """Per source node the task index of its canonical device, else ``own``."""
    out = np.full(len(src), own, dtype=np.int64)
    for nid, dev in enumerate(src.canonical_device):
        task = task_of(dev) if dev else None
        if task is not None:
            out[nid] = tasks[task]
    return out


def _mapper(builder: _Builder, src: ProfileModel, homes: IntArray, cache: dict[int, int]) -> Remap:
    """The remapping function of one input (new merged nodes made as needed)."""
    ntasks = len(builder.tasks)

    def ids(nodes: IntArray, task: IntArray) -> IntArray:
        keys = nodes.astype(np.int64) * ntasks + task
        uniq, inverse = np.unique(keys, return_inverse=True)
        out = np.empty(uniq.size, dtype=np.int64)
        for i, key in enumerate(uniq.tolist()):
            got = cache.get(key)
            if got is None:
                got = cache[key] = builder.node(src, key // ntasks, key % ntasks, homes)
            out[i] = got
        result: IntArray = out[inverse.reshape(-1)]
        return result

    return ids


def _copy_step(
    remap: Remap,
    execs: StepExecs,
    out: StepExecs,
    homes: IntArray,
    dev_task: IntArray,
    dev_shift: IntArray,
    task_shift: IntArray,
) -> list[int]:
    """Copy one source step into the merged step; returns the merged nodes that ran."""
    codes = np.asarray([out.device_code(d) for d in execs.device_names] + [-1], dtype=np.int64)
    pn = execs.pairs["node"].astype(np.int64)
    pd = execs.pairs["dev"].astype(np.int64)
    ptask = np.where(pd >= 0, dev_task[pd], homes[pn]) if pn.size else pn
    pairs = remap(pn, ptask)
    out.pairs.append(node=pairs, dev=codes[pd])
    tn = execs.times["node"].astype(np.int64)
    td = execs.times["dev"].astype(np.int64)
    out.times.append(
        node=remap(tn, dev_task[td]) if tn.size else tn,
        kind=execs.times["kind"],
        dev=codes[td],
        start=execs.times["start"] + dev_shift[td] if td.size else execs.times["start"],
        dur=execs.times["dur"],
    )
    sn = execs.spans["node"].astype(np.int64)
    shift = task_shift[homes[sn]] if sn.size else sn
    out.spans.append(
        node=remap(sn, homes[sn]) if sn.size else sn,
        start=np.where(execs.spans["start"] != 0, execs.spans["start"] + shift, 0),
        end=np.where(execs.spans["end"] != 0, execs.spans["end"] + shift, 0),
    )
    mn = execs.mem["node"].astype(np.int64)
    base = len(out.mem)
    out.mem.append(
        node=remap(mn, homes[mn]) if mn.size else mn,
        **{name: execs.mem[name] for name in MEM_VALUES if name != "memory_micros"},
        memory_micros=execs.mem["memory_micros"] + (task_shift[homes[mn]] if mn.size else 0),
    )
    out.outs.append(
        mem=execs.outs["mem"] + base,
        slot=execs.outs["slot"],
        bytes=execs.outs["bytes"],
        ptr=execs.outs["ptr"],
    )
    an = execs.allocs["node"].astype(np.int64)
    out.allocs.append(
        node=remap(an, homes[an]) if an.size else an,
        micros=execs.allocs["micros"],
        bytes=execs.allocs["bytes"],
    )
    if execs.raw_node:
        rn = np.asarray(execs.raw_node, dtype=np.int64)
        out.add_raw(remap(rn, homes[rn]).tolist(), execs.raw_stats)
    k = execs.kernels
    out.kernels.extend(k.dev, k.name, k.label, k.start, k.dur)
    out.changed()
    return np.unique(pairs).tolist() if pairs.size else []


def merge_inputs(
    inputs: list[TaskInput],
    *,
    by_name: bool = False,
    step_basis: str = "auto",
    same_clock: bool = False,
) -> ClusterProfile:
    """Merge the profiles of several tasks (see the module docstring).

    Raises:
        InvalidInputError: no inputs, or an unknown ``step_basis``.
    """
    if not inputs:
        raise InvalidInputError("nothing to merge: give at least one profile")
    own = [inp.own_task() or UNKNOWN_TASK for inp in inputs]
    tasks = _all_tasks(inputs, own)
    maps, basis = _step_maps(inputs, step_basis)
    transfers, constraints, labels = _collect(inputs, maps, tasks)
    found = list(tasks)
    task_list = sorted(tasks, key=task_sort_key)
    tasks = {t: i for i, t in enumerate(task_list)}
    renumber = [tasks[t] for t in found]
    for rows in transfers.values():
        rows.src = [renumber[i] for i in rows.src]
        rows.dst = [renumber[i] for i in rows.dst]
    hosts = {own[i]: inp.host for i, inp in enumerate(inputs) if inp.host}
    clock = estimate_offsets(task_list, constraints, hosts, same_clock)
    merged = ProfileModel()
    builder = _Builder(merged, task_list, by_name)
    task_shift = np.asarray([clock.offsets.get(t, 0) for t in task_list], dtype=np.int64)
    for i, inp in enumerate(inputs):
        _merge_one(builder, inp, tasks[own[i]], tasks, maps[i], task_shift)
    for key, text in ((k, v) for inp in inputs for k, v in inp.model.id_to_string.items()):
        merged.id_to_string.setdefault(key, text)
    merged.has_trace = any(inp.model.has_trace for inp in inputs)
    merged.data_version += 1
    merged.graph_version += 1
    for step, rows in transfers.items():
        rows.start = [s + int(task_shift[d]) for s, d in zip(rows.start, rows.dst)]
        rows.end = [e + int(task_shift[d]) for e, d in zip(rows.end, rows.dst)]
        merged.steps.setdefault(step, StepExecs())
    return ClusterProfile(
        model=merged,
        tasks=task_list,
        own_tasks=own,
        sources=[inp.label for inp in inputs],
        hosts=hosts,
        clock=clock,
        step_basis=basis,
        transfers=transfers,
        labels=labels,
        by_name=by_name,
    )


def _merge_one(
    builder: _Builder,
    inp: TaskInput,
    own: int,
    tasks: dict[str, int],
    step_map: dict[int, int],
    task_shift: IntArray,
) -> None:
    src = inp.model
    homes = _homes(src, own, tasks)
    cache: dict[int, int] = {}
    ids = _mapper(builder, src, homes, cache)
    merged = builder.merged
    for step in sorted(src.steps):
        execs = src.steps[step]
        dev_task = np.asarray(
            [tasks.get(task_of(d) or "", own) for d in execs.device_names] + [own],
            dtype=np.int64,
        )
        dev_shift = task_shift[dev_task]
        out = merged.steps.setdefault(step_map.get(step, step), StepExecs())
        for node in _copy_step(ids, execs, out, homes, dev_task, dev_shift, task_shift):
            merged.has_execs[node] = True
    for nid in range(len(src)):  # graph nodes that never ran keep their home task
        key = nid * len(builder.tasks) + int(homes[nid])
        if key not in cache:
            cache[key] = builder.node(src, nid, int(homes[nid]), homes)
