"""Merging hand-made profiles of several tasks (no TensorFlow): node identity per
task, step matching, the clock estimate, the per-task breakdown, stragglers,
parameter-server load, the merged Chrome trace, JobChecker and the overview."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import tfprof_lite
from tfprof_lite.analysis.cluster import cluster_report
from tfprof_lite.analysis.overview import overview
from tfprof_lite.cli import main
from tfprof_lite.model.clock import estimate_offsets
from tfprof_lite.model.cluster import normalize_task, parse_bytes, qualify, split_qualified, task_of
from tfprof_lite.outputs.cluster_trace import render
from tfprof_lite.proto import messages as pb

PS = "/job:ps/replica:0/task:0"
W0 = "/job:worker/replica:0/task:0"
W1 = "/job:worker/replica:0/task:1"
CPU = "/device:CPU:0"
# (node name, start, duration, timeline label)
Rec = tuple[str, int, int, str]


def meta(devices: Sequence[tuple[str, Sequence[Rec]]]) -> Any:
    """A RunMetadata with one DeviceStepStats per ``(device, records)``."""
    msg = pb.RunMetadata()
    for device, records in devices:
        dev = msg.step_stats.dev_stats.add(device=device)
        for name, start, dur, label in records:
            dev.node_stats.add(
                node_name=name,
                all_start_micros=start,
                op_end_rel_micros=dur,
                all_end_rel_micros=dur,
                timeline_label=label,
            )
    return msg


def recv(src: str, dst: str, node: str, size: str, start: int, dur: int) -> Rec:
    """A RecvTensor record as TensorFlow's worker cache logs it on the receiver."""
    label = f"[{size}] [1Gb/s] edge_7_{node} from {src}{CPU} to {dst}{CPU}"
    return ("RecvTensor", start, dur, label)


def write_task(
    directory: Path, task: str, steps: dict[int, Any], global_steps: dict[int, int] | None = None
) -> Path:
    """A task-tagged capture directory: sidecar plus one RunMetadata per step."""
    directory.mkdir(parents=True, exist_ok=True)
    tag = "-".join(part.split(":")[1] for part in task.strip("/").split("/"))
    side = {"task": task, "steps": {str(k): v for k, v in (global_steps or {}).items()}}
    (directory / f"task.{tag}.json").write_text(json.dumps(side))
    for step, run_meta in steps.items():
        (directory / f"run_meta.{tag}.{step}.pb").write_bytes(run_meta.SerializeToString())
    return directory


def worker_step(task: str, base: int, slow: int = 0, shift: int = 0) -> Any:
    """One between-graph worker step (times on a clock ``shift`` behind the truth):
    the ps reads ``w`` for it, the worker receives it, computes, reads input,
    sends its gradient back."""
    t = base - shift
    return meta(
        [
            (PS + CPU, [("w/read", base + 10, 90, "w/read = Identity(w)")]),
            (task + CPU, [recv(PS, task, "w/read", "1.0KB", t + 100, 2000)]),
            (
                task + CPU,
                [
                    ("MatMul", t + 2100, 900, "MatMul = MatMul(x, w/read)"),
                    (
                        "IteratorGetNext",
                        t + 3000,
                        1000 + slow,
                        "IteratorGetNext = IteratorGetNext(it)",
                    ),
                    ("grad", t + 4500 + slow, 500, "grad = MatMul(x, y)"),
                ],
            ),
            (PS + CPU, [recv(task, PS, "grad", "2.0KB", base + 5000 + slow, 200)]),
            (
                PS + CPU,
                [
                    (
                        "update",
                        base + 5300 + slow,
                        50,
                        "update = ResourceApplyGradientDescent(w, lr, grad_S3)",
                    )
                ],
            ),
        ]
    )


@pytest.fixture
def two_workers(tmp_path: Path) -> list[Path]:
    w0 = write_task(tmp_path / "w0", W0, {0: worker_step(W0, 100_000), 1: worker_step(W0, 200_000)})
    w1 = write_task(
        tmp_path / "w1",
        "/job:worker/task:1",
        {0: worker_step(W1, 100_000, slow=20_000), 1: worker_step(W1, 200_000, slow=20_000)},
    )
    return [w0, w1]


def test_task_strings() -> None:
    assert qualify(W1, "a/b:0") == "job_worker/replica_0/task_1/a/b:0"
    assert split_qualified("job_ps/replica_0/task_2/w/read") == (
        "/job:ps/replica:0/task:2",
        "w/read",
    )
    assert split_qualified("w/read") == (None, "w/read")
    assert task_of("/job:Worker/replica:0/task:3/device:GPU:0") == "/job:worker/replica:0/task:3"
    assert task_of("/device:CPU:0") is None
    assert normalize_task("/job:worker/task:1") == W1
    assert parse_bytes("2.0KB") == 2048 and parse_bytes("4B") == 4 and parse_bytes("?") == 0


def test_same_named_nodes_of_different_tasks_stay_apart(two_workers: list[Path]) -> None:
    prof = tfprof_lite.merge(two_workers)
    cluster = prof.cluster  # type: ignore[attr-defined]
    assert cluster.tasks == [PS, W0, W1] and cluster.own_tasks == [W0, W1]
    model = prof.model
    mm0, mm1 = (model.index[qualify(t, "MatMul")] for t in (W0, W1))
    stats = model.stats(0)
    assert stats.exec_micros[mm0] == 900 and stats.exec_micros[mm1] == 900
    read = model.index[qualify(PS, "w/read")]  # one ps node, both workers' reads
    assert stats.run_count[read] == 2 and model.canonical_device[read].startswith(PS.lower())
    assert model.canonical_device[mm1].startswith(W1)
    by_name = tfprof_lite.merge(two_workers, by_name=True)
    index = by_name.model.index
    assert "MatMul" in index and by_name.model.stats(0).run_count[index["MatMul"]] == 2


def test_steps_matched_by_global_step(tmp_path: Path) -> None:
    a = write_task(tmp_path / "a", W0, {3: worker_step(W0, 100_000)}, {3: 10})
    b = write_task(tmp_path / "b", W1, {5: worker_step(W1, 100_000)}, {5: 10})
    merged = tfprof_lite.merge([a, b])
    assert merged.cluster.step_basis == "global"  # type: ignore[attr-defined]
    assert merged.model.sorted_steps() == [10]
    local = tfprof_lite.merge([a, b], steps="local")
    assert local.model.sorted_steps() == [3, 5]
    # asynchronous training (files named by global step, as ProfilerHook writes
    # them): no global step shared, so the k-th traced steps pair up
    d = write_task(tmp_path / "d", W0, {4: worker_step(W0, 100_000)}, {4: 4})
    c = write_task(tmp_path / "c", W1, {7: worker_step(W1, 100_000)}, {7: 7})
    auto = tfprof_lite.merge([d, c])
    assert auto.cluster.step_basis == "local"  # type: ignore[attr-defined]
    assert auto.model.sorted_steps() == [0]


def test_clock_offset_from_transfers(tmp_path: Path) -> None:
    skew = 5000  # worker 1's clock runs 5 ms behind
    w0 = write_task(tmp_path / "w0", W0, {0: worker_step(W0, 100_000)})
    w1 = write_task(tmp_path / "w1", W1, {0: worker_step(W1, 100_000, shift=skew)})
    prof = tfprof_lite.merge([w0, w1])
    clock = prof.cluster.clock  # type: ignore[attr-defined]
    assert clock.reference == W0 and clock.offsets[W0] == 0 and clock.offsets[PS] == 0
    # on the true clock the w/read transfer ends 2000 us after the read and the
    # gradient reaches the ps 200 us after it left: the skew is bounded to
    # [5000 - 2000, 5000 + 200] and the smallest correction is taken
    assert clock.offsets[W1] == skew - 2000
    text = cluster_report(prof.cluster).to_text()  # type: ignore[attr-defined]
    assert "largest correction 3.00ms" in text
    mm1 = prof.model.index[qualify(W1, "MatMul")]
    starts = prof.model.steps[0].all_start
    assert starts[mm1] == 100_000 - skew + 2100 + 3000
    same = tfprof_lite.merge([w0, w1], same_clock=True)
    assert same.cluster.clock.largest == 0  # type: ignore[attr-defined]


def test_clock_bounds_rules() -> None:
    est = estimate_offsets([PS, W0, W1], [(PS, W1, 400), (W1, PS, -600), (PS, W0, -50)])
    assert est.offsets == {PS: 0, W0: 0, W1: 400}
    crossed = estimate_offsets([W0, W1], [(W0, W1, 500), (W1, W0, -100)])  # needs >=500, <=100
    assert crossed.offsets[W1] == 300
    hosts = estimate_offsets([W0, W1], [(W0, W1, 500)], hosts={W0: "h", W1: "h"})
    assert hosts.offsets[W1] == 0
    alone = estimate_offsets([W0, W1], [])
    assert alone.offsets[W1] == 0 and "not corrected" in alone.notes[W1]


def test_breakdown_straggler_and_ps_load(two_workers: list[Path]) -> None:
    report = cluster_report(tfprof_lite.merge(two_workers).cluster)  # type: ignore[attr-defined]
    rows = {(r.step, r.task): r for r in report.per_step}
    w0 = rows[(0, W0)]
    # recv 100..2100, MatMul 2100..3000, input 3000..4000, grad 4500..5000
    assert (w0.wall_micros, w0.compute_micros, w0.input_micros) == (4900, 1400, 1000)
    assert (w0.network_micros, w0.idle_micros, w0.recv_bytes) == (2000, 500, 1024)
    w1 = rows[(0, W1)]
    assert w1.input_micros == 21_000 and w1.wall_micros == 24_900
    assert [(s.step, s.task) for s in report.stragglers] == [(0, W1), (1, W1)]
    assert report.stragglers[0].excess_micros == (24_900 - 500) - (4900 - 500)
    assert report.stragglers[0].cause.startswith("input")
    ps = rows[(0, PS)]
    # the ps: the workers' steps (100_100..125_000) and its own work (reads from
    # 100_010, the last gradient in flight until 125_200, the last update
    # 125_300..125_350); the two reads ran at the same time (90 us)
    assert (ps.wall_micros, ps.compute_micros, ps.network_micros) == (25_240, 190, 400)
    (load,) = report.ps
    assert load.variables == {"w": {"read_bytes": 2048.0, "pushed_bytes": 4096.0, "micros": 4400.0}}
    text = report.to_text()
    assert f"step 0: {W1} was busy" in text and "ps /job:ps/replica:0/task:0" in text


def check_chrome_trace(doc: dict[str, Any]) -> None:
    """The Trace Event Format as the viewers read it: known phases with their
    fields, every used thread and process named, complete events of a thread
    nested or disjoint, flow starts inside a slice of their thread and flow ends
    bound to the enclosing slice."""
    events = doc["traceEvents"]
    named_pids = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    named_threads = {
        (e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"
    }
    slices: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for e in events:
        assert e["ph"] in {"X", "M", "s", "f"}, e
        assert isinstance(e["pid"], int) and isinstance(e["name"], str), e
        if e["ph"] == "M":
            assert e["name"] in {
                "process_name",
                "process_sort_index",
                "thread_name",
                "process_labels",
            }
            assert isinstance(e["args"]["labels" if e["name"] == "process_labels" else "name"], str)
            continue
        assert isinstance(e["tid"], int) and e["ts"] >= 0, e
        assert e["pid"] in named_pids and (e["pid"], e["tid"]) in named_threads, e
        if e["ph"] == "X":
            assert e["dur"] >= 0
            slices.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in slices.values():  # events of one thread nest or are disjoint
        stack: list[int] = []
        for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1], (start, end, stack)
            stack.append(end)
    for e in events:
        if e["ph"] in ("s", "f"):
            assert e["cat"] and e["id"] and (e["ph"] == "s" or e["bp"] == "e"), e
            inside = [a <= e["ts"] <= b for a, b in slices[(e["pid"], e["tid"])]]
            assert any(inside), e
    json.dumps(doc)  # plain JSON types only


def test_merged_trace_has_one_process_per_task(two_workers: list[Path]) -> None:
    cluster = tfprof_lite.merge(two_workers).cluster  # type: ignore[attr-defined]
    doc = json.loads(render(cluster))
    check_chrome_trace(doc)
    events = doc["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert sorted(names.values()) == [PS, W0, W1] and len(set(names)) == 3
    ops = [e for e in events if e["ph"] == "X"]
    assert {names[e["pid"]] for e in ops} == {PS, W0, W1}
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert len(starts) == 8 and set(starts) == set(ends)  # 2 steps x 2 workers x 2 tensors
    for key, start in starts.items():
        assert start["pid"] != ends[key]["pid"] and start["ts"] <= ends[key]["ts"] + 2000
    ps_threads = [
        e["args"]["name"]
        for e in events
        if e.get("name") == "thread_name" and names[e["pid"]] == PS
    ]
    assert sorted(ps_threads) == ["/job:ps/replica:0/task:0/device:cpu:0", "network"]
    assert doc["metadata"]["largest_correction_us"] == 0


def test_job_checker_and_overview_on_merged_data(two_workers: list[Path]) -> None:
    prof = tfprof_lite.merge(two_workers)
    reports = list(prof.advise({"JobChecker": {}}).checkers["JobChecker"].reports)
    assert reports[-1].startswith(f"straggler: job worker: {W1} is the slowest in 2 of 2 steps")
    page = overview(prof.model, cluster=prof.cluster)  # type: ignore[attr-defined]
    assert page.stragglers and page.stragglers[0].startswith(W1)
    assert "input-bound" in page.recommendation


def test_overview_says_a_waiting_cluster_is_waiting(tmp_path: Path) -> None:
    def step(task: str) -> Any:
        return meta(
            [
                (task + CPU, [recv(PS, task, "w/read", "1.0KB", 1000, 9000)]),
                (task + CPU, [("MatMul", 10_000, 300, "MatMul = MatMul(x, w/read)")]),
                (PS + CPU, [("w/read", 900, 50, "w/read = Identity(w)")]),
            ]
        )

    dirs = [write_task(tmp_path / t[-1], t, {0: step(t)}) for t in (W0, W1)]
    prof = tfprof_lite.merge(dirs)
    page = overview(prof.model, cluster=prof.cluster)  # type: ignore[attr-defined]
    assert page.recommendation.startswith("mostly waiting:"), page.recommendation
    assert "tensor transfers" in page.recommendation and "compute-bound" not in page.recommendation


def test_single_profile_mostly_idle_is_not_compute_bound() -> None:
    prof = tfprof_lite.Profiler(pb.GraphDef())
    prof.add_step(0, meta([(W0 + CPU, [("a", 1000, 100, ""), ("b", 9000, 1000, "")])]))
    page = overview(prof.model)
    # ops ran 1100 us of the 9000 us step
    assert page.recommendation.startswith("mostly waiting: no op ran for 87.8%")


def test_cli_commands_take_several_profiles(
    two_workers: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["overview", *map(str, two_workers)]) == 0
    out = capsys.readouterr().out
    assert f"straggler: {W1} is the slowest in 2 of 2 steps" in out
    trace = tmp_path / "t.json"
    assert main(["timeline", *map(str, two_workers), "-o", str(trace)]) == 0
    assert len({e["pid"] for e in json.loads(trace.read_text())["traceEvents"]}) == 3
    capsys.readouterr()
    assert main(["cluster", *map(str, two_workers), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["tasks"] == [PS, W0, W1] and doc["stragglers"][0]["task"] == W1
    assert main(["scope", *map(str, two_workers), "--by-name", "-max_depth", "2"]) == 0
    out = capsys.readouterr().out
    assert "\n  IteratorGetNext (" in out and "job_" not in out
    assert main(["scope", *map(str, two_workers), "-max_depth", "2"]) == 0
    assert "\n  job_worker (" in capsys.readouterr().out
    assert main(["cluster", str(tmp_path / "nothing")]) == 1
    assert "nothing: no such file or directory" in capsys.readouterr().err
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "task.worker-0-0.json").write_text('{"task": "/job:worker/task:0", "steps": {"a": 1}}')
    assert main(["cluster", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "task.worker-0-0.json: not a task sidecar (steps:" in err


def test_shared_directory_holds_every_task(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    write_task(shared, W0, {0: worker_step(W0, 100_000)})
    write_task(shared, W1, {0: worker_step(W1, 100_000)})
    prof = tfprof_lite.merge([shared])
    assert prof.cluster.own_tasks == [W0, W1]  # type: ignore[attr-defined]


def test_report_has_a_tasks_section(two_workers: list[Path]) -> None:
    from tfprof_lite.report.page import render_html

    prof = tfprof_lite.merge(two_workers)
    page = render_html(prof.model, cluster=prof.cluster)  # type: ignore[attr-defined]
    assert '<section id="tasks"><h2>Tasks</h2>' in page and page.count(f">{W1}<") >= 1
    assert f"step 0: <b>{W1}</b> busy" in page and '<td class="name">w</td>' in page
    assert 'id="tasks"' not in render_html(prof.model)


def test_task_tagged_capture_files(tmp_path: Path) -> None:
    from tfprof_lite.session.recorder import ProfileRecorder, task_tag

    assert task_tag("/job:worker/task:3") == "worker-0-3"
    with pytest.raises(ValueError, match="task must look like"):
        ProfileRecorder(str(tmp_path), task="worker 3")
    recorder = ProfileRecorder(str(tmp_path), task="/job:worker/task:1", global_steps=True)
    for step in (7, 9):
        recorder.write_task_trace(step, worker_step(W1, 100_000 * step))
    side = json.loads((tmp_path / "task.worker-0-1.json").read_text())
    assert side["task"] == W1 and side["steps"] == {"7": 7, "9": 9} and side["host"]
    prof = tfprof_lite.merge([tmp_path])
    cluster = prof.cluster  # type: ignore[attr-defined]
    assert cluster.own_tasks == [W1] and cluster.step_basis == "global"
    assert prof.model.sorted_steps() == [7, 9]


def test_merging_loaded_profilers_copies_them_per_task() -> None:
    profs = []
    for task, slow in ((W0, 0), (W1, 20_000)):
        prof = tfprof_lite.Profiler(pb.GraphDef())
        for step in (0, 1):
            prof.add_step(step, worker_step(task, 100_000 * (step + 1), slow=slow))
        profs.append(prof)
    merged = tfprof_lite.merge(profs)
    cluster = merged.cluster  # type: ignore[attr-defined]
    assert cluster.tasks == [PS, W0, W1] and cluster.own_tasks == [W0, W1]
    model = merged.model
    stats = model.stats(0)
    read = model.index[qualify(PS, "w/read")]
    assert stats.run_count[read] == 2  # both workers' reads of w, on the ps
    slow_input = model.index[qualify(W1, "IteratorGetNext")]
    assert stats.exec_micros[slow_input] == 21_000 and model.ops[slow_input] == "IteratorGetNext"
    # a loaded profile keeps no transfers: no network view, but tasks and stragglers
    report = cluster_report(cluster)
    assert not report.has_transfers and [s.task for s in report.stragglers] == [W1, W1]
    assert "no tensor transfers recorded" in report.to_text()
    again = tfprof_lite.merge([tfprof_lite.Profiler.load(merged.serialize_to_string())])
    assert sorted(again.model.names) == sorted(model.names)  # qualified names stay
