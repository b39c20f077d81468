"""Per-step findings as step ranges: the advisor's grouping of per-step lines,
the memory summary and its step-range parser, and the profile kind."""

from __future__ import annotations

import pytest

from tfprof_lite.advisor.step_lines import KEPT_STEP_LINES, group_step_lines
from tfprof_lite.analysis.memory import AllocatorMemory, LiveOp, MemoryReport, StepMemory
from tfprof_lite.analysis.memory_summary import MAX_GROUPS, parse_steps, step_list, summarize
from tfprof_lite.analysis.profile_kind import profile_kind
from tfprof_lite.model.profile import ProfileModel


def test_identical_step_lines_become_one_range() -> None:
    lines = ["verdict"] + [f"step {i}: input 1ms of 2ms (50.0%)" for i in range(5)]
    lines += ["slow step 3: 9ms is 3.0x the median", "slow step 7: 9ms is 3.0x the median"]
    assert group_step_lines(lines) == [
        "verdict",
        "steps 0-4: input 1ms of 2ms (50.0%)",
        "slow steps 3, 7: 9ms is 3.0x the median",
    ]


def test_lines_of_tf_checkers_are_kept() -> None:
    lines = ["top 1 operation type: MatMul, cpu: 1us", "step 3, GPU_0_bfc: peak 1MB at +2us"]
    assert group_step_lines(lines) == lines


def test_many_different_step_lines_are_cut() -> None:
    lines = [f"step {i}: input {i}us" for i in range(1000)] + ["fix: prefetch"]
    out = group_step_lines(lines)
    assert out[:KEPT_STEP_LINES] == lines[:KEPT_STEP_LINES]
    assert out[KEPT_STEP_LINES].startswith("990 more per-step lines left out (steps 10-999;")
    assert out[-1] == "fix: prefetch" and len(out) == KEPT_STEP_LINES + 2


def test_step_list_is_cut() -> None:
    assert step_list([1, 2, 3, 5]) == "1-3, 5"
    assert step_list(list(range(0, 100, 2))).endswith(", ... (50 steps in all)")


def test_parse_steps() -> None:
    assert parse_steps("3-7, 9") == [(3, 7), (9, 9)]
    assert parse_steps("0-1000000000") == [(0, 1_000_000_000)]
    for bad in ("", "x", "7-3", "1-"):
        with pytest.raises(ValueError):
            parse_steps(bad)


def _report(steps: int, distinct: int = 2) -> MemoryReport:
    report = MemoryReport()
    for step in range(steps):
        op = LiveOp(f"op{step % distinct}", "MatMul", "", 100 + step % 3, [])
        alloc = AllocatorMemory("GPU_0_bfc", True, peak_bytes=1000 + step, by_op=[op])
        report.steps.append(StepMemory(step, 0, "allocation records", [alloc]))
    report.steps.append(StepMemory(steps, 0, "no memory records"))
    return report


def test_memory_summary_groups_steps_with_the_same_finding() -> None:
    lines = summarize(_report(6)).lines()
    assert lines == [
        "GPU_0_bfc: highest peak 1.00KB at step 5 (+0us); records in 6 steps (0-5)",
        "GPU_0_bfc: steps 0, 2, 4: peak 1.00KB to 1.00KB; live at the peak: op0 (MatMul) 100B to "
        "102B",
        "GPU_0_bfc: steps 1, 3, 5: peak 1.00KB to 1.00KB; live at the peak: op1 (MatMul) 100B to "
        "102B",
        "no memory records in 1 step: 6",
    ]


def test_memory_summary_is_bounded() -> None:
    # (Its cost in steps is measured in benchmarks/bench_steps.py, not timed here.)
    lines = summarize(_report(2_000, 50)).lines()
    many = summarize(_report(20_000, 50)).lines()
    assert len(lines) == len(many) == MAX_GROUPS + 3
    assert "42 other findings" in many[-2]


def test_profile_kind_of_a_graph_profile() -> None:
    assert profile_kind(ProfileModel()) == "tf1"
