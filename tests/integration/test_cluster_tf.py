"""A real TF1 cluster on loopback, profiled per task and merged.

Between-graph replication: one ps and two workers, each its own process
(``cluster_task.py``) with a hard timeout and killed in teardown; worker 1's
``tf.data`` input sleeps 8x longer than worker 0's, so worker 1 must be named
the straggler (input-bound), the merged trace must show both workers at the same
time (one pid per task), and JobChecker and the overview must say so. In-graph
replication: the test's own client drives three server processes; one
RunMetadata holds every task and is split by device.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import tfprof_lite
from tests.unit.test_cluster import check_chrome_trace
from tfprof_lite.analysis.cluster import cluster_report
from tfprof_lite.analysis.overview import overview
from tfprof_lite.cli import main
from tfprof_lite.model.cluster import qualify

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1

_SCRIPT = str(Path(__file__).with_name("cluster_task.py"))
_ROOT = str(Path(__file__).resolve().parents[2])
_TIMEOUT = 120
W0, W1, PS = (
    "/job:worker/replica:0/task:0",
    "/job:worker/replica:0/task:1",
    "/job:ps/replica:0/task:0",
)


def _free_ports(count: int) -> list[str]:
    socks = [socket.socket() for _ in range(count)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [f"127.0.0.1:{sock.getsockname()[1]}" for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def _start(ports: list[str], job: str, index: int, out: Path, sleep: str) -> subprocess.Popen[str]:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONPATH=_ROOT)
    args = [sys.executable, _SCRIPT, *ports, job, str(index), str(out), sleep, "5"]
    return subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    )


def _ready(proc: subprocess.Popen[str]) -> None:
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"


@pytest.fixture(scope="module")
def between_graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("between")
    ports = _free_ports(3)
    procs = [
        _start(ports, "ps", 0, out, "0"),
        _start(ports, "worker", 0, out, "5"),
        _start(ports, "worker", 1, out, "40"),
    ]
    try:
        deadline = time.monotonic() + _TIMEOUT
        for proc in procs[1:]:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            assert proc.returncode == 0
        yield out
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=30)


@pytest.fixture(scope="module")
def merged(between_graph: Path) -> tfprof_lite.Profiler:
    return tfprof_lite.merge([between_graph / "w0", between_graph / "w1"])


def test_capture_names_its_task(between_graph: Path) -> None:
    side = json.loads((between_graph / "w1" / "task.worker-0-1.json").read_text())
    assert side["task"] == W1 and side["steps"] == {}
    assert sorted(p.name for p in (between_graph / "w1").glob("run_meta.*.pb")) == [
        f"run_meta.worker-0-1.{s}.pb" for s in range(1, 6)
    ]


def test_nodes_keep_their_task(merged: tfprof_lite.Profiler, between_graph: Path) -> None:
    cluster = merged.cluster  # type: ignore[attr-defined]
    assert cluster.tasks == [PS, W0, W1] and cluster.own_tasks == [W0, W1]
    names = set(merged.model.names)
    for task in (W0, W1):
        assert qualify(task, "IteratorGetNext") in names
    # the ps ran the variable reads of both workers' steps: one node, records of both
    assert qualify(PS, "w") in names
    by_name = tfprof_lite.merge([between_graph / "w0", between_graph / "w1"], by_name=True)
    assert "IteratorGetNext" in by_name.model.names
    assert not any(n.startswith("job_") for n in by_name.model.names)


def test_worker_one_is_the_input_bound_straggler(merged: tfprof_lite.Profiler) -> None:
    report = cluster_report(merged.cluster)  # type: ignore[attr-defined]
    assert report.steps == [1, 2, 3, 4, 5]
    named = [s.task for s in report.stragglers]
    assert named.count(W1) >= 4, report.to_text()
    assert all(s.cause.startswith("input") for s in report.stragglers if s.task == W1)
    totals = report.task_totals()
    assert totals[W1]["wall"] > 3 * totals[W0]["wall"]
    assert totals[W1]["input"] > 0.8 * totals[W1]["wall"]
    (ps,) = report.ps
    assert ps.task == PS and set(ps.variables) >= {"w", "b"}
    w = ps.variables["w"]
    # per step: each worker reads w (256x256 float32) twice and pushes one gradient
    assert w["read_bytes"] == 4 * 256 * 256 * 4
    # the gradients, plus the 4-byte learning rate each worker sends to the update;
    # TensorFlow now and then leaves a step's ps-side RecvTensor records out
    assert 256 * 256 * 4 <= w["pushed_bytes"] <= 2 * 256 * 256 * 4 + 16
    assert report.clock_offsets == {PS: 0, W0: 0, W1: 0}  # one host, causal records


def test_job_checker_and_overview_verdicts(merged: tfprof_lite.Profiler) -> None:
    advice = merged.advise({"JobChecker": {}})
    reports = list(advice.checkers["JobChecker"].reports)
    found = [r for r in reports if r.startswith("straggler: job worker: ")]
    assert found and found[0].startswith(f"straggler: job worker: {W1} is the slowest in"), found
    assert int(found[0].split(" is the slowest in ")[1].split()[0]) >= 4
    assert all(" in 1 of 5 steps" in r for r in found[1:]), found
    page = overview(merged.model, cluster=merged.cluster)  # type: ignore[attr-defined]
    assert any(s.startswith(f"{W1} is the slowest") for s in page.stragglers)
    assert "input-bound" in page.recommendation and "compute-bound" not in page.recommendation


def test_merged_trace_overlaps_workers(
    between_graph: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "cluster.json"
    code = main(
        ["cluster", str(between_graph / "w0"), str(between_graph / "w1"), "--trace", str(trace)]
    )
    assert code == 0
    printed = capsys.readouterr()
    assert f"{W1} was busy" in printed.out
    assert f"Wrote {trace} (the merged Chrome trace)" in printed.err
    assert "speedscope" in printed.err
    doc = json.loads(trace.read_text())
    check_chrome_trace(doc)
    events = doc["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert sorted(names.values()) == [PS, W0, W1]
    spans: dict[str, list[int]] = {}
    for e in events:
        if e["ph"] == "X":
            assert {"pid", "tid", "ts", "dur", "name"} <= set(e)
            span = spans.setdefault(names[e["pid"]], [e["ts"], e["ts"] + e["dur"]])
            span[0], span[1] = min(span[0], e["ts"]), max(span[1], e["ts"] + e["dur"])
    assert spans[W0][0] < spans[W1][1] and spans[W1][0] < spans[W0][1], spans  # overlapping
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts and set(starts) == set(ends)
    assert all(starts[i]["pid"] != ends[i]["pid"] for i in starts)
    labels = [e["args"]["labels"] for e in events if e.get("name") == "process_labels"]
    assert len(labels) == 3 and all(label.startswith("clock +0us (") for label in labels)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    out = tmp_path_factory.mktemp("servers")
    ports = _free_ports(3)
    procs = [
        _start(ports, job, index, out, "serve")
        for job, index in (("ps", 0), ("worker", 0), ("worker", 1))
    ]
    try:
        for proc in procs:
            _ready(proc)
        yield ports
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=30)


def test_in_graph_replication_splits_one_run_by_task(servers: list[str], tmp_path: Path) -> None:
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            w = tf1.get_variable("w", [384, 384], initializer=tf1.ones_initializer())
        towers = []
        for index, depth in ((0, 1), (1, 12)):  # tower 1 does 12x the work
            with tf.device(f"/job:worker/task:{index}"), tf.name_scope(f"tower{index}"):
                x = tf.ones([384, 384])
                for _ in range(depth):
                    x = tf.tanh(tf.matmul(x, w))
                towers.append(tf.reduce_sum(x))
        with tf.device("/job:worker/task:0"):
            total = tf.add_n(towers)
    with tf1.Session(f"grpc://{servers[1]}", graph=graph) as sess:
        sess.run(tf1.global_variables_initializer())
        sess.run(total)
        with tfprof_lite.ProfileContext(
            tmp_path, trace_steps=range(3), dump_steps=[], task="/job:worker/task:0"
        ):
            for _ in range(3):
                sess.run(total)
    prof = tfprof_lite.merge([tmp_path])
    cluster = prof.cluster  # type: ignore[attr-defined]
    assert cluster.tasks == [PS, W0, W1] and cluster.own_tasks == [W0]
    names = set(prof.model.names)
    assert qualify(W1, "tower1/MatMul") in names
    assert qualify(W0, "tower0/MatMul") in names
    assert qualify(PS, "w") in names
    report = cluster_report(cluster)
    assert [s.task for s in report.stragglers].count(W1) >= 2, report.to_text()
    # one synchronous step: worker 0 waits for worker 1's tower, it is not slow
    totals = report.task_totals()
    assert totals[W0]["idle"] > totals[W0]["compute"], report.to_text()
    reports = list(prof.advise({"JobChecker": {}}).checkers["JobChecker"].reports)
    assert any(r.startswith(f"straggler: job worker: {W1} is the slowest") for r in reports)
    page = overview(prof.model, cluster=cluster)
    assert page.recommendation.startswith(f"mostly waiting: {W0} waits"), page.recommendation
    assert page.recommendation.count(f"the slowest task is {W1}") == 1


def test_profiler_hook_names_its_task_and_global_steps(tmp_path: Path) -> None:
    graph = tf.Graph()
    with graph.as_default():
        step = tf1.train.get_or_create_global_step()
        x = tf1.get_variable("x", [64, 64])
        train = tf1.train.GradientDescentOptimizer(0.1).minimize(
            tf.reduce_sum(tf.matmul(x, x)), global_step=step
        )
        hook = tfprof_lite.ProfilerHook(
            tmp_path, trace_steps=[2, 3], dump_steps=[], task="/job:worker/task:2"
        )
        with tf1.train.MonitoredSession(hooks=[hook]) as sess:
            for _ in range(4):
                sess.run(train)
    side = json.loads((tmp_path / "task.worker-0-2.json").read_text())
    assert side["task"] == "/job:worker/replica:0/task:2" and side["steps"] == {"2": 2, "3": 3}
    assert sorted(p.name for p in tmp_path.glob("run_meta.*")) == [
        "run_meta.worker-0-2.2.pb",
        "run_meta.worker-0-2.3.pb",
    ]
    prof = tfprof_lite.merge([tmp_path])
    assert prof.cluster.step_basis == "global"  # type: ignore[attr-defined]
    assert prof.model.sorted_steps() == [2, 3]
