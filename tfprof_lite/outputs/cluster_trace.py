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
    first: dict[tuple[int, str], tuple[int, int, int]] = {}
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
            first.setdefault((step, name), (pid, tid, start + dur))
        events.extend(_transfers(cluster, step, threads, first))
    return events


def _transfers(
    cluster: ClusterProfile,
    step: int,
    threads: dict[tuple[int, str], int],
    first: dict[tuple[int, str], tuple[int, int, int]],
) -> list[dict[str, Any]]:
    rows = cluster.transfers.get(step)
    if rows is None:
        return []
    out: list[dict[str, Any]] = []
    for i, (src, dst, node, start, end, nbytes) in enumerate(
        zip(rows.src, rows.dst, rows.node, rows.start, rows.end, rows.nbytes)
    ):
        tid = threads[(dst, _NETWORK)]
        out.append(
            {
                "ph": "X",
                "name": "RecvTensor",
                "cat": "transfer",
                "pid": dst,
                "tid": tid,
                "ts": start,
                "dur": max(end - start, 1),
                "args": {
                    "tensor": rows.tensor[i],
                    "from": cluster.tasks[src],
                    "bytes": nbytes,
                    "step": step,
                },
            }
        )
        qname = node if cluster.by_name else qualify(cluster.tasks[src], node)
        producer = first.get((step, qname))
        if producer is None:
            continue
        flow = f"{step}:{src}:{dst}:{i}"
        p_pid, p_tid, p_end = producer
        out.append(
            {
                "ph": "s",
                "id": flow,
                "name": "tensor",
                "cat": "transfer",
                "pid": p_pid,
                "tid": p_tid,
                "ts": max(p_end - 1, 0),
            }
        )
        out.append(
            {
                "ph": "f",
                "bp": "e",
                "id": flow,
                "name": "tensor",
                "cat": "transfer",
                "pid": dst,
                "tid": tid,
                "ts": start,
            }
        )
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
