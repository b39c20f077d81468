"""The XSpace writer on hand-made profiles, without XProf: layout and invariants.

(XProf's own reading of the written files is in
``tests/integration/test_xspace_write_tf.py``.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.gpu_tf221 import KERNELS, tf221_gpu_meta, tf221_graph
from tfprof_lite.analysis.kernel_launch import parse_details
from tfprof_lite.analysis.xspace_export import build_xspace, host_name, xspace_files
from tfprof_lite.analysis.xspace_gpu import details_text
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.profiler import Profiler
from tfprof_lite.proto import messages as pb


def _gpu() -> Profiler:
    prof = Profiler(tf221_graph())
    for step in range(2):
        prof.add_step(step, tf221_gpu_meta(step))
    return prof


def _space(prof: Profiler) -> Any:
    return pb.XSpace.FromString(build_xspace(prof.model))


def _stats(plane: Any, holder: Any) -> dict[str, Any]:
    names = {m.id: m.name for m in plane.stat_metadata.values()}
    out = {}
    for stat in holder.stats:
        out[names[stat.metadata_id]] = getattr(stat, stat.WhichOneof("value"))
    return out


def test_planes_and_task_environment() -> None:
    space = _space(_gpu())
    planes = {p.name: p for p in space.planes}
    assert set(planes) == {"/host:CPU", "/device:GPU:0", "Task Environment"}
    assert planes["/device:GPU:0"].id == 0
    env = _stats(planes["Task Environment"], planes["Task Environment"])
    assert env["profile_stop_time"] - env["profile_start_time"] == 1000 * (1000 + 207)
    assert list(space.hostnames) == ["localhost"]
    for plane in space.planes:
        assert "group_id" not in {m.name for m in plane.stat_metadata.values()}
        for line in plane.lines:
            assert line.timestamp_ns == 0


def test_lines_are_sorted_and_op_lanes_never_overlap() -> None:
    host = next(p for p in _space(_gpu()).planes if p.name == "/host:CPU")
    for line in host.lines:
        starts = [e.offset_ps for e in line.events]
        assert starts == sorted(starts)
        if " #" in line.name:
            for a, b in zip(line.events, line.events[1:]):
                assert a.offset_ps + a.duration_ps <= b.offset_ps


def test_steps_and_launches() -> None:
    host = next(p for p in _space(_gpu()).planes if p.name == "/host:CPU")
    names = {m.id: m.name for m in host.event_metadata.values()}
    line = next(ln for ln in host.lines if ln.name == "Step markers")
    roots = [e for e in line.events if names[e.metadata_id] == "train"]
    assert [_stats(host, e)["step_num"] for e in roots] == [0, 1]
    assert all(_stats(host, e)["_r"] == 1 for e in roots)
    launches = [e for e in line.events if names[e.metadata_id] != "train"]
    # 9 kernels, 1 copy (the per-stream record) and 1 sync per step
    assert len(launches) == 2 * (len(KERNELS) + 2)
    for launch in launches:
        root = [r for r in roots if r.offset_ps <= launch.offset_ps][-1]
        assert launch.offset_ps + launch.duration_ps <= root.offset_ps + root.duration_ps


def test_kernel_events_carry_details_and_their_op() -> None:
    gpu = next(p for p in _space(_gpu()).planes if p.name == "/device:GPU:0")
    names = {m.id: m.name for m in gpu.event_metadata.values()}
    stream14 = next(ln for ln in gpu.lines if ln.name == "Stream #14")
    first = _stats(gpu, stream14.events[0])
    assert names[stream14.events[0].metadata_id] == KERNELS[0].kernel
    assert first["kernel_details"] == KERNELS[0].details
    assert first["tf_op"] == "dense/MatMul:MatMul"
    ids = [_stats(gpu, e)["correlation_id"] for ln in gpu.lines for e in ln.events]
    assert len(ids) == len(set(ids))


def test_details_text_round_trips() -> None:
    for launch in KERNELS:
        assert details_text(parse_details(launch.details)) == launch.details


def test_profile_without_steps_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="no timed op executions"):
        build_xspace(Profiler(tf221_graph()).model)


def test_saved_profile_writes_accelerator_time_per_op(tmp_path: Path) -> None:
    saved = tmp_path / "profile_1"
    saved.write_bytes(_gpu().serialize_to_string())
    loaded = Profiler.load(str(saved))
    gpu = next(p for p in _space(loaded).planes if p.name == "/device:GPU:0")
    (line,) = gpu.lines
    assert line.name == "stream:all" and len(line.events) > 0
    assert all("tf_op" in _stats(gpu, e) for e in line.events)


def test_cluster_task_names() -> None:
    assert host_name("/job:worker/replica:0/task:1") == "worker-0-1"
    files = xspace_files(_gpu().model, ["/job:localhost/replica:0/task:0"])
    assert list(files) == ["localhost-0-0.xplane.pb"]
