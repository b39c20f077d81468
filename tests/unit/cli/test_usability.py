"""The CLI's user-visible behaviour that must not surprise: following a run that
has not started yet, bare ``tfprof-lite``, ``xla-compat`` without annotations,
readable ``kernels`` names and the ``memory`` peak-step default."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from tests.unit.cli.conftest import Runner
from tfprof_lite import Profiler
from tfprof_lite.analysis.monitoring import summarize
from tfprof_lite.proto import messages as pb


def _write_run_later(run_dir: Path, delay: float) -> threading.Thread:
    """A thread that creates ``run_dir``, then its ``monitor.jsonl`` with one
    finished run, as a training run started after the follower would."""

    def _work() -> None:
        time.sleep(delay)
        run_dir.mkdir()
        time.sleep(delay)
        log = run_dir / "monitor.jsonl"
        records = [
            {"event": "start", "run": "r1", "level": 1, "every": 10, "sample_every": 5},
            {"event": "end", "run": "r1", "steps": 0, "summary": summarize([], "r1").to_dict()},
        ]
        log.write_text("".join(json.dumps(r) + "\n" for r in records))

    thread = threading.Thread(target=_work, daemon=True)
    thread.start()
    return thread


def test_monitor_follow_waits_for_the_directory(run: Runner, tmp_path: Path) -> None:
    run_dir = tmp_path / "not_yet"
    writer = _write_run_later(run_dir, 0.3)
    result = run("monitor", run_dir, "--follow", "--until-end", "--idle-timeout", "10")
    writer.join(5)
    assert result.code == 0, result.err
    assert result.err == ""
    lines = result.out.splitlines()
    assert lines[0].startswith("run r1: level 1, every 10 steps")
    assert lines[-1].startswith("tfprof_lite monitor summary:")


def test_monitor_follow_idle_timeout_before_the_directory(run: Runner, tmp_path: Path) -> None:
    result = run("monitor", tmp_path / "never", "--follow", "--idle-timeout", "0.3")
    assert (result.code, result.out, result.err) == (0, "", "")


def test_bare_invocation_prints_the_help(run: Runner) -> None:
    result = run()
    assert result.code == 2 and result.out == ""
    assert result.err.startswith("Usage: tfprof-lite [OPTIONS] COMMAND [ARGS]...\n")
    assert "error:" not in result.err and "\nCommands:\n" in result.err
    assert "  xla-compat  " in result.err and "  memory  " in result.err
    assert result.err == run("--help").out


#: An Eigen kernel name as TensorFlow's GPU tracer records it (about 500 characters).
EIGEN = (
    "void Eigen::internal::EigenMetaKernel<Eigen::TensorEvaluator<Eigen::TensorAssignOp<"
    "Eigen::TensorMap<Eigen::Tensor<float, 1, 1, long>, 16, Eigen::MakePointer>, "
    "Eigen::TensorCwiseBinaryOp<Eigen::internal::scalar_sum_op<float, float>, Eigen::TensorMap<"
    "Eigen::Tensor<float const, 1, 1, long>, 16, Eigen::MakePointer> const> const> const, "
    "Eigen::GpuDevice>, long>(Eigen::TensorEvaluator<Eigen::TensorAssignOp<Eigen::TensorMap<"
    "Eigen::Tensor<float, 1, 1, long>, 16, Eigen::MakePointer>> const, Eigen::GpuDevice>, long)"
)


def _gpu_step() -> Any:
    """One step's RunMetadata: ``a/add`` launches the Eigen kernel twice."""
    meta = pb.RunMetadata()
    gpu = meta.step_stats.dev_stats.add(device="/device:GPU:0")
    gpu.node_stats.add(node_name="a/add", all_start_micros=990, op_end_rel_micros=40)
    stream = meta.step_stats.dev_stats.add(device="/device:GPU:0/stream:all")
    label = EIGEN + " regs:16 shm:0 grid:1,1,1 block:1024,1,1@@a/add:AddV2"
    for start, dur in ((1000, 7), (1100, 5)):
        stream.node_stats.add(
            node_name="a/add:AddV2",
            all_start_micros=start,
            op_end_rel_micros=dur,
            all_end_rel_micros=dur,
            timeline_label=label,
        )
    return meta


def test_kernels_shortens_names(run: Runner, tmp_path: Path) -> None:
    (tmp_path / "rm.pb").write_bytes(_gpu_step().SerializeToString())
    result = run("kernels", "--run-meta", tmp_path / "rm.pb")
    assert result.code == 0, result.err
    row = result.out.splitlines()[2]
    assert row.endswith("void Eigen::internal::EigenMetaKernel<…>(…) <- a/add (AddV2)")
    # The fixed columns, the launch columns (regs .. TC: 50) and the shortened name.
    assert max(len(line) for line in result.out.splitlines()) < 120 + 50
    assert "    16       0B       1,1,1    1024,1,1        -    void Eigen" in row
    assert result.out.count("--full-names") == 1
    full = run("kernels", "--run-meta", tmp_path / "rm.pb", "--full-names")
    assert full.code == 0 and f"{EIGEN} <- a/add (AddV2)" in full.out
    assert "--full-names" not in full.out


def test_kernels_of_a_saved_profile_notes_once(run: Runner, tmp_path: Path) -> None:
    prof = Profiler()
    for step in range(3):
        prof.add_step(step, _gpu_step())
    (tmp_path / "profile_2").write_bytes(prof.serialize_to_string())
    result = run("kernels", tmp_path / "profile_2")
    assert result.code == 0, result.err
    assert result.out.count("not kept") == 1
    assert result.out.splitlines()[-1].startswith("note: kernel names are not kept")


def test_xla_compat_without_annotation_says_how(run: Runner, profile: Path) -> None:
    result = run("xla-compat", profile)
    assert result.code == 1 and result.out == ""
    assert result.err.startswith("tfprof-lite: error: ") and result.err.count("\n") == 1
    assert "no XLA compatibility data" in result.err
    assert "tfprof_lite.capture.xla_compat.annotate(profiler)" in result.err
    assert "annotate(pctx.profiler)" in result.err


def test_memory_defaults_to_the_peak_step(run: Runner, profile: Path) -> None:
    result = run("memory", profile)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == (
        "memory of the 3 traced steps (--per-step prints every step, --steps RANGE some, "
        "--step N one):"
    )
    (at,) = [i for i, line in enumerate(lines) if line.endswith(" has the highest peak:")]
    peak = int(lines[at].split()[1])
    assert all(line.startswith("  ") for line in lines[1:at])  # the summary
    assert f"at step {peak} " in result.out
    assert lines[at + 1].startswith(f"step {peak} (per-op bytes):")
    assert sum(line.startswith("step ") for line in lines) == 2
    assert result.out.count("note: ") == 1
    some = run("memory", profile, "--steps", "1-2")
    assert [line for line in some.out.splitlines() if line.endswith("(per-op bytes):")] == [
        "step 1 (per-op bytes):",
        "step 2 (per-op bytes):",
    ]
    every = run("memory", profile, "--all-steps")
    assert every.code == 0, every.err
    assert [line for line in every.out.splitlines() if line.endswith("(per-op bytes):")] == [
        "step 0 (per-op bytes):",
        "step 1 (per-op bytes):",
        "step 2 (per-op bytes):",
    ]
    assert every.out.count("note: ") == 1 and "note: steps 0-2: " in every.out
    one = run("memory", profile, "--step", 1)
    assert one.code == 0 and one.out.startswith("step 1 (per-op bytes):")
    doc = json.loads(run("memory", profile, "--json").out)
    assert [s["step"] for s in doc["steps"]] == [0, 1, 2]
