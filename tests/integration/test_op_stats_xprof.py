"""Op statistics and memory over the whole window on real captures, against XProf.

Captures: the Keras ``fit`` capture of :mod:`tests.integration.xspace_captures`
(TF 2.21, CPU, every traced batch a step), a Keras ``fit`` capture with work and
allocations before the first step and after the last
(:mod:`tests.window_capture`, the BFC host allocator on), and the H100 JAX
samples. XProf (:mod:`tests.xspace_oracle`) gives ``framework_op_stats`` and
``memory_profile``.

What is compared (XProf's ``framework_op_stats`` table without the ``IDLE``
rows, whose percentages are each row's self time over the side's non-idle self
time, as our ``share``):

* Keras ``fit``: the same host rows (type, name), the same occurrences, totals
  within 1 us a row (ours are exact ns, XProf's 1 ns rounded) and self-time
  shares within 1 point.
* The window capture: the same rows with time, the same totals and shares;
  XProf's occurrences are ours plus the allocator events (allocations and
  frees) whose ``tf_op`` names the op (XProf counts each as one more
  occurrence of zero time), and its rows of type ``""`` and zero time are ops
  named only by allocator events.
* JAX: XProf's only device row is ``copy.1`` (it leaves out the kernels of XLA's
  command buffers); ours has those events under ``jit_stage/copy.1``: the same
  occurrences and time. Shares are not comparable there.
* Memory: per allocator the window's peak equals XProf's peak heap bytes (exact),
  the window's allocator events are XProf's timeline snapshots (their number,
  allocations and frees: exact while under XProf's 1000-snapshot sampling; at
  most 1000 above it).
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests import xspace_oracle as oracle
from tests.integration.cli.runner import invoke
from tests.integration.xspace_captures import JAX_CASES, REPO_ROOT, _root, jax_sample, tf_capture
from tfprof_lite.analysis.memory import memory_profile
from tfprof_lite.analysis.memory_window import window_memory
from tfprof_lite.analysis.op_stats import OpStats, op_stats
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.profiler import Profiler

#: Self-time shares agree within this (1 point).
SHARE_TOLERANCE = 0.01
#: Totals agree within this many microseconds a row.
TOTAL_TOLERANCE_US = 1.0


def window_capture() -> dict[str, Any]:
    """The capture of :mod:`tests.window_capture`, made once per test run."""
    pytest.importorskip("tensorflow")
    out = _root() / "window_capture"
    with open(_root() / "window_capture.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "capture.json").exists():
            out.mkdir(parents=True, exist_ok=True)
            env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), TF_CPP_MIN_LOG_LEVEL="2")
            done = subprocess.run(
                [sys.executable, str(REPO_ROOT / "tests" / "window_capture.py"), str(out)],
                env=env, capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr[-3000:]
    meta: dict[str, Any] = json.loads((out / "capture.json").read_text())
    return meta


def _model(path: str | Path) -> ProfileModel:
    return Profiler.load(str(path)).model


def _theirs(path: str | Path) -> list[oracle.FrameworkOpRow]:
    return oracle.framework_op_rows(oracle.xprof_tool(path, "framework_op_stats"))


def _shares(rows: list[oracle.FrameworkOpRow]) -> dict[tuple[str, str, str], float]:
    total: dict[str, float] = defaultdict(float)
    for r in rows:
        total[r.host_or_device] += r.self_us
    return {
        (r.host_or_device.lower(), r.op_type, r.op_name): r.self_us / total[r.host_or_device]
        for r in rows
        if total[r.host_or_device]
    }


def _ours(found: OpStats) -> dict[tuple[str, str, str], Any]:
    return {(r.side, r.op_type, r.name): r for r in found.ops}


def _compare(found: OpStats, rows: list[oracle.FrameworkOpRow], extra: Counter[str]) -> int:
    """Asserts the rows agree (``extra``: XProf's added occurrences per op name);
    returns how many rows were compared."""
    timed = [r for r in rows if r.op_type or r.total_us]
    ours, shares = _ours(found), _shares(timed)
    assert set(ours) == {(r.host_or_device.lower(), r.op_type, r.op_name) for r in timed}
    for row in timed:
        mine = ours[(row.host_or_device.lower(), row.op_type, row.op_name)]
        assert mine.count + extra[row.op_name] == row.count, row
        assert abs(mine.total_ns / 1000 - row.total_us) <= TOTAL_TOLERANCE_US, row
        assert abs(mine.self_ns / 1000 - row.self_us) <= TOTAL_TOLERANCE_US, row
        key = (mine.side, mine.op_type, mine.name)
        assert abs(mine.share - shares[key]) <= SHARE_TOLERANCE, row
    for row in rows:
        if not (row.op_type or row.total_us):  # named only by allocator events
            assert row.count == extra[row.op_name] and row.self_us == 0, row
    return len(timed)


def test_keras_fit_op_stats_equal_xprofs() -> None:
    capture = tf_capture("keras_fit")
    found = op_stats(_model(capture.xplane))
    assert found.source == "window"
    compared = _compare(found, _theirs(capture.xplane), Counter())
    assert compared >= 50 and {r.side for r in found.ops} == {"host"}
    assert "Dataset" in {t.op_type for t in found.types}


def test_window_capture_op_stats_equal_xprofs_less_allocations() -> None:
    meta = window_capture()
    model = _model(meta["xspace"])
    found = op_stats(model)
    memory = model.event_window.memory
    events = Counter(op for op in memory.op if op)
    assert _compare(found, _theirs(meta["xspace"]), events) >= 50
    outside = sum(r.outside for r in found.ops)
    assert outside > 0 and outside < sum(r.count for r in found.ops)


def test_window_capture_memory_peak_and_events_equal_xprofs() -> None:
    meta = window_capture()
    model = _model(meta["xspace"])
    found = window_memory(model)
    assert found is not None
    raw = oracle.xprof_tool(meta["xspace"], "memory_profile").json()["memoryProfilePerAllocator"]
    theirs = oracle.memory_profile(oracle.xprof_tool(meta["xspace"], "memory_profile"))
    assert {a.allocator for a in found.allocators} == set(theirs)
    for alloc in found.allocators:
        assert alloc.peak_bytes == theirs[alloc.allocator].peak_heap_bytes
        snapshots = raw[alloc.allocator]["sampledTimelineSnapshots"]
        kinds = Counter(s["activityMetadata"]["memoryActivity"] for s in snapshots)
        assert len(snapshots) < 1000  # (all kept: XProf samples above that)
        assert (alloc.allocations, alloc.frees) == (kinds["ALLOCATION"], kinds["DEALLOCATION"])
    top = found.allocators[0]
    # the peak is after the last step (the tensor made there): the steps do not see it
    assert top.peak_step is None and top.steps_peak_bytes < top.peak_bytes
    assert top.outside > 0
    steps_peak = max(a.max_in_use_bytes for s in memory_profile(model).steps for a in s.allocators)
    assert steps_peak == top.steps_peak_bytes
    mem = model.event_window.memory
    first_step = int(model.event_window.step_start_ns.min())
    before = [d for d, t, s in zip(mem.delta.tolist(), mem.time_ns.tolist(), mem.step.tolist())
              if s < 0 and t < first_step and d >= meta["before_bytes"]]  # fmt: skip
    assert before  # the big tensor made before the first step
    assert "whole window" in invoke("advise", meta["xspace"]).output
    text = invoke("memory", meta["xspace"]).output
    assert "whole window" in text and f"peak {_mb(top.peak_bytes)} in use" in text


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f}MB"


@pytest.mark.parametrize("case", JAX_CASES)
def test_jax_op_stats_hold_xprofs_device_row(case: str) -> None:
    capture = jax_sample(case)
    model = _model(capture.xplane)
    found = op_stats(model)
    rows = _theirs(capture.xplane)
    (device,) = [r for r in rows if r.host_or_device == "Device"]
    assert (device.op_type, device.op_name, device.count) == ("Unknown", "copy.1", 16)
    dev = model.event_window.device
    copies = [i for i, op in enumerate(dev.hlo_op) if op == device.op_name]
    assert len(copies) == device.count
    (mine,) = [r for r in found.ops if r.side == "device" and r.name.endswith("/copy.1")]
    assert mine.count == device.count
    assert abs(mine.total_ns / 1000 - device.total_us) <= TOTAL_TOLERANCE_US
    assert {t.op_type for t in found.types if t.side == "host"} == {"XlaModule"}
    assert found.self_ns["device"] == int(dev.dur_ns.sum())


@pytest.mark.parametrize("case", JAX_CASES)
def test_jax_window_memory_equals_xprofs(case: str) -> None:
    capture = jax_sample(case)
    found = window_memory(_model(capture.xplane))
    assert found is not None
    theirs = oracle.memory_profile(oracle.xprof_tool(capture.xplane, "memory_profile"))
    assert {a.allocator for a in found.allocators} == set(theirs)
    for alloc in found.allocators:
        assert alloc.peak_bytes == theirs[alloc.allocator].peak_heap_bytes
        events = alloc.allocations + alloc.frees
        assert min(events, 1000) == len(theirs[alloc.allocator].timeline)  # (XProf samples 1000)
