"""The advisor against TensorFlow's: same entries, same reports, same printed sections.

TF prints the checkers in protobuf map order, which changes from process to process
(even from profiler to profiler), so results are compared per checker: the
AdviceProto as ``{checker: reports}`` and stdout cut into ``\\n<Name>:\\n`` sections.

Profiles: every real model of :mod:`tests.integration.tf_models`; the CNN's graph
with its steps moved to two GPUs (canonical ``GPU:0``/``GPU:1`` records plus
``stream:all`` accelerator records) to trigger AcceleratorUtilizationChecker and
the NHWC-on-GPU advice; the two-CPU model's steps moved to two tasks (JobChecker:
TF has no entry, ours cross-checked against TF's per-node times); the one-shot
``advise`` with and without RunMetadata; a saved profile loaded by both.
"""

from __future__ import annotations

import functools
import os
import re
import zlib
from collections.abc import Mapping
from typing import Any

import pytest

import tfprof_lite
from tfprof_lite.advisor import CHECKER_ORDER
from tfprof_lite.base.units import format_time
from tfprof_lite.proto import messages as pb

pytestmark = pytest.mark.tf

tf = pytest.importorskip("tensorflow")
tf_oracle = pytest.importorskip("tests.integration.tf_oracle")
tf_models = pytest.importorskip("tests.integration.tf_models")

from tensorflow.core.profiler import tfprof_options_pb2, tfprof_output_pb2  # noqa: E402

tf1 = tf.compat.v1

# TensorFlow's ALL_ADVICE (ours adds InputPipelineChecker, StepTimeChecker, MemoryChecker).
TF_ADVICE_NAMES = (
    "ExpensiveOperationChecker",
    "AcceleratorUtilizationChecker",
    "JobChecker",
    "OperationChecker",
)
ALL_ADVICE: dict[str, dict[str, str]] = {name: {} for name in TF_ADVICE_NAMES}
TF_CHECKERS = ("AcceleratorUtilizationChecker", "OperationChecker", "ExpensiveOperationChecker")

GPU = (
    "/job:localhost/replica:0/task:0/device:GPU:0",
    "/job:localhost/replica:0/task:0/device:GPU:1",
)
STREAM = ("/device:GPU:0/stream:all", "/device:GPU:1/stream:all")
#: Two-CPU model device suffix -> new canonical device, per task layout.
TASK_LAYOUTS = {
    "two_workers": {
        "CPU:0": "/job:worker/replica:0/task:0/device:CPU:0",
        "CPU:1": "/job:worker/replica:0/task:1/device:CPU:0",
    },
    "ps_and_worker": {
        "CPU:0": "/job:worker/replica:0/task:0/device:CPU:0",
        "CPU:1": "/job:ps/replica:0/task:0/device:CPU:0",
    },
}


# ----------------------------------------------------------------------- helpers
def as_dict(advice: Any) -> dict[str, list[str]]:
    """An AdviceProto (ours, TF's or bytes) as ``{checker: reports}``."""
    msg = pb.AdviceProto()
    msg.ParseFromString(advice if isinstance(advice, bytes) else advice.SerializeToString())
    return {name: list(entry.reports) for name, entry in msg.checkers.items()}


def sections(stdout: str) -> dict[str, str]:
    """Printed advice cut into ``{checker: section text}`` (each header once)."""
    names = "|".join(CHECKER_ORDER)
    starts = [(m.start(), m.group(1)) for m in re.finditer(rf"\n({names}):\n", stdout)]
    assert stdout[: starts[0][0] if starts else len(stdout)] == ""
    out: dict[str, str] = {}
    for i, (pos, name) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(stdout)
        assert name not in out
        out[name] = stdout[pos:end]
    return out


_ours: dict[int, tuple[Any, tfprof_lite.Profiler]] = {}


def ours_for(capture: Any) -> tfprof_lite.Profiler:
    """Our profiler on a capture (built once per capture)."""
    hit = _ours.get(id(capture))
    if hit is not None and hit[0] is capture:
        return hit[1]
    prof = tfprof_lite.Profiler(capture.graph)
    for step, data in capture.run_metas:
        prof.add_step(step, data)
    _ours[id(capture)] = (capture, prof)
    return prof


def our_advice(
    prof: tfprof_lite.Profiler, options: Mapping[str, Any], capsys: pytest.CaptureFixture[str]
) -> tuple[dict[str, list[str]], str]:
    """Our advice as a dict plus what it printed."""
    capsys.readouterr()
    advice = prof.advise({name: dict(opts) for name, opts in options.items()})
    return as_dict(advice), capsys.readouterr().out


def assert_same_as_tf(
    capture: Any, options: Mapping[str, Any], capsys: pytest.CaptureFixture[str]
) -> dict[str, list[str]]:
    """Our advice and printed sections equal TF's; returns ours."""
    oracle = tf_oracle.oracle_for(capture)
    expected = as_dict(oracle.advise(options))
    expected_out = oracle.advise_stdout(options)
    got, out = our_advice(ours_for(capture), options, capsys)
    assert got == expected
    assert sections(out) == sections(expected_out)
    assert list(sections(out)) == [name for name in CHECKER_ORDER if name in got]
    return got


def _records(data: bytes) -> list[Any]:
    meta = pb.RunMetadata()
    meta.ParseFromString(data)
    return [rec for dev in meta.step_stats.dev_stats for rec in dev.node_stats]


def gpu_step(data: bytes, index: int) -> bytes:
    """A CPU step moved onto two GPUs with synthetic, back-to-back timings.

    Each node goes to GPU ``crc32(name) % 2``; its canonical record lasts 10us; its
    ``stream:all`` record lasts ``9 - 2 * index`` us on GPU:0 (0.50 utilization in
    the last traced step) and 1us on GPU:1 (low utilization).
    """
    out = pb.RunMetadata()
    canon = [out.step_stats.dev_stats.add(device=name) for name in GPU]
    streams = [out.step_stats.dev_stats.add(device=name) for name in STREAM]
    used = [0, 0]
    for rec in _records(data):
        if rec.node_name == "_SOURCE":
            continue
        gpu = zlib.crc32(rec.node_name.encode()) % 2
        start = 100_000 * (gpu + 1) + 10 * used[gpu]
        used[gpu] += 1
        copy = canon[gpu].node_stats.add()
        copy.CopyFrom(rec)
        copy.all_start_micros, copy.op_end_rel_micros, copy.all_end_rel_micros = start, 10, 10
        busy = 9 - 2 * index if gpu == 0 else 1
        streams[gpu].node_stats.add(
            node_name=rec.node_name,
            all_start_micros=start,
            op_end_rel_micros=busy,
            all_end_rel_micros=busy,
        )
    return bytes(out.SerializeToString())


def task_step(data: bytes, layout: Mapping[str, str]) -> bytes:
    """A step of the two-CPU model with its devices renamed per ``layout``."""
    meta = pb.RunMetadata()
    meta.ParseFromString(data)
    for dev in meta.step_stats.dev_stats:
        dev.device = layout[dev.device.rsplit("/device:", 1)[1]]
    return bytes(meta.SerializeToString())


@functools.cache
def gpu_capture() -> Any:
    """The CNN's graph with its traced steps moved onto two GPUs."""
    base = tf_models.cnn()
    metas = [(step, gpu_step(data, i)) for i, (step, data) in enumerate(base.run_metas)]
    return tf_models.Capture(name="cnn_gpu", graph=base.graph, run_metas=metas)


@functools.cache
def task_capture(layout: str) -> Any:
    """The two-CPU model with its devices renamed to tasks of a distributed run."""
    base = tf_models.two_cpus()
    metas = [(step, task_step(data, TASK_LAYOUTS[layout])) for step, data in base.run_metas]
    return tf_models.Capture(name=f"two_cpus_{layout}", graph=base.graph, run_metas=metas)


# ----------------------------------------------------------------------- real models
def test_all_advice_matches_tf(capture: Any, capsys: pytest.CaptureFixture[str]) -> None:
    got = assert_same_as_tf(capture, ALL_ADVICE, capsys)
    assert set(got) == set(TF_CHECKERS)  # JobChecker: no entry on one task, like TF


@pytest.mark.parametrize("name", [n for n in CHECKER_ORDER if n in TF_ADVICE_NAMES])
def test_each_checker_alone_matches_tf(
    capture: Any, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    got = assert_same_as_tf(capture, {name: {}}, capsys)
    assert list(got) == ([] if name == "JobChecker" else [name])


def test_known_tf_reports_on_the_cnn(capsys: pytest.CaptureFixture[str]) -> None:
    got = assert_same_as_tf(tf_models.cnn(), ALL_ADVICE, capsys)
    # FusedBatchNormV3 is not "FusedBatchNorm" for TF's checker.
    assert got["OperationChecker"] == ["Maybe use faster FusedBatchNorm instead of BatchNorm"]
    assert got["AcceleratorUtilizationChecker"] == []
    op_report, scope_report = got["ExpensiveOperationChecker"][:2]
    assert op_report.startswith("top 1 operation type: ")
    assert op_report.count("\n") == 2
    assert scope_report.startswith("top 1 graph node: ")


# ----------------------------------------------------------------------- GPU-style
def test_gpu_profile_matches_tf(capsys: pytest.CaptureFixture[str]) -> None:
    got = assert_same_as_tf(gpu_capture(), ALL_ADVICE, capsys)
    assert got["AcceleratorUtilizationChecker"] == [
        "device: /job:localhost/replica:0/task:0/device:gpu:0 utilization: 0.50",
        "device: /job:localhost/replica:0/task:0/device:gpu:1 low utilization: 0.10",
    ]
    assert got["OperationChecker"] == [
        "Maybe use faster FusedBatchNorm instead of BatchNorm",
        "Found operation using NHWC data_format on GPU. Maybe NCHW is faster.",
    ]
    assert "accelerator: 0us, total: 0us" not in got["ExpensiveOperationChecker"][0]


def test_loaded_profile_matches_tf(tmp_path: Any) -> None:
    prof = ours_for(gpu_capture())
    path = os.path.join(tmp_path, "profile_3")
    with open(path, "wb") as handle:
        handle.write(prof.serialize_to_string())
    options = tfprof_options_pb2.AdvisorOptionsProto()
    for name in TF_CHECKERS:
        options.checkers[name].SetInParent()
    mdl = tf_oracle.model_analyzer.print_mdl  # the oracle's tracking proxy
    tf_oracle.close_current()
    try:
        mdl.ProfilerFromFile(path.encode())
        with tf_oracle._capture_fd1():
            raw = mdl.Profile(b"advise", options.SerializeToString())
    finally:
        tf_oracle.close_current()
    expected = tfprof_output_pb2.AdviceProto()
    expected.ParseFromString(raw)
    loaded = tfprof_lite.Profiler.load(path)
    got = as_dict(loaded.advise(options))  # TF's AdvisorOptionsProto is accepted too
    assert got == as_dict(expected)
    assert len(got["AcceleratorUtilizationChecker"]) == 2


def test_cli_tf_default_prints_tfs_sections(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """``tfprof-lite advise --tf-default`` prints TF's sections; the default adds ours."""
    from tfprof_lite.cli import main

    capture = gpu_capture()
    path = os.path.join(tmp_path, "profile_3")
    with open(path, "wb") as handle:
        handle.write(ours_for(capture).serialize_to_string())
    expected = sections(tf_oracle.oracle_for(capture).advise_stdout(ALL_ADVICE))
    capsys.readouterr()
    assert main(["advise", path, "--tf-default"]) == 0
    ours = sections(capsys.readouterr().out)
    assert ours == expected  # TF's print order varies per process: compared per section
    assert list(ours) == list(TF_CHECKERS)
    assert main(["advise", path]) == 0
    every = sections(capsys.readouterr().out)
    assert {name: every[name] for name in TF_CHECKERS} == expected
    assert list(every) == [name for name in CHECKER_ORDER if name != "JobChecker"]


# ----------------------------------------------------------------------- JobChecker
def _tf_task_times(capture: Any) -> dict[str, tuple[int, int]]:
    """Per task, (ops, exec micros at step -1) summed from TF's scope-view nodes."""
    opts = tf1.profiler.ProfileOptionBuilder(
        tf1.profiler.ProfileOptionBuilder.time_and_memory(min_micros=0, min_bytes=0)
    )
    options = opts.with_max_depth(100000).select(["micros", "device"]).build()
    root = tfprof_output_pb2.GraphNodeProto()
    root.ParseFromString(tf_oracle.oracle_for(capture).proto("scope", options))
    totals: dict[str, tuple[int, int]] = {}
    stack = list(root.children)
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.devices:
            task = node.devices[0].split("/device:")[0]
            ops, micros = totals.get(task, (0, 0))
            totals[task] = (ops + 1, micros + node.exec_micros)
    return totals


@pytest.mark.parametrize("layout", sorted(TASK_LAYOUTS))
def test_job_checker_on_a_distributed_profile(
    layout: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capture = task_capture(layout)
    oracle = tf_oracle.oracle_for(capture)
    expected = as_dict(oracle.advise(ALL_ADVICE))
    expected_out = oracle.advise_stdout(ALL_ADVICE)
    got, out = our_advice(ours_for(capture), ALL_ADVICE, capsys)
    assert "JobChecker" not in expected  # TF never produces the entry
    job_reports = got.pop("JobChecker")
    assert got == expected
    assert {k: v for k, v in sections(out).items() if k != "JobChecker"} == sections(expected_out)
    assert list(sections(out)) == [n for n in CHECKER_ORDER if n in TF_ADVICE_NAMES]
    tasks = re.findall(r"task: (\S+), ops: (\d+), time: (\S+) \(", "\n".join(job_reports))
    tf_times = _tf_task_times(capture)
    assert {task: (int(ops), time) for task, ops, time in tasks} == {
        task: (ops, format_time(micros)) for task, (ops, micros) in tf_times.items()
    }
    if layout == "ps_and_worker":
        assert all("imbalance: n/a (single task)" in report for report in job_reports)
    else:
        assert re.search(r"imbalance \(max/mean\): \d+\.\d\d$", job_reports[0].split("\n")[0])


# ----------------------------------------------------------------------- one-shot advise
def _tf_one_shot(graph: Any, run_meta: Any) -> tuple[dict[str, list[str]], str]:
    with tf_oracle._capture_fd1() as out:
        advice = tf1.profiler.advise(graph, run_meta=run_meta)
    return as_dict(advice), out()


@pytest.mark.parametrize("name", ["dense_net", "cnn", "data_pipeline"])
def test_one_shot_advise_matches_tf(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    capture = tf_models.ALL_CAPTURES[name]()
    expected, expected_out = _tf_one_shot(capture.graph, capture.run_metadata(0))
    capsys.readouterr()
    got = as_dict(tfprof_lite.advise(capture.graph, capture.run_metas[0][1]))
    # Our default adds checkers of our own; the TF ones must match exactly.
    assert got.pop("InputPipelineChecker") and got.pop("StepTimeChecker")
    assert got.pop("MemoryChecker")
    assert got == expected
    ours = sections(capsys.readouterr().out)
    assert {k: v for k, v in ours.items() if k in TF_CHECKERS} == sections(expected_out)


def test_one_shot_advise_without_run_meta(capfd: pytest.CaptureFixture[str], caplog: Any) -> None:
    graph = tf_models.cnn().graph
    capfd.readouterr()
    expected, _ = _tf_one_shot(graph, None)
    tf_err = capfd.readouterr().err
    assert "Missing RunMetadata info. Skip ExpensiveOperationChecker\n" in tf_err
    assert "Missing run_meta for ExpensiveOperationChecker\n" in tf_err
    with caplog.at_level("WARNING", logger="tfprof_lite"):
        got = as_dict(tfprof_lite.advise(graph))
    assert got == expected
    assert got["ExpensiveOperationChecker"] == []
    assert caplog.messages[:2] == [
        "Missing RunMetadata info. Skip ExpensiveOperationChecker",
        "Missing run_meta for ExpensiveOperationChecker",
    ]
