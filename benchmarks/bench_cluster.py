"""Scale of the cluster merge: many tasks' profiles of a large graph, merged.

TensorFlow has no merge of several tasks' profiles, so there is nothing to
compare with; this script measures tfprof_lite alone and checks the result.
The parent writes, into a temporary directory, one task-tagged capture per
worker (``task.<tag>.json`` plus ``run_meta.<tag>.<step>.pb`` per step, the
layout ``ProfileContext(task=...)`` writes): each step of each worker holds
``--nodes`` op records on the worker's CPU (nested scopes
``block_i/layer_j/op_k``, an ``IteratorGetNext`` among them), the variable
reads and updates its step caused on the ``--ps`` parameter servers (20
variables spread over them), and
``RecvTensor`` records of the variables going to the worker and the gradients
coming back. Every fourth worker's clock runs 3 ms behind; worker 1 reads its
input 10x slower. A fresh child interpreter then times ``tfprof_lite.merge``
of every directory (load + merge), ``cluster_report`` and, unless ``--no-trace``,
the merged Chrome trace (streamed to a file), and reports its peak RSS; the parent checks that the
straggler, the tasks and the clock corrections come out as generated.

Run: ``python benchmarks/bench_cluster.py [--tasks 64] [--nodes 20000]
[--steps 2] [--ps 4] [--quick] [--out PATH]``; results in ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tfprof_lite.proto import messages as pb  # noqa: E402

SKEW = 3000
VARIABLES = 20


def _worker_meta(task: int, ps: int, nodes: int, step: int) -> bytes:
    """One step of worker ``task``: ops, the ps records and transfers of its step."""
    worker = f"/job:worker/replica:0/task:{task}/device:CPU:0"
    servers = [f"/job:ps/replica:0/task:{p}/device:CPU:0" for p in range(ps)]
    skew = SKEW if task % 4 == 3 else 0
    base = 1_000_000 * (step + 1)
    slow = 10 if task == 1 else 1
    meta = pb.RunMetadata()
    ps_devs = [meta.step_stats.dev_stats.add(device=server) for server in servers]
    wk = meta.step_stats.dev_stats.add(device=worker)
    for v in range(VARIABLES):
        server, ps_dev = servers[v % ps], ps_devs[v % ps]
        ps_dev.node_stats.add(
            node_name=f"var{v}/read",
            all_start_micros=base + v,
            op_end_rel_micros=5,
            timeline_label=f"var{v}/read = Identity(var{v})",
        )
        wk.node_stats.add(
            node_name="RecvTensor",
            all_start_micros=base + 10 + v - skew,
            op_end_rel_micros=50,
            timeline_label=f"[1.0KB] [1Gb/s] edge_{v}_var{v}/read from {server} to {worker}",
        )
    t = base + 100 - skew
    wk.node_stats.add(
        node_name="IteratorGetNext",
        all_start_micros=t,
        op_end_rel_micros=2000 * slow,
        timeline_label="IteratorGetNext = IteratorGetNext(iterator)",
    )
    t += 2000 * slow
    for i in range(nodes):
        name = f"block_{i // 100}/layer_{i // 10 % 10}/op_{i % 10}"
        wk.node_stats.add(
            node_name=name,
            all_start_micros=t + i,
            op_end_rel_micros=1,
            timeline_label=f"{name} = MatMul(x, y)",
        )
    end = t + nodes + 10
    for v in range(VARIABLES):
        server, ps_dev = servers[v % ps], ps_devs[v % ps]
        ps_dev.node_stats.add(
            node_name="RecvTensor",
            all_start_micros=end + skew + v,
            op_end_rel_micros=20,
            timeline_label=f"[1.0KB] [1Gb/s] edge_{100 + v}_block_{v}/layer_0/op_0 "
            f"from {worker} to {server}",
        )
        ps_dev.node_stats.add(
            node_name=f"update{v}",
            all_start_micros=end + skew + 30 + v,
            op_end_rel_micros=5,
            timeline_label=f"update{v} = ResourceApplyGradientDescent(var{v}, lr, "
            f"block_{v}/layer_0/op_0_S1)",
        )
    return meta.SerializeToString()


def write_captures(root: str, tasks: int, ps: int, nodes: int, steps: int) -> list[str]:
    """One capture directory per worker; returns the directories."""
    dirs = []
    for task in range(tasks):
        directory = os.path.join(root, f"w{task}")
        os.makedirs(directory)
        tag = f"worker-0-{task}"
        side = {"task": f"/job:worker/replica:0/task:{task}", "steps": {}}
        with open(os.path.join(directory, f"task.{tag}.json"), "w") as f:
            json.dump(side, f)
        for step in range(steps):
            with open(os.path.join(directory, f"run_meta.{tag}.{step}.pb"), "wb") as f:
                f.write(_worker_meta(task, ps, nodes, step))
        dirs.append(directory)
    return dirs


_CHILD = """
import json, os, resource, sys, time
sys.path.insert(0, sys.argv[1])
import tfprof_lite
from tfprof_lite.analysis.cluster import cluster_report
from tfprof_lite.outputs.cluster_trace import write_trace
dirs = json.loads(sys.argv[2])
out = {}
t = time.perf_counter()
prof = tfprof_lite.merge(dirs)
out["merge_s"] = time.perf_counter() - t
out["rss_after_merge_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t = time.perf_counter()
report = cluster_report(prof.cluster)
out["report_s"] = time.perf_counter() - t
if sys.argv[3] == "1":
    path = sys.argv[4]
    t = time.perf_counter()
    out["trace_events"] = write_trace(prof.cluster, path)
    out["trace_s"] = time.perf_counter() - t
    out["trace_mb"] = os.path.getsize(path) / 2**20
    os.remove(path)
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out["nodes"] = len(prof.model)
out["tasks"] = prof.cluster.tasks
out["offsets"] = prof.cluster.clock.offsets
out["stragglers"] = sorted({s.task for s in report.stragglers})
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=64)
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--ps", type=int, default=4)
    parser.add_argument("--no-trace", action="store_true")
    parser.add_argument("--quick", action="store_true", help="8 tasks of 2,000 nodes")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench_out", "cluster.json"))
    args = parser.parse_args()
    if args.quick:
        args.tasks, args.nodes = 8, 2000
    with tempfile.TemporaryDirectory() as root:
        t = time.perf_counter()
        dirs = write_captures(root, args.tasks, args.ps, args.nodes, args.steps)
        written = time.perf_counter() - t
        size = sum(os.path.getsize(os.path.join(d, f)) for d in dirs for f in os.listdir(d))
        child = subprocess.run(
            [
                sys.executable,
                "-c",
                _CHILD,
                ROOT,
                json.dumps(dirs),
                "0" if args.no_trace else "1",
                os.path.join(root, "cluster_trace.json"),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
    result: dict[str, Any] = json.loads(child.stdout)
    workers = [f"/job:worker/replica:0/task:{t}" for t in range(args.tasks)]
    assert result["stragglers"] == ["/job:worker/replica:0/task:1"], result["stragglers"]
    assert set(workers) <= set(result["tasks"]) and len(result["tasks"]) == args.tasks + args.ps
    lagging = {w for w in workers if int(w.rsplit(":", 1)[1]) % 4 == 3}
    assert all((result["offsets"][w] > 0) == (w in lagging) for w in workers), result["offsets"]
    assert result["nodes"] >= args.tasks * args.nodes
    result.update(
        tasks=args.tasks,
        ps=args.ps,
        nodes_per_task=args.nodes,
        steps=args.steps,
        input_mb=size / 2**20,
        write_s=written,
        offsets=None,
        records=args.tasks * args.steps * (args.nodes + 1 + 4 * VARIABLES),
        parent_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    )
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    for key in (
        "tasks",
        "nodes_per_task",
        "steps",
        "records",
        "input_mb",
        "merge_s",
        "rss_after_merge_mb",
        "report_s",
        "trace_s",
        "trace_mb",
        "peak_rss_mb",
    ):
        if key in result:
            value = result[key]
            print(f"{key:<20} {value:.2f}" if isinstance(value, float) else f"{key:<20} {value}")


if __name__ == "__main__":
    main()
