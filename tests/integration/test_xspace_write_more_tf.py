"""XSpace writing from the other entry points, checked by XProf: an input-bound
``tf.data`` session, ``ProfileContext(xspace_logdir=...)``, the ``tfprof-lite
xspace`` command, and a real between-graph cluster (one file per task)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest

import tfprof_lite
from tests import xspace_oracle as xo
from tests.integration.test_analysis import input_bound_profile
from tests.integration.test_cluster_tf import W0, W1, between_graph, merged
from tests.integration.test_xspace_write_tf import (
    _check_op_types,
    _check_steps,
    _executions,
    _xprof_op,
)
from tfprof_lite.analysis.steptime import step_times
from tfprof_lite.cli import main
from tfprof_lite.formats.xspace.write.export import host_name
from tfprof_lite.model.cluster import split_qualified, task_of
from tfprof_lite.model.execs import KIND_CPU

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1

__all__ = ["between_graph", "merged"]  # the cluster fixtures, shared


def test_input_bound_pipeline(tmp_path: Path) -> None:
    xo.require_xprof()
    prof = input_bound_profile()
    (path,) = prof.write_xspace(tmp_path, run="r")
    _check_steps(prof.model, Path(path))
    _check_op_types(prof.model, Path(path), "Host", KIND_CPU)
    found = xo.overview(xo.xprof_tool(path, "overview_page"))
    # every step waits about 30 ms for its element: XProf sees it too
    assert all(s.micros > 25_000 for s in found.steps)


def _small_session_steps(profile_dir: Path, logdir: Path) -> tfprof_lite.ProfileContext:
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.get_variable("x", [32, 32])
        out = tf.reduce_sum(tf.tanh(tf.matmul(x, x)), name="out")
        init = tf1.global_variables_initializer()
    with tf1.Session(graph=graph) as sess:
        sess.run(init)
        with tfprof_lite.ProfileContext(
            profile_dir, trace_steps=range(1, 4), dump_steps=[3], xspace_logdir=logdir
        ) as ctx:
            for _ in range(4):
                sess.run(out)
    return ctx


def test_profile_context_writes_xspace_at_dumps(tmp_path: Path) -> None:
    xo.require_xprof()
    ctx = _small_session_steps(tmp_path / "prof", tmp_path / "logs")
    files = list((tmp_path / "logs" / "plugins" / "profile").glob("*_step_3/localhost.xplane.pb"))
    assert len(files) == 1
    assert ctx.profiler is not None
    _check_steps(ctx.profiler.model, files[0])
    back = tfprof_lite.Profiler.load(str(tmp_path / "logs")).model
    assert sorted(back.steps) == [1, 2, 3]


def test_cli_writes_xspace_from_a_saved_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    xo.require_xprof()
    ctx = _small_session_steps(tmp_path / "prof", tmp_path / "unused")
    assert ctx.profiler is not None
    logdir = tmp_path / "cli"
    code = main(
        ["xspace", str(tmp_path / "prof" / "profile_3"), "-o", str(logdir), "--run-name", "r"]
    )
    assert code == 0
    out = capsys.readouterr().out
    path = logdir / "plugins" / "profile" / "r" / "localhost.xplane.pb"
    assert str(path) in out and f"xprof --logdir {logdir}" in out
    loaded = tfprof_lite.Profiler.load(str(tmp_path / "prof" / "profile_3"))
    _check_steps(loaded.model, path)
    # every execution is in the trace viewer
    seen: dict[str, int] = defaultdict(int)
    for event in xo.trace_events(xo.xprof_tool(path, "trace_viewer")):
        if event.process == "/host:CPU" and event.thread not in ("Step markers", "Memory"):
            seen[event.name] += 1
    assert dict(seen) == _executions(loaded.model)


def test_cli_refuses_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.pb"
    empty.write_bytes(b"\xff\xff\xff")
    assert main(["xspace", str(empty), "-o", str(tmp_path / "out")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    assert main(["xspace", str(empty)]) == 2  # -o is required
    assert not (tmp_path / "out").exists()


def _task_totals(
    prof: tfprof_lite.Profiler, task: str, keep: Callable[[str], bool] = _xprof_op
) -> dict[str, int]:
    model = prof.model
    out: dict[str, int] = defaultdict(int)
    for step in model.sorted_steps():
        execs = model.steps[step]
        for nid, kind, dev, dur in zip(execs.t_node, execs.t_kind, execs.t_dev, execs.t_dur):
            name = split_qualified(model.names[nid])[1]
            own = model.ops[nid] == name and ("/" in name or name.startswith("_"))
            if kind == KIND_CPU and task_of(dev) == task and (not own or keep(name)):
                out[model.ops[nid]] += dur
    return dict(out)


def test_cluster_profile_one_file_per_task(merged: tfprof_lite.Profiler, tmp_path: Path) -> None:
    xo.require_xprof()
    paths = merged.write_xspace(tmp_path, run="r")
    cluster = merged.cluster  # type: ignore[attr-defined]
    assert sorted(Path(p).name for p in paths) == sorted(
        f"{host_name(t)}.xplane.pb" for t in cluster.tasks
    )
    ours = {s.step: s.wall_micros for s in step_times(merged.model).steps}
    for task in (W0, W1):
        path = tmp_path / "plugins" / "profile" / "r" / f"{host_name(task)}.xplane.pb"
        found = xo.overview(xo.xprof_tool(path, "overview_page"))
        theirs = {int(s.name.split()[-1]): s.micros for s in found.steps}
        assert set(theirs) == set(ours)
        for step, micros in ours.items():
            assert theirs[step] == pytest.approx(micros, rel=0.01)
        rows = xo.framework_op_rows(xo.xprof_tool(path, "framework_op_stats"))
        per_type: dict[str, float] = defaultdict(float)
        expected = _task_totals(merged, task)
        own = set(_task_totals(merged, task, lambda _: True)) - set(expected)
        for row in rows:
            if row.op_type not in own:
                per_type[row.op_type] += row.self_us
        assert set(per_type) == {t for t, micros in expected.items() if micros}
        for op_type, micros in expected.items():
            assert per_type[op_type] == pytest.approx(micros, rel=0.01, abs=0.5)


def test_profiler_hook_writes_xspace_at_dumps(tmp_path: Path) -> None:
    xo.require_xprof()
    graph = tf.Graph()
    with graph.as_default():
        step = tf1.train.get_or_create_global_step()
        x = tf1.get_variable("x", [16, 16])
        train = tf1.train.GradientDescentOptimizer(0.1).minimize(
            tf.reduce_sum(tf.matmul(x, x)), global_step=step
        )
        hook = tfprof_lite.ProfilerHook(
            tmp_path / "prof",
            trace_steps=[2, 3],
            dump_steps=[3],
            task="/job:worker/task:1",
            xspace_logdir=tmp_path / "logs",
        )
        with tf1.train.MonitoredSession(hooks=[hook]) as sess:
            for _ in range(4):
                sess.run(train)
    files = list((tmp_path / "logs" / "plugins" / "profile").glob("*_step_3/*.xplane.pb"))
    assert [f.name for f in files] == ["worker-0-1.xplane.pb"]
    assert hook.profiler is not None
    _check_steps(hook.profiler.model, files[0])
