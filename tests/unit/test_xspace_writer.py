"""The XSpace writer on hand-made profiles, without XProf: layout and invariants.

(XProf's own reading of the written files is in
``tests/integration/test_xspace_write_tf.py``.)
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from tests.gpu_tf221 import KERNELS, tf221_gpu_meta, tf221_graph
from tfprof_lite.analysis.kernel_launch import parse_details
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.formats.xspace.write.export import build_xspace, host_name, xspace_files
from tfprof_lite.formats.xspace.write.gpu import STEP_BOUNDS_LINE, details_text
from tfprof_lite.formats.xspace.write.planes import pack_lanes
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
    # the profile starts 1 us before its first record (XProf ignores a zero-length
    # event at time 0)
    assert env["profile_stop_time"] - env["profile_start_time"] == 1000 * (1 + 1000 + 207)
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
    # 9 kernels, 1 copy (the per-stream record), 1 sync and 2 step bounds per step
    assert len(launches) == 2 * (len(KERNELS) + 2 + 2)
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
    (line,) = [ln for ln in gpu.lines if ln.name != STEP_BOUNDS_LINE]
    assert line.name == "stream:all" and len(line.events) > 0
    assert all("tf_op" in _stats(gpu, e) for e in line.events)


def test_cluster_task_names() -> None:
    assert host_name("/job:worker/replica:0/task:1") == "worker-0-1"
    files = xspace_files(_gpu().model, ["/job:localhost/replica:0/task:0"])
    assert list(files) == ["localhost-0-0.xplane.pb"]


def _check_lane(events: list[tuple[int, int]], nesting: bool) -> None:
    """XProf's reading of one line: ends close before a begin at the same time,
    an event opens inside the innermost open one only if it ends strictly before it."""
    stack: list[int] = []
    for start, end in sorted(events, key=lambda e: (e[0], -e[1])):
        while stack and stack[-1] <= start:
            stack.pop()
        if stack:
            assert nesting and end < stack[-1], (start, end, stack)
        stack.append(end)


@pytest.mark.parametrize("threaded", [False, True])
def test_packed_lanes_nest_only_within_one_thread(threaded: bool) -> None:
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(1, 40)
        starts = [rng.randint(0, 60) for _ in range(n)]
        durs = [rng.choice([0, rng.randint(1, 25), rng.randint(1, 5)]) for _ in range(n)]
        threads = [rng.choice([3, 4, 9]) for _ in range(n)] if threaded else None
        lanes = pack_lanes(starts, durs, threads)
        by_lane: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for i, key in enumerate(lanes):
            assert key[0] == (threads[i] if threads else 0)
            by_lane.setdefault(key, []).append((starts[i], starts[i] + durs[i]))
        for events in by_lane.values():
            _check_lane(events, nesting=threaded)
        if not threaded and all(durs):  # greedy partitioning uses the fewest lanes
            depth = max(sum(s <= t < s + d for s, d in zip(starts, durs)) for t in starts)
            assert len(by_lane) == depth


def test_pack_lanes_edge_cases() -> None:
    # partial overlap: two lanes, on one thread too
    assert pack_lanes([0, 5], [10, 10]) == [(0, 0), (0, 1)]
    assert pack_lanes([0, 5], [10, 10], [7, 7]) == [(7, 0), (7, 1)]
    # full containment: nested on one thread only, never without thread ids
    assert pack_lanes([0, 2], [10, 3], [7, 7]) == [(7, 0), (7, 0)]
    assert pack_lanes([0, 2], [10, 3], [7, 8]) == [(7, 0), (8, 0)]
    assert pack_lanes([0, 2], [10, 3]) == [(0, 0), (0, 1)]
    # identical intervals, and an inner one ending with its parent: never nested
    assert pack_lanes([0, 0], [10, 10], [7, 7]) == [(7, 0), (7, 1)]
    assert pack_lanes([0, 4], [10, 6], [7, 7]) == [(7, 0), (7, 1)]
    # zero durations: at a neighbour's end or start they share its lane
    assert pack_lanes([0, 10, 10, 10], [10, 0, 0, 4]) == [(0, 0), (0, 1), (0, 1), (0, 0)]
    # abutting intervals share a lane; thread 0 means unknown
    assert pack_lanes([0, 10], [10, 5], [0, 0]) == [(0, 0), (0, 0)]
