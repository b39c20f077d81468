"""The advisor on hand-made profiles (no TensorFlow needed).

Profiles are built with tfprof_lite's own message classes and fed to
``tfprof_lite.Profiler(graph_def).add_step``. TF-parity of the three TF checkers
on real models is in ``tests/integration/test_advisor_tf.py``; here: JobChecker,
option handling, empty profiles, the printed format, the one-shot ``advise`` and
the exact arithmetic of the TF checkers on controlled numbers.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest

import tfprof_lite
from tfprof_lite.advisor import CHECKER_ORDER, CHECKERS, render_advice, run_advisor, run_checkers
from tfprof_lite.advisor.job import NO_TASK_REPORT
from tfprof_lite.advisor.operation import FUSED_BN_ADVICE, NCHW_ADVICE
from tfprof_lite.errors import InvalidOptionError
from tfprof_lite.proto import messages as pb

W0 = "/job:worker/replica:0/task:0/device:CPU:0"
W1 = "/job:worker/replica:0/task:1/device:CPU:0"
W2 = "/job:worker/replica:0/task:2/device:CPU:0"
PS0 = "/job:ps/replica:0/task:0/device:CPU:0"
LOCAL_CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"
STREAM0 = "/device:GPU:0/stream:all"
STREAM1 = "/device:GPU:1/stream:all"

# (name, op, data_format or None)
NodeSpec = tuple[str, str, "str | None"]
# (node name, all_start_micros, op_end_rel_micros)
Rec = tuple[str, int, int]


def graph(nodes: Sequence[NodeSpec]) -> Any:
    """A GraphDef of ``(name, op, data_format)`` nodes."""
    msg = pb.GraphDef()
    for name, op, fmt in nodes:
        node = msg.node.add(name=name, op=op)
        if fmt is not None:
            node.attr["data_format"].s = fmt.encode()
    return msg


def meta(devices: Sequence[tuple[str, Sequence[Rec]]]) -> Any:
    """A RunMetadata with one DeviceStepStats per ``(device, records)``."""
    msg = pb.RunMetadata()
    for device, records in devices:
        dev = msg.step_stats.dev_stats.add(device=device)
        for name, start, dur in records:
            dev.node_stats.add(node_name=name, all_start_micros=start, op_end_rel_micros=dur)
    return msg


def profiler(nodes: Sequence[NodeSpec], *steps: Any) -> tfprof_lite.Profiler:
    """A profiler on ``graph(nodes)`` with ``steps`` added as steps 0, 1, ..."""
    prof = tfprof_lite.Profiler(graph(nodes))
    for step, run_meta in enumerate(steps):
        prof.add_step(step, run_meta)
    return prof


def reports(advice: Any) -> dict[str, list[str]]:
    """AdviceProto as ``{checker: reports}``."""
    return {name: list(entry.reports) for name, entry in advice.checkers.items()}


def ops(*names: str) -> list[NodeSpec]:
    return [(name, "Op", None) for name in names]


MULTI_TASK_NODES = ops("a", "b", "c", "d", "e", "f")


def multi_task_meta(scale: int = 1) -> Any:
    """worker task 0: 300us (2 ops), task 1: 100us (1 op), task 2: 200us; ps: 400us."""
    return meta(
        [
            (W0, [("a", 10, 100 * scale), ("b", 200, 200 * scale)]),
            (W1, [("c", 10, 100 * scale)]),
            (W2, [("d", 10, 200 * scale)]),
            (PS0, [("e", 10, 400 * scale)]),
        ]
    )


# --------------------------------------------------------------------- registry
def test_registry_matches_all_advice() -> None:
    # XlaCompatibilityChecker is registered but deliberately not in ALL_ADVICE.
    assert set(CHECKERS) == set(tfprof_lite.ALL_ADVICE) | {"XlaCompatibilityChecker"}
    assert CHECKER_ORDER == (
        "AcceleratorUtilizationChecker",
        "OperationChecker",
        "ExpensiveOperationChecker",
        "JobChecker",
        "InputPipelineChecker",
        "StepTimeChecker",
        "MemoryChecker",
        "XlaCompatibilityChecker",
    )
    for name, cls in CHECKERS.items():
        assert cls.name == name


def test_run_checkers_gives_the_advice_protos_entries() -> None:
    from tests.unit.cli import profiles

    every = {name: {} for name in CHECKERS}
    for prof in (profiler(MULTI_TASK_NODES, multi_task_meta()), profiles.profiler()):
        found = run_checkers(prof.model, every)
        assert found == reports(run_advisor(prof.model, every).advice)
        assert list(found) == [name for name in CHECKER_ORDER if name in found]
        assert len(found) >= 5


# --------------------------------------------------------------------- JobChecker
def test_job_checker_multi_task() -> None:
    prof = profiler(MULTI_TASK_NODES, multi_task_meta())
    advice = prof.advise({"JobChecker": {}})
    assert reports(advice) == {
        "JobChecker": [
            "job: ps, tasks: 1, ops: 1, time: 400us (40.00%), imbalance: n/a (single task)\n"
            "  task: /job:ps/replica:0/task:0, ops: 1, time: 400us (40.00%)",
            "job: worker, tasks: 3, ops: 4, time: 600us (60.00%), imbalance (max/mean): 1.50\n"
            "  task: /job:worker/replica:0/task:0, ops: 2, time: 300us (30.00%)\n"
            "  task: /job:worker/replica:0/task:1, ops: 1, time: 100us (10.00%)\n"
            "  task: /job:worker/replica:0/task:2, ops: 1, time: 200us (20.00%)",
        ]
    }


def test_job_checker_prints_like_the_other_checkers(capsys: pytest.CaptureFixture[str]) -> None:
    prof = profiler(MULTI_TASK_NODES, multi_task_meta())
    advice = prof.advise({"JobChecker": {}})
    out = capsys.readouterr().out
    assert out.startswith("\nJobChecker:\njob: ps, tasks: 1,")
    assert out == render_advice(advice)
    assert out.count("\n") == 2 + 2 + 4


def test_job_checker_step_average_and_single_step() -> None:
    prof = profiler(MULTI_TASK_NODES, multi_task_meta(1), multi_task_meta(3))
    average = reports(prof.advise({"JobChecker": {}}))["JobChecker"]
    assert average[0].startswith("job: ps, tasks: 1, ops: 1, time: 800us (40.00%)")
    step1 = reports(prof.advise({"JobChecker": {"step": "1"}}))["JobChecker"]
    assert step1[0].startswith("job: ps, tasks: 1, ops: 1, time: 1.20ms (40.00%)")
    assert "imbalance (max/mean): 1.50" in step1[1]


def test_job_checker_only_counts_ops_that_ran_in_the_step() -> None:
    step0 = meta([(W0, [("a", 10, 100)]), (W1, [("b", 10, 100)])])
    step1 = meta([(W0, [("a", 10, 100)])])
    prof = profiler(ops("a", "b"), step0, step1)
    assert reports(prof.advise({"JobChecker": {"step": "1"}})) == {}
    forced = reports(prof.advise({"JobChecker": {"step": "1", "always_report": "true"}}))
    assert forced["JobChecker"] == [
        "job: worker, tasks: 1, ops: 1, time: 100us (100.00%), imbalance: n/a (single task)\n"
        "  task: /job:worker/replica:0/task:0, ops: 1, time: 100us (100.00%)"
    ]


def test_job_checker_has_no_entry_for_a_single_task(capsys: pytest.CaptureFixture[str]) -> None:
    prof = profiler(ops("a", "b"), meta([(LOCAL_CPU, [("a", 10, 5), ("b", 20, 5)])]))
    advice = prof.advise({"JobChecker": {}})
    assert reports(advice) == {}
    assert capsys.readouterr().out == ""
    forced = prof.advise({"JobChecker": {"always_report": "true"}})
    assert reports(forced)["JobChecker"] == [
        "job: localhost, tasks: 1, ops: 2, time: 10us (100.00%), imbalance: n/a (single task)\n"
        "  task: /job:localhost/replica:0/task:0, ops: 2, time: 10us (100.00%)"
    ]


def test_job_checker_counts_no_op_of_a_single_task_profile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A profile whose devices name one task has no entry without per-op counting."""
    import tfprof_lite.advisor.job as job

    prof = profiler(ops("a", "b"), meta([(LOCAL_CPU, [("a", 10, 5), ("b", 20, 5)])]))
    counted: list[int] = []
    real = job.task_times

    def spy(model: Any, step: int = -1) -> Any:
        counted.append(step)
        return real(model, step)

    monkeypatch.setattr(job, "task_times", spy)
    assert reports(prof.advise({"JobChecker": {}})) == {}
    assert counted == []
    assert reports(prof.advise({"JobChecker": {"always_report": "true"}}))["JobChecker"]
    assert counted == [-1]


def test_job_checker_no_op_time_and_unattributed_devices() -> None:
    records = meta([(W0, [("a", 10, 0)]), (W1, [("b", 0, 0)]), ("/device:CPU:0", [("c", 5, 0)])])
    prof = profiler(ops("a", "b", "c"), records)
    assert reports(prof.advise({"JobChecker": {}}))["JobChecker"] == [
        "job: worker, tasks: 2, ops: 2, time: 1us (50.00%), imbalance (max/mean): 2.00\n"
        "  task: /job:worker/replica:0/task:0, ops: 1, time: 1us (50.00%)\n"
        "  task: /job:worker/replica:0/task:1, ops: 1, time: 0us (0.00%)",
        "not attributed to a task: ops: 1, time: 1us (50.00%)",
    ]
    idle = profiler(ops("a", "b"), meta([(W0, [("a", 0, 0)]), (W1, [("b", 0, 0)])]))
    idle_reports = reports(idle.advise({"JobChecker": {}}))["JobChecker"]
    assert "imbalance: n/a (no op time)" in idle_reports[0]


def test_job_checker_without_steps() -> None:
    prof = profiler(ops("a"))
    assert reports(prof.advise({"JobChecker": {}})) == {}
    forced = prof.advise({"JobChecker": {"always_report": "true"}})
    assert reports(forced) == {"JobChecker": [NO_TASK_REPORT]}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"step": "x"}, "step must be an integer"),
        ({"always_report": "yes"}, "always_report must be 'true' or 'false'"),
        ({"steps": "1"}, "unknown option(s) steps; it accepts always_report, step"),
        ({"step": "7"}, "step 7 not found; available steps: 0"),
    ],
)
def test_job_checker_option_errors(options: dict[str, str], message: str) -> None:
    prof = profiler(MULTI_TASK_NODES, multi_task_meta())
    with pytest.raises(InvalidOptionError, match="JobChecker: ") as err:
        prof.advise({"JobChecker": options})
    assert message in str(err.value)


# --------------------------------------------------------------------- options
def test_unknown_checker_name_names_the_valid_ones(capsys: pytest.CaptureFixture[str]) -> None:
    prof = profiler(ops("a"), meta([(LOCAL_CPU, [("a", 1, 1)])]))
    with pytest.raises(InvalidOptionError) as err:
        prof.advise({"OperationChecker": {}, "OperationCheckr": {}})
    text = str(err.value)
    assert "unknown advisor checker 'OperationCheckr' (did you mean OperationChecker?)" in text
    assert "AcceleratorUtilizationChecker, ExpensiveOperationChecker, InputPipelineChecker" in text
    assert capsys.readouterr().out == ""  # nothing runs when an option is bad


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["OperationChecker"], "advisor options must be a dict"),
        ({"OperationChecker": None}, "options of OperationChecker must be a dict of strings"),
        ({"OperationChecker": {"k": 1}}, "must map strings to strings"),
        ({"OperationChecker": {"k": "v"}}, "OperationChecker: unknown option(s) k; it accepts no"),
    ],
)
def test_bad_option_shapes(options: Any, message: str) -> None:
    prof = profiler(ops("a"))
    with pytest.raises(InvalidOptionError) as err:
        prof.advise(options)
    assert message in str(err.value)


def test_none_and_empty_options_run_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    prof = profiler(ops("a"), meta([(LOCAL_CPU, [("a", 1, 1)])]))
    assert reports(prof.advise(None)) == {}
    assert reports(prof.advise({})) == {}
    assert capsys.readouterr().out == ""


def test_advisor_options_proto_is_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    prof = profiler(ops("x/BatchNorm/mul"))
    message = pb.AdvisorOptionsProto()
    message.checkers["OperationChecker"].SetInParent()
    for given in (message, message.SerializeToString()):
        assert reports(prof.advise(given)) == {"OperationChecker": [FUSED_BN_ADVICE]}
    assert capsys.readouterr().out == 2 * f"\nOperationChecker:\n{FUSED_BN_ADVICE}\n"


# --------------------------------------------------------------------- empty profiles
def test_empty_profile(capsys: pytest.CaptureFixture[str], caplog: Any) -> None:
    prof = profiler(ops("a", "b"))
    with caplog.at_level(logging.WARNING, logger="tfprof_lite"):
        advice = prof.advise(dict(tfprof_lite.ALL_ADVICE))
    assert reports(advice) == {
        "AcceleratorUtilizationChecker": [],
        "OperationChecker": [],
        "ExpensiveOperationChecker": [],
    }
    assert capsys.readouterr().out == (
        "\nAcceleratorUtilizationChecker:\n\nOperationChecker:\n\nExpensiveOperationChecker:\n"
    )
    assert caplog.messages == [
        "Missing RunMetadata info. Skip ExpensiveOperationChecker",
        "Missing run_meta for ExpensiveOperationChecker",
        "Missing op_log (code traces) for ExpensiveOperationChecker",
    ]


# --------------------------------------------------------------------- one-shot
def test_one_shot_advise(capsys: pytest.CaptureFixture[str]) -> None:
    nodes = [("conv/Conv2D", "Conv2D", "NHWC"), ("bn/BatchNorm/add", "AddV2", None)]
    run_meta = meta([(GPU0, [("conv/Conv2D", 100, 50), ("bn/BatchNorm/add", 160, 40)])])
    run_meta.step_stats.dev_stats.add(device=STREAM0).node_stats.add(
        node_name="conv/Conv2D", all_start_micros=110, op_end_rel_micros=60
    )
    advice = tfprof_lite.advise(graph(nodes), run_meta)
    got = reports(advice)
    assert got["AcceleratorUtilizationChecker"] == [
        "device: /job:localhost/replica:0/task:0/device:gpu:0 utilization: 0.60"
    ]
    assert got["OperationChecker"] == [FUSED_BN_ADVICE, NCHW_ADVICE]
    assert got["ExpensiveOperationChecker"] == [
        "top 1 operation type: Conv2D, cpu: 50us, accelerator: 60us, total: 110us (73.33%)\n"
        "top 2 operation type: AddV2, cpu: 40us, accelerator: 0us, total: 40us (26.67%)",
        # min_micros 100 hides "bn" (40us); "conv" is a scope parent: own time 0us.
        "top 1 graph node: conv, cpu: 0us, accelerator: 0us, total: 0us",
    ]
    assert "JobChecker" not in got
    out = capsys.readouterr().out
    assert out == render_advice(advice)
    headers = [line for line in out.split("\n") if line.endswith("Checker:")]
    assert headers == [
        "AcceleratorUtilizationChecker:",
        "OperationChecker:",
        "ExpensiveOperationChecker:",
        "InputPipelineChecker:",
        "StepTimeChecker:",
        "MemoryChecker:",
    ]


def test_one_shot_advise_without_run_meta(caplog: Any) -> None:
    with caplog.at_level(logging.WARNING, logger="tfprof_lite"):
        advice = tfprof_lite.advise(graph([("BatchNorm/FusedBatchNorm", "FusedBatchNorm", None)]))
    assert reports(advice) == {
        "AcceleratorUtilizationChecker": [],
        "OperationChecker": [],
        "ExpensiveOperationChecker": [],
    }
    assert "Missing RunMetadata info. Skip ExpensiveOperationChecker" in caplog.messages


# --------------------------------------------------------------------- TF checkers, exact math
def test_accelerator_utilization_uses_each_nodes_latest_step() -> None:
    nodes = ops("a", "b", "c")
    # Step 0: a and c on GPU:0; step 1: only a (so c's numbers come from step 0).
    step0 = meta(
        [(GPU0, [("a", 100, 10), ("c", 300, 100)]), (STREAM0, [("a", 100, 5), ("c", 300, 90)])]
    )
    step1 = meta([(GPU0, [("a", 1000, 10)]), (STREAM0, [("a", 1000, 1)])])
    prof = profiler(nodes, step0, step1)
    # Window: start min(1000, 300) = 300, end max(1010, 400) = 1010; busy 1 + 90.
    got = reports(prof.advise({"AcceleratorUtilizationChecker": {}}))
    assert got == {
        "AcceleratorUtilizationChecker": [f"device: {GPU0.lower()} low utilization: {91 / 710:.2f}"]
    }


def test_accelerator_utilization_threshold_order_and_zero_start() -> None:
    nodes = ops("a", "b", "c", "d", "e")
    run_meta = meta(
        [
            (GPU1, [("a", 100, 50), ("b", 150, 50)]),
            (STREAM1, [("a", 100, 50)]),  # 50 / 100 = 0.50 -> not "low"
            (GPU0, [("c", 0, 0), ("d", 500, 100)]),  # c: no start time, ignored for start
            (STREAM0, [("d", 500, 20)]),
            (LOCAL_CPU, [("e", 1, 1000)]),  # a CPU node is not an accelerator
        ]
    )
    got = reports(profiler(nodes, run_meta).advise({"AcceleratorUtilizationChecker": {}}))
    assert got["AcceleratorUtilizationChecker"] == [
        f"device: {GPU0.lower()} low utilization: 0.20",
        f"device: {GPU1.lower()} utilization: 0.50",
    ]


def test_accelerator_utilization_skips_devices_without_a_window() -> None:
    run_meta = meta([(GPU0, [("a", 0, 0)])])
    got = reports(profiler(ops("a"), run_meta).advise({"AcceleratorUtilizationChecker": {}}))
    assert got == {"AcceleratorUtilizationChecker": []}


@pytest.mark.parametrize(
    ("nodes", "device", "expected"),
    [
        ([("net/BatchNorm/mul", "Mul", None)], LOCAL_CPU, [FUSED_BN_ADVICE]),
        ([("net/BatchNorm/fbn", "FusedBatchNorm", None)], LOCAL_CPU, []),
        # TF's test is the exact op type: the V3 kernel does not count as fused.
        ([("net/BatchNorm/fbn", "FusedBatchNormV3", None)], LOCAL_CPU, [FUSED_BN_ADVICE]),
        ([("conv", "Conv2D", "NHWC")], GPU0, [NCHW_ADVICE]),
        ([("conv", "Conv2D", "NHWC")], LOCAL_CPU, []),
        ([("conv", "Conv2D", "NCHW")], GPU0, []),
        ([("BatchNorm/conv", "Conv2D", "NHWC")], GPU1, [FUSED_BN_ADVICE, NCHW_ADVICE]),
    ],
)
def test_operation_checker(nodes: list[NodeSpec], device: str, expected: list[str]) -> None:
    run_meta = meta([(device, [(name, 10, 10) for name, _, _ in nodes])])
    prof = profiler(nodes, run_meta)
    assert reports(prof.advise({"OperationChecker": {}})) == {"OperationChecker": expected}
    loaded = tfprof_lite.Profiler.load(prof.serialize_to_string())
    assert reports(loaded.advise({"OperationChecker": {}})) == {"OperationChecker": expected}


def test_expensive_operation_checker_code_report() -> None:
    strings: dict[str, int] = {}

    def sid(text: str) -> int:
        return strings.setdefault(text, len(strings))

    log = pb.OpLogProto()
    frames = {
        "a": [("main.py", 1, "main"), ("model.py", 10, "build"), ("layers.py", 5, "dense")],
        "b": [("main.py", 1, "main"), ("model.py", 10, "build"), ("layers.py", 7, "conv")],
        "c": [("main.py", 1, "main"), ("model.py", 12, "loss")],
    }
    for name, trace in frames.items():
        entry = log.log_entries.add(name=name)
        for file, line, func in trace:
            entry.code_def.traces.add(file_id=sid(file), lineno=line, function_id=sid(func))
    for text, key in strings.items():
        log.id_to_string[key] = text
    prof = tfprof_lite.Profiler(graph(ops("a", "b", "c")), op_log=log)
    prof.add_step(0, meta([(LOCAL_CPU, [("a", 10, 3000), ("b", 10, 2000), ("c", 10, 500)])]))
    got = reports(prof.advise({"ExpensiveOperationChecker": {}}))["ExpensiveOperationChecker"]
    assert got[-1] == (
        "model.py:10:build, cpu: 5.00ms, accelerator: 0us, total: 5.00ms\n"
        "  layers.py:5:dense, cpu: 3.00ms, accelerator: 0us, total: 3.00ms\n"
        "  layers.py:7:conv, cpu: 2.00ms, accelerator: 0us, total: 2.00ms"
    )


def test_run_advisor_on_a_bare_model() -> None:
    from tfprof_lite.model.profile import ProfileModel

    advice = run_advisor(ProfileModel(), {"OperationChecker": {}}).advice
    assert reports(advice) == {"OperationChecker": []}
