"""The merged Chrome trace of a distributed run: one process per task.

:func:`render` turns a :class:`~tfprof_lite.model.cluster_merge.ClusterProfile`
into Chrome trace JSON (``chrome://tracing``, Perfetto): one process (``pid``)
per task, named by the task, one thread per device, every op record as a
complete event (``ph: X``) on the aligned clock, so tasks that ran at the same
time overlap. Tensor transfers between tasks are ``RecvTensor`` events on a
``network`` thread of the receiving task, and a flow arrow (``ph: s`` / ``f``,
bound to the enclosing slice) runs from the producing op on the sending task to
the transfer on the receiving task. Steps are marked by ``args.step``.
"""

from __future__ import annotations

import json
from typing import Any

from tfprof_lite.model.cluster import qualify, task_of
from tfprof_lite.model.cluster_merge import ClusterProfile

__all__ = ["render", "trace_events"]

_NETWORK = "network"


def _meta(pid: int, tid: int | None, kind: str, name: str) -> dict[str, Any]:
    event: dict[str, Any] = {"ph": "M", "pid": pid, "name": kind, "args": {"name": name}}
    if tid is not None:
        event["tid"] = tid
    return event


def _threads(cluster: ClusterProfile) -> dict[tuple[int, str], int]:
    """(pid, device or ``network``) -> tid, devices in name order per task."""
    index = cluster.task_index()
    devices: set[tuple[int, str]] = set()
    for execs in cluster.model.steps.values():
        for dev in execs.device_names:
            devices.add((index.get(task_of(dev) or "", 0), dev))
    for rows in cluster.transfers.values():
        devices.update((d, _NETWORK) for d in rows.dst)
    out: dict[tuple[int, str], int] = {}
    for pid, dev in sorted(devices):
        out[(pid, dev)] = sum(1 for p, _ in out if p == pid)
    return out


def trace_events(cluster: ClusterProfile) -> list[dict[str, Any]]:
    """Every event of the merged trace (metadata, ops, transfers, flows)."""
    model = cluster.model
    index = cluster.task_index()
    threads = _threads(cluster)
    events = [_meta(pid, None, "process_name", task) for task, pid in index.items()]
    events += [_meta(pid, None, "process_sort_index", str(pid)) for pid in index.values()]
    events += [_meta(p, t, "thread_name", dev) for (p, dev), t in threads.items()]
    producers: Producers = {}
    for step in model.sorted_steps():
        execs = model.steps[step]
        dev_pid = [index.get(task_of(d) or "", 0) for d in execs.device_names]
        t = execs.times
        for node, code, start, dur in zip(
            t["node"].tolist(), t["dev"].tolist(), t["start"].tolist(), t["dur"].tolist()
        ):
            pid = dev_pid[code]
            tid = threads[(pid, execs.device_names[code])]
            name = model.names[node]
            events.append(
                {
                    "ph": "X",
                    "name": name.rsplit("/", 1)[-1],
                    "cat": "op",
                    "pid": pid,
                    "tid": tid,
                    "ts": start,
                    "dur": dur,
                    "args": {"name": name, "step": step},
                }
            )
            producers.setdefault((step, name), []).append((pid, tid, start + dur))
        events.extend(_transfers(cluster, step, threads, producers))
    return events


Producers = dict[tuple[int, str], list[tuple[int, int, int]]]


def _producer(records: list[tuple[int, int, int]], end: int) -> tuple[int, int, int]:
    """The record that ended last before ``end`` (the earliest when none did):
    a ps node read for several workers in one step has one record per read."""
    before = [r for r in records if r[2] <= end]
    return max(before, key=lambda r: r[2]) if before else min(records, key=lambda r: r[2])


def _recv_event(cluster: ClusterProfile, step: int, i: int, tid: int) -> dict[str, Any]:
    rows = cluster.transfers[step]
    args = {
        "tensor": rows.tensor[i],
        "from": cluster.tasks[rows.src[i]],
        "bytes": rows.nbytes[i],
        "step": step,
    }
    return {
        "ph": "X",
        "name": "RecvTensor",
        "cat": "transfer",
        "pid": rows.dst[i],
        "tid": tid,
        "ts": rows.start[i],
        "dur": max(rows.end[i] - rows.start[i], 1),
        "args": args,
    }


def _flow(phase: str, flow: str, pid: int, tid: int, ts: int) -> dict[str, Any]:
    event: dict[str, Any] = {"ph": phase, "id": flow, "name": "tensor", "cat": "transfer"}
    event.update(pid=pid, tid=tid, ts=ts)
    if phase == "f":
        event["bp"] = "e"  # bind to the slice enclosing ts (the transfer)
    return event


def _transfers(
    cluster: ClusterProfile, step: int, threads: dict[tuple[int, str], int], producers: Producers
) -> list[dict[str, Any]]:
    """The step's transfers as events, with a flow from each one's producer."""
    rows = cluster.transfers.get(step)
    if rows is None:
        return []
    out: list[dict[str, Any]] = []
    for i, (src, dst, node) in enumerate(zip(rows.src, rows.dst, rows.node)):
        tid = threads[(dst, _NETWORK)]
        out.append(_recv_event(cluster, step, i, tid))
        qname = node if cluster.by_name else qualify(cluster.tasks[src], node)
        records = producers.get((step, qname))
        if not records:
            continue
        p_pid, p_tid, p_end = _producer(records, rows.end[i])
        flow = f"{step}:{src}:{dst}:{i}"
        out.append(_flow("s", flow, p_pid, p_tid, max(p_end - 1, 0)))
        out.append(_flow("f", flow, dst, tid, rows.start[i]))
    return out


def render(cluster: ClusterProfile) -> str:
    """The merged trace as Chrome trace JSON text, with the clock correction in
    ``metadata``."""
    doc = {
        "traceEvents": trace_events(cluster),
        "displayTimeUnit": "ms",
        "metadata": {
            "clock_reference": cluster.clock.reference,
            "clock_offsets_us": cluster.clock.offsets,
            "largest_correction_us": cluster.clock.largest,
            "step_basis": cluster.step_basis,
        },
    }
    return json.dumps(doc, separators=(",", ":"))
