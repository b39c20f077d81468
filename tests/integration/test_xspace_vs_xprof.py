"""tfprof-lite against XProf 2.24.2 (the oracle, ``tests/xspace_oracle.py``) on the
same XSpace files: step times where XProf finds steps, the loop's own times
where it does not, and GPU kernel rows.

XProf runs in a child interpreter on a copy of each file; without it these
tests are skipped with a note (a failure under ``CI=true``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import pytest

from tests import xspace_oracle as oracle
from tests.integration.xspace_captures import JAX_CASES, XCapture, xspace_case
from tfprof_lite.cli import main

pytestmark = pytest.mark.tf


def _ours(capsys: pytest.CaptureFixture[str], *args: Any) -> Any:
    capsys.readouterr()
    assert main([str(a) for a in args]) == 0
    return json.loads(capsys.readouterr().out)


def _walls(capsys: pytest.CaptureFixture[str], capture: XCapture) -> dict[int, int]:
    data = _ours(capsys, "overview", "--json", capture.xplane)
    return {s["step"]: s["wall_micros"] for s in data["step_time"]["steps"]}


@pytest.mark.parametrize("case", ["session_markers", "input_bound"])
def test_step_times_equal_xprofs_where_it_finds_steps(
    capsys: pytest.CaptureFixture[str], case: str
) -> None:
    capture = xspace_case(case)
    oracle.require_xprof()
    found = oracle.overview(oracle.xprof_tool(capture.xplane, "overview_page"))
    assert found.steps, found.diagnostics
    ours = _walls(capsys, capture)
    assert sorted(ours) == [s.step for s in capture.traced_steps]
    for step in found.steps:
        number = int(step.name.split()[1])  # "train 3"
        assert ours[number] == pytest.approx(step.micros, rel=0.01), step.name


def test_keras_batches_xprof_misses_are_the_callbacks_batches(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """XProf finds no step in Keras fit; ours are its profiled batches, timed as the
    batch callbacks timed them (the markers enclose the callbacks' timers)."""
    capture = xspace_case("keras_fit")
    ours = _walls(capsys, capture)
    host = {s.step: s.wall_s * 1e6 for s in capture.traced_steps}
    assert sorted(ours) == sorted(host)
    for step, loop in host.items():
        assert ours[step] == pytest.approx(loop, rel=0.01, abs=50), (ours, host)


def test_session_runs_xprof_misses_are_the_loops_steps() -> None:
    """XProf finds no step in an unmarked Session loop; ours are its SessionRun calls,
    each inside the time the loop measured around ``sess.run``."""
    from tfprof_lite.profiler import Profiler

    capture = xspace_case("session_plain")
    model = Profiler.load(capture.xplane).model
    assert model.steps_source.startswith("inferred: 8 SessionRun calls, one per step (")
    traced = capture.traced_steps
    assert model.sorted_steps() == list(range(len(traced)))
    for step, loop in zip(model.sorted_steps(), traced):
        span = model.steps[step].wall_span()
        assert span is not None
        start, end = span
        assert loop.start_ns // 1000 - 1000 <= start <= end <= loop.end_ns // 1000 + 1000


@pytest.mark.parametrize("case", JAX_CASES)
def test_jax_steps_all_eight_and_closer_to_the_loop_than_xprof(
    capsys: pytest.CaptureFixture[str], case: str
) -> None:
    capture = xspace_case(case)
    oracle.require_xprof()
    found = oracle.overview(oracle.xprof_tool(capture.xplane, "overview_page"))
    ours = _walls(capsys, capture)
    traced = [s.step for s in capture.traced_steps]
    assert sorted(ours) == traced and len(found.steps) == len(traced) - 2
    host = {s.step: s.wall_s * 1e6 for s in capture.steps}
    for step, theirs in zip(traced[1:-1], found.steps):
        assert ours[step] == pytest.approx(host[step], rel=0.01)
        assert abs(ours[step] - host[step]) <= abs(theirs.micros - host[step])


@pytest.mark.parametrize("case", JAX_CASES)
def test_jax_kernel_rows_equal_xprofs(capsys: pytest.CaptureFixture[str], case: str) -> None:
    """Same kernels, launch configurations, counts and total times. Our rows are also
    split by the layer that launched them (XProf's op is XlaModule on every row)."""
    capture = xspace_case(case)
    oracle.require_xprof()
    theirs = oracle.kernel_rows(oracle.xprof_tool(capture.xplane, "kernel_stats"))
    ours: dict[tuple[Any, ...], list[float]] = defaultdict(lambda: [0, 0.0])
    for row in _ours(capsys, "kernels", "--json", capture.xplane)["kernels"]:
        if row["kind"] != "kernel":
            continue
        shared = row["static_shared_bytes"] + row["dynamic_shared_bytes"]
        key = (row["kernel"], row["grid"], row["block"], row["registers_per_thread"], shared)
        ours[key][0] += row["count"]
        ours[key][1] += row["total_micros"]
    expected = {
        (r.kernel, r.grid, r.block, r.registers_per_thread, r.shared_mem_bytes): (
            r.count,
            r.total_us,
        )
        for r in theirs
    }
    assert set(ours) == set(expected)
    for key, (count, total) in expected.items():
        assert ours[key][0] == count, key
        assert ours[key][1] == pytest.approx(total, abs=0.002 * count), key


@pytest.mark.parametrize("case", ["session_markers", "session_plain", "keras_fit"])
def test_tf_op_type_times_equal_xprofs(case: str) -> None:
    """Per TF op type on the host: XProf's framework_op_stats count and self time.

    Our records hold whole microseconds (as a RunMetadata does), so each execution
    may differ by under 1 us; beyond that the times agree within 1%. XProf's
    ``Dataset`` rows are tf.data iterator events, which are no graph ops here.
    (Not the input-bound capture: its tf.data ops run across step boundaries,
    where ours are cut and XProf counts them whole.)
    """
    from tfprof_lite.profiler import Profiler

    capture = xspace_case(case)
    oracle.require_xprof()
    rows = oracle.framework_op_rows(oracle.xprof_tool(capture.xplane, "framework_op_stats"))
    theirs: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for row in rows:
        if row.host_or_device == "Host" and row.op_type not in ("Dataset", "IDLE"):
            theirs[row.op_type][0] += row.count
            theirs[row.op_type][1] += row.self_us
    model = Profiler.load(capture.xplane).model
    ours: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for step in model.sorted_steps():
        stats = model.stats(step)
        for node in stats.cpu_exec_micros.nonzero()[0].tolist():
            ours[model.ops[node]][0] += int(stats.run_count[node])
            ours[model.ops[node]][1] += int(stats.cpu_exec_micros[node])
    assert theirs and set(ours) == set(theirs)
    for op_type, (count, micros) in theirs.items():
        assert ours[op_type][0] == count, op_type
        assert abs(ours[op_type][1] - micros) <= max(0.01 * micros, count + 1), op_type
