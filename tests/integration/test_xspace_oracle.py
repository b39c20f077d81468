"""The XProf harness (tests/xspace_oracle.py) and its parsers on XProf's real outputs.

The conversions run on a copy, so nothing is written beside the input; a file
XProf cannot read is a clear error; the parsers' rows are consistent with
themselves and with the files (read by TensorFlow's ``xplane_pb2``); without
XProf the tests skip with a note, and fail under ``CI=true``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import xspace_oracle as oracle
from tests.integration import xplane_tf
from tests.integration.xspace_captures import JAX_CASES, jax_sample, tf_capture

pytestmark = pytest.mark.tf


@pytest.fixture
def xprof() -> str:
    """The XProf interpreter (skip, or fail under CI=true, before any capture is made)."""
    return oracle.require_xprof()


def test_conversion_writes_nothing_beside_the_input(xprof: str, tmp_path: Path) -> None:
    """XProf caches ``*.op_stats_v2.pb`` beside what it converts: the harness gives it a copy."""
    source = tf_capture("session_plain").xplane
    local = tmp_path / "run" / source.name
    local.parent.mkdir()
    local.write_bytes(source.read_bytes())
    output = oracle.xprof_tool(local, "framework_op_stats", {"tag": "fresh"})
    assert output.content_type == "application/json" and output.seconds[0] > 0
    assert sorted(p.name for p in local.parent.iterdir()) == [source.name]


def test_results_are_cached_per_file_tool_and_params(xprof: str) -> None:
    path = tf_capture("session_plain").xplane
    first = oracle.xprof_tool(path, "overview_page")
    assert oracle.xprof_tool(path, "overview_page") is first
    assert oracle.xprof_tool(path, "overview_page", {"tag": "other"}) is not first


def test_a_file_xprof_cannot_read_is_an_error(xprof: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.xplane.pb"
    bad.write_bytes(b"\x0a\xff\xff\xff\xff\x0f not an XSpace")
    with pytest.raises(oracle.XprofError, match="bad.xplane.pb"):
        oracle.xprof_tool(bad, "overview_page")


def test_time_tool_repeats_in_one_child(xprof: str) -> None:
    timed = oracle.time_tool(tf_capture("session_plain").xplane, "overview_page", repeat=3)
    assert len(timed.seconds) == len(timed.cpu_seconds) == 3
    assert all(s > 0 for s in timed.seconds + timed.cpu_seconds)


def test_missing_xprof_skips_or_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """An interpreter without XProf: a skip naming the install, a failure under CI=true."""
    monkeypatch.setenv(oracle.PYTHON_ENV, "/nonexistent/python")
    oracle.xprof_python.cache_clear()
    try:
        monkeypatch.setenv("CI", "false")
        with pytest.raises(pytest.skip.Exception, match="pip install -e"):
            oracle.require_xprof()
        monkeypatch.setenv("CI", "true")
        with pytest.raises(pytest.fail.Exception, match="required when CI=true"):
            oracle.require_xprof()
    finally:
        oracle.xprof_python.cache_clear()


@pytest.mark.parametrize("case", JAX_CASES)
def test_kernel_rows_are_consistent(xprof: str, case: str) -> None:
    """avg = total / count, min <= avg <= max, launch configurations ``x,y,z``; every
    kernel name of the file appears."""
    capture = jax_sample(case)
    rows = oracle.kernel_rows(oracle.xprof_tool(capture.xplane, "kernel_stats"))
    for row in rows:
        assert row.avg_us == pytest.approx(row.total_us / row.count, abs=0.001)
        assert row.min_us <= row.avg_us + 0.001 and row.avg_us <= row.max_us + 0.001
        assert all(len(dim.split(",")) == 3 for dim in (row.grid, row.block))
        assert 0 < row.occupancy_pct <= 100
    assert {r.kernel for r in rows} == {key[0] for key in xplane_tf.kernel_groups(capture.xplane)}


def test_framework_op_self_time_within_total(xprof: str) -> None:
    capture = tf_capture("keras_fit")
    rows = oracle.framework_op_rows(
        oracle.xprof_tool(capture.xplane, "framework_op_stats"), include_idle=True
    )
    assert any(r.op_type == "IDLE" for r in rows)
    for row in rows:
        assert 0 <= row.self_us <= row.total_us + 0.001


@pytest.mark.parametrize("case", JAX_CASES)
def test_memory_timeline_sorted_within_capacity(xprof: str, case: str) -> None:
    capture = jax_sample(case)
    profile = oracle.memory_profile(oracle.xprof_tool(capture.xplane, "memory_profile"))
    for allocator in profile.values():
        times = [t for t, _ in allocator.timeline]
        assert times == sorted(times) and times
        assert (
            allocator.peak_heap_bytes <= allocator.peak_bytes_lifetime <= allocator.capacity_bytes
        )


def test_trace_events_resolve_processes_and_threads(xprof: str) -> None:
    """Host threads of the trace are the file's ``/host:CPU`` lines."""
    capture = tf_capture("session_markers")
    trace = oracle.trace_events(oracle.xprof_tool(capture.xplane, "trace_viewer"))
    threads = {e.thread for e in trace if e.process == "/host:CPU"}
    lines = {e.line for e in xplane_tf.events(capture.xplane, "/host:CPU")}
    assert threads == lines
    assert all(e.dur_us >= 0 and e.phase == "X" for e in trace)
