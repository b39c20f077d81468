"""Capture logic that needs no TensorFlow: step schedule and environment settings."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from tfprof_lite.session import autostart
from tfprof_lite.session.profile_context import ProfileContext
from tfprof_lite.session.recorder import ProfileRecorder
from tfprof_lite.session.schedule import MAX_TRACED_STEPS, WARMUP_STEPS, StepSchedule


def _auto_run(schedule: StepSchedule, steps: range, coverage: float, key: str = "a") -> list[int]:
    traced = []
    for step in steps:
        if not schedule.is_slow(step, step):
            continue
        if schedule.should_trace(step, step, False, lambda: key, lambda: coverage).trace:
            traced.append(step)
    return traced


def test_explicit_steps_and_defaults() -> None:
    schedule = StepSchedule([3, 5], None)
    assert schedule.dump_steps == {MAX_TRACED_STEPS}
    assert not schedule.auto_tracing
    assert [s for s in range(8) if schedule.is_slow(s, s)] == [3, 5]
    assert _auto_run(schedule, range(200), 0.0) == [3, 5]
    assert schedule.should_dump(100) and schedule.should_dump(7, forced=True)
    assert not schedule.should_dump(7)


def test_too_many_trace_steps_and_bad_steps() -> None:
    with pytest.raises(ValueError, match="Only support tracing up to 100 steps"):
        StepSchedule(range(101), None)
    StepSchedule(range(100), None)
    with pytest.raises(TypeError, match="integer"):
        StepSchedule(["3"], None)
    with pytest.raises(TypeError, match="string"):
        StepSchedule(None, "12")  # type: ignore[arg-type]


def test_auto_tracing_warm_up_then_new_fetches() -> None:
    schedule = StepSchedule(None, [])
    assert not any(schedule.is_slow(s, s) for s in range(WARMUP_STEPS + 1))
    assert _auto_run(schedule, range(12, 200), coverage=1.0) == [12]
    assert schedule.should_trace(150, 150, False, lambda: "b", lambda: 1.0).trace


def test_auto_tracing_random_rule_is_tensorflows() -> None:
    """Random(111).randint(0, 10) < 2, drawn only while coverage < 0.5 and step < 100."""
    traced = _auto_run(StepSchedule(None, []), range(200), coverage=0.0)
    rng = random.Random(111)
    expected = [11] + [s for s in range(12, 100) if rng.randint(0, 10) < 2]
    assert traced == expected
    assert _auto_run(StepSchedule(None, []), range(200), coverage=0.7) == [11]


def test_tracing_stops_after_max_traced_steps() -> None:
    schedule = StepSchedule(None, [])
    for step in range(WARMUP_STEPS + 1, 400):
        schedule.should_trace(step, step, False, lambda s=step: str(s), lambda: 1.0)
    assert schedule.traced_steps == MAX_TRACED_STEPS + 1
    assert not schedule.is_slow(500, 500)


def test_undo_forgets_a_decision() -> None:
    schedule = StepSchedule(None, [])
    decision = schedule.should_trace(20, 20, False, lambda: "k", lambda: 1.0)
    assert decision.trace and decision.new_fetch_key == "k"
    schedule.undo(decision)
    assert schedule.traced_steps == 0
    assert schedule.should_trace(21, 21, False, lambda: "k", lambda: 1.0).trace


def test_recorder_rejects_unknown_view_and_reports_missing_profiles(tmp_path: Path) -> None:
    recorder = ProfileRecorder(str(tmp_path))
    with pytest.raises(ValueError, match="Unknown cmd: python"):
        recorder.add_auto_profiling("python", {}, [1])
    with pytest.raises(ValueError, match="No autoprofiler for command: op, was run"):
        recorder.get_profiles("op")


def test_profile_context_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Must have a directory"):
        ProfileContext("")
    with pytest.raises(ValueError, match="step_source"):
        ProfileContext(tmp_path, step_source="epoch")
    off = ProfileContext("", enabled=False)
    assert off.profiler is None
    off.add_auto_profiling("bogus", {}, [1])
    off.trace_next_step()
    with pytest.raises(ValueError):
        off.get_profiles("op")


def test_parse_steps() -> None:
    assert autostart.parse_steps("5, 10,20-23,40-60:10") == [5, 10, 20, 21, 22, 23, 40, 50, 60]
    assert autostart.parse_steps("") == []
    for bad in ("x", "5-3", "1-9:0", "2-x"):
        with pytest.raises(ValueError, match="steps"):
            autostart.parse_steps(bad)


def test_settings_from_env() -> None:
    assert autostart.settings_from_env({}) is None
    settings = autostart.settings_from_env({"TFPROF_LITE_DIR": "out"})
    assert settings == autostart.Settings("out")
    settings = autostart.settings_from_env(
        {
            "TFPROF_LITE_DIR": "out",
            "TFPROF_LITE_TRACE_STEPS": "1-3",
            "TFPROF_LITE_DUMP_STEPS": "",
            "TFPROF_LITE_STEP_SOURCE": "global_step",
            "TFPROF_LITE_DUMP_ON_EXIT": "0",
            "TFPROF_LITE_DEBUG": "yes",
        }
    )
    assert settings == autostart.Settings("out", [1, 2, 3], [], "global_step", False, True)
    with pytest.raises(ValueError, match="TFPROF_LITE_STEP_SOURCE"):
        autostart.settings_from_env({"TFPROF_LITE_DIR": "o", "TFPROF_LITE_STEP_SOURCE": "x"})
    with pytest.raises(ValueError, match="TFPROF_LITE_DEBUG"):
        autostart.settings_from_env({"TFPROF_LITE_DIR": "o", "TFPROF_LITE_DEBUG": "maybe"})


def test_runner_without_profiling_and_usage(tmp_path: Path) -> None:
    """``python -m tfprof_lite.run`` without TFPROF_LITE_DIR just runs the script."""
    script = tmp_path / "hello.py"
    script.write_text("import sys\nprint('hi', sys.argv[1:], __name__)\n")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    run = [sys.executable, "-m", "tfprof_lite.run"]
    proc = subprocess.run([*run, str(script), "a"], env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout == "hi ['a'] __main__\n"
    assert proc.stderr == ""
    proc = subprocess.run(run, env=env, capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.startswith("usage: python -m tfprof_lite.run")


def test_import_does_not_load_tensorflow() -> None:
    code = (
        "import sys, tfprof_lite, tfprof_lite.session.autostart, tfprof_lite.run\n"
        "tfprof_lite.ProfileContext\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow imported'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
