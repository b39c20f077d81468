"""The merged Chrome trace of a distributed run: one process per task.

:func:`trace_events` yields the events of a
:class:`~tfprof_lite.model.cluster_merge.ClusterProfile` as Chrome trace events
(``chrome://tracing``, Perfetto): one process (``pid``) per task, named by the
task and labelled with its clock correction; per device of the task one thread,
or several lanes (``cpu:0``, ``cpu:0 #2``, ...) where ops overlapped, so events
in a thread always nest (:class:`~tfprof_lite.outputs.trace_writer.LaneAssigner`);
every op record as a complete event (``ph: X``) on the aligned clock, so tasks
that ran at the same time overlap. Tensor transfers between tasks are
``RecvTensor`` events on ``network`` lanes of the receiving task, and a flow
arrow (``ph: s`` / ``f``, the end bound to the enclosing slice) runs from the
producing op on the sender to the transfer. Steps are in ``args.step``.

:func:`write_trace` streams the events to a file (memory stays flat);
:func:`render` returns the document as text, with the clock in ``metadata``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from tfprof_lite.base.units import format_time
from tfprof_lite.model.cluster import qualify, task_of
from tfprof_lite.model.cluster_merge import ClusterProfile
from tfprof_lite.outputs.trace_writer import LaneAssigner, TraceWriter

__all__ = ["render", "trace_events", "write_trace"]

_NETWORK = "network"
IntArray = npt.NDArray[np.int64]
#: (step, merged node) -> (pid, tid, end) of its records, for the flows.
Producers = dict[tuple[int, int], list[tuple[int, int, int]]]


class _Threads:
    """Thread ids per (pid, device, lane); names each new thread once."""

    def __init__(self) -> None:
        self.ids: dict[tuple[int, str, int], int] = {}
        self.per_pid: dict[int, int] = {}

    def tid(self, pid: int, device: str, lane: int, out: list[dict[str, Any]]) -> int:
        key = (pid, device, lane)
        got = self.ids.get(key)
        if got is None:
            got = self.ids[key] = self.per_pid.get(pid, 0)
            self.per_pid[pid] = got + 1
            name = device if lane == 0 else f"{device} #{lane + 1}"
            out.append(_meta(pid, got, "thread_name", name))
        return got


def _meta(pid: int, tid: int | None, kind: str, value: str) -> dict[str, Any]:
    event: dict[str, Any] = {"ph": "M", "pid": pid, "name": kind}
    event["args"] = {"labels": value} if kind == "process_labels" else {"name": value}
    if tid is not None:
        event["tid"] = tid
    return event


def _process_events(cluster: ClusterProfile) -> list[dict[str, Any]]:
    out = []
    for pid, task in enumerate(cluster.tasks):
        off = cluster.clock.offsets.get(task, 0)
        note = cluster.clock.notes.get(task, "")
        sign = "+" if off >= 0 else "-"
        out.append(_meta(pid, None, "process_name", task))
        out.append(_meta(pid, None, "process_sort_index", str(pid)))
        out.append(
            _meta(pid, None, "process_labels", f"clock {sign}{format_time(abs(off))} ({note})")
        )
    return out


def _columns(cluster: ClusterProfile) -> dict[tuple[int, str], list[IntArray]]:
    """(pid, device) -> [start, dur, node, step] over every step, sorted so that
    lanes can be assigned (by start, longer first)."""
    index = cluster.task_index()
    parts: dict[tuple[int, str], list[list[IntArray]]] = {}
    for step in cluster.model.sorted_steps():
        execs = cluster.model.steps[step]
        t = execs.times
        dev = t["dev"].astype(np.int64)
        for code, name in enumerate(execs.device_names):
            rows = np.flatnonzero(dev == code)
            if not rows.size:
                continue
            key = (index.get(task_of(name) or "", 0), name)
            cols = [t["start"][rows], t["dur"][rows], t["node"][rows].astype(np.int64)]
            parts.setdefault(key, []).append([*cols, np.full(rows.size, step, np.int64)])
    out = {}
    for key, blocks in parts.items():
        start, dur, node, step_col = (np.concatenate(c).astype(np.int64) for c in zip(*blocks))
        order = np.lexsort((-dur, start))
        out[key] = [start[order], dur[order], node[order], step_col[order]]
    return out


def _wanted(cluster: ClusterProfile) -> set[tuple[int, int]]:
    """(step, merged node) of every transfer's producer."""
    index = cluster.model.index
    out = set()
    for step, rows in cluster.transfers.items():
        for src, node in zip(rows.src, rows.node):
            name = node if cluster.by_name else qualify(cluster.tasks[src], node)
            nid = index.get(name)
            if nid is not None:
                out.add((step, nid))
    return out


def _op_events(
    cluster: ClusterProfile, threads: _Threads, producers: Producers
) -> Iterator[dict[str, Any]]:
    names = cluster.model.names
    wanted = _wanted(cluster)
    for (pid, device), (start, dur, node, step) in sorted(_columns(cluster).items()):
        lanes = LaneAssigner()
        for s, d, n, k in zip(start.tolist(), dur.tolist(), node.tolist(), step.tolist()):
            meta: list[dict[str, Any]] = []
            tid = threads.tid(pid, device, lanes.assign(s, d), meta)
            yield from meta
            if (k, n) in wanted:
                producers.setdefault((k, n), []).append((pid, tid, s + d))
            name = names[n]
            args = {"name": name, "step": k}
            yield {
                "ph": "X",
                "name": name.rsplit("/", 1)[-1],
                "cat": "op",
                "pid": pid,
                "tid": tid,
                "ts": s,
                "dur": d,
                "args": args,
            }


def _producer(records: list[tuple[int, int, int]], end: int) -> tuple[int, int, int]:
    """The record that ended last before ``end`` (the earliest when none did):
    a ps node read for several workers in one step has one record per read."""
    before = [r for r in records if r[2] <= end]
    return max(before, key=lambda r: r[2]) if before else min(records, key=lambda r: r[2])


def _flow(phase: str, flow: str, pid: int, tid: int, ts: int) -> dict[str, Any]:
    event: dict[str, Any] = {"ph": phase, "id": flow, "name": "tensor", "cat": "transfer"}
    event.update(pid=pid, tid=tid, ts=ts)
    if phase == "f":
        event["bp"] = "e"  # bind to the slice enclosing ts (the transfer)
    return event


def _transfer_events(
    cluster: ClusterProfile, threads: _Threads, producers: Producers
) -> Iterator[dict[str, Any]]:
    index = cluster.model.index
    rows_by = []
    for step, rows in cluster.transfers.items():
        rows_by += [(rows.start[i], -rows.end[i], step, i) for i in range(len(rows))]
    lanes: dict[int, LaneAssigner] = {}
    for start, neg_end, step, i in sorted(rows_by):
        rows = cluster.transfers[step]
        src, dst, end = rows.src[i], rows.dst[i], -neg_end
        meta: list[dict[str, Any]] = []
        lane = lanes.setdefault(dst, LaneAssigner()).assign(start, max(end - start, 1))
        tid = threads.tid(dst, _NETWORK, lane, meta)
        yield from meta
        args = {"tensor": rows.tensor[i], "from": cluster.tasks[src], "bytes": rows.nbytes[i]}
        yield {
            "ph": "X",
            "name": "RecvTensor",
            "cat": "transfer",
            "pid": dst,
            "tid": tid,
            "ts": start,
            "dur": max(end - start, 1),
            "args": {**args, "step": step},
        }
        name = rows.node[i] if cluster.by_name else qualify(cluster.tasks[src], rows.node[i])
        records = producers.get((step, index.get(name, -1)))
        if records:
            p_pid, p_tid, p_end = _producer(records, end)
            flow = f"{step}:{src}:{dst}:{i}"
            yield _flow("s", flow, p_pid, p_tid, max(p_end - 1, 0))
            yield _flow("f", flow, dst, tid, start)


def trace_events(cluster: ClusterProfile) -> Iterator[dict[str, Any]]:
    """Every event of the merged trace, streamed (see the module docstring)."""
    yield from _process_events(cluster)
    threads = _Threads()
    producers: Producers = {}
    yield from _op_events(cluster, threads, producers)
    yield from _transfer_events(cluster, threads, producers)


def write_trace(cluster: ClusterProfile, path: str | os.PathLike[str]) -> int:
    """Stream the merged trace to ``path`` (``.gz``: compressed); returns the
    number of events. The file appears only when complete."""
    with TraceWriter(path) as writer:
        writer.write_all(trace_events(cluster))
    return writer.count


def render(cluster: ClusterProfile) -> str:
    """The merged trace as one Chrome trace JSON text, with the clock correction
    in ``metadata``."""
    doc = {
        "traceEvents": list(trace_events(cluster)),
        "displayTimeUnit": "ms",
        "metadata": {
            "clock_reference": cluster.clock.reference,
            "clock_offsets_us": cluster.clock.offsets,
            "largest_correction_us": cluster.clock.largest,
            "step_basis": cluster.step_basis,
        },
    }
    return json.dumps(doc, separators=(",", ":"))
