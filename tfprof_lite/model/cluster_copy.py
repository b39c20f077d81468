"""Copying a loaded profile into a merged one, record by record per task.

Used by :func:`~tfprof_lite.model.cluster_merge.merge_inputs` for inputs given as
a loaded :class:`~tfprof_lite.model.profile.ProfileModel` (a saved
``profile_<step>`` file, a :class:`~tfprof_lite.profiler.Profiler`): every
record goes to the node of its own task (the task of its device; records
without a device, and nodes that never ran, to the node's canonical device's
task, else the input's own task), with its times moved onto the merged clock.
Everything is copied as NumPy blocks; per distinct (node, task) pair one node is
made in the merged model.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from tfprof_lite.model.cluster import qualify, split_qualified, task_of
from tfprof_lite.model.execs import MEM_VALUES, StepExecs
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.step_spans import StepSpan

__all__ = ["Builder", "merge_model"]

IntArray = npt.NDArray[np.int64]
#: Maps (source nodes, task indices) to merged node ids.
Remap = Callable[[IntArray, IntArray], IntArray]


class Builder:
    """Copies inputs into the merged model (one instance per merge)."""

    def __init__(self, merged: ProfileModel, tasks: list[str], by_name: bool) -> None:
        self.merged = merged
        self.tasks = tasks
        self.by_name = by_name

    def name_for(self, name: str, task: int) -> str:
        """The merged name of ``name`` of task index ``task``: qualified (a name
        that is already qualified stays), or plain with ``by_name``."""
        owner, plain = split_qualified(name)
        if self.by_name:
            return plain
        return name if owner is not None else qualify(self.tasks[task], name)

    def node(self, src: ProfileModel, nid: int, task: int, home: IntArray) -> int:
        """The merged id of source node ``nid`` of ``task`` (made when new)."""
        qname = self.name_for(src.names[nid], task)
        merged = self.merged
        got = merged.index.get(qname)
        if got is not None:
            return got
        new = merged.load_node(qname, split_qualified(src.ops[nid])[1])
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
            qin = self.name_for(inp, int(home[producer]) if producer is not None else task)
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


def _mapper(builder: Builder, src: ProfileModel, homes: IntArray, cache: dict[int, int]) -> Remap:
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
    _copy_memory(remap, execs, out, homes, task_shift)
    k = execs.kernels
    out.kernels.extend(k.dev, k.name, k.label, k.start, k.dur, k.dur_ns)
    out.changed()
    return np.unique(pairs).tolist() if pairs.size else []


def _copy_span(execs: StepExecs, out: StepExecs, shift: int) -> None:
    """The step's own span (an XSpace step's root), on the merged clock; the
    merged step's span covers those of every task's step."""
    span = execs.span
    if span is None:
        return
    moved = StepSpan(span.name, span.start + shift, span.end + shift)
    out.span = moved if out.span is None else out.span.widened(moved)


def _copy_memory(
    remap: Remap, execs: StepExecs, out: StepExecs, homes: IntArray, task_shift: IntArray
) -> None:
    """The memory records, outputs, allocations and raw records of one step,
    each with its node's home task."""
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


def merge_model(
    builder: Builder,
    src: ProfileModel,
    own: int,
    tasks: dict[str, int],
    step_map: dict[int, int],
    task_shift: IntArray,
) -> None:
    """Copy every step and node of ``src`` (own task index ``own``) into the merge."""
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
        _copy_span(execs, out, int(task_shift[own]))
    for nid in range(len(src)):  # graph nodes that never ran keep their home task
        key = nid * len(builder.tasks) + int(homes[nid])
        if key not in cache:
            cache[key] = builder.node(src, nid, int(homes[nid]), homes)
