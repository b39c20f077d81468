"""Host lanes and GPU step times of written XSpace files, checked by XProf itself.

* A wide TF 2.21 graph (``tests/integration/wide_graph_capture.py``: 22k
  nodes, thousands of ops at once on the inter-op threads) traced with
  FULL_TRACE: XProf's host self time per op and per op type equals ours.
  XProf's ``framework_op_stats`` lists only the 500 host ops of largest self
  time, so op-type shares summed over its rows lean to the types of big ops
  (here Mul and Sum) whatever the file holds; the per-type check therefore
  reads a copy of the file whose host events are named by their op type
  (one row per type, every event counted; the lines and times untouched).
* Hand-made lanes (partial overlap, containment on one thread, identical
  intervals, zero durations): what XProf does with each layout, and that
  :func:`pack_lanes` never writes one it misreads.
* The TF 2.21-format GPU RunMetadata with host ops before the first kernel
  and after the last (no ``cuStreamSynchronize``): XProf's step times equal
  ours.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from tests import xspace_oracle as xo
from tests.gpu_tf221 import tf221_gpu_meta, tf221_graph
from tests.handmade import ns
from tests.integration.test_xspace_write_tf import _check_steps
from tfprof_lite.analysis.steptime import step_times
from tfprof_lite.formats.xspace.write.export import HOST_PLANE_ID
from tfprof_lite.formats.xspace.write.planes import PlaneBuilder, pack_lanes
from tfprof_lite.model.execs import KIND_CPU
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.profiler import Profiler
from tfprof_lite.proto import messages as pb

pytestmark = pytest.mark.tf

#: Op types whose share of host self time is compared (percentage points).
SHARE_POINTS = 1.0


def _rows(path: Path, where: str = "Host") -> list[xo.FrameworkOpRow]:
    """XProf's framework op rows of ``where``, from the table without IDLE."""
    tables = xo._tables(xo.xprof_tool(path, "framework_op_stats"))
    table = tables[-1]  # [with idle, without idle]
    out = []
    for row in xo.datatable_rows(table):
        if row["host_or_device"] == where and row["type"] != "IDLE":
            out.append(
                xo.FrameworkOpRow(
                    where, str(row["type"]), str(row["operation"]), int(row["occurrences"]),
                    float(row["total_time"]), float(row["total_self_time"]),
                    str(row.get("eager") or ""),
                )
            )  # fmt: skip
    return out


def _host_fraction(path: Path) -> dict[str, float]:
    """Op name -> XProf's share of the whole host self time (0..1), rows listed."""
    tables = xo._tables(xo.xprof_tool(path, "framework_op_stats"))
    return {
        str(r["operation"]): float(r["host_total_self_time_percent"])
        for r in xo.datatable_rows(tables[-1])
        if r["host_or_device"] == "Host"
    }


# ---------------------------------------------------------------- the wide graph


def _cpu_totals(model: ProfileModel, by_type: bool) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for step in model.sorted_steps():
        execs = model.steps[step]
        for nid, kind, dur in zip(execs.t_node, execs.t_kind, execs.t_dur):
            if kind == KIND_CPU:
                out[model.ops[nid] if by_type else model.names[nid]] += dur
    return dict(out)


def _by_type_copy(path: Path, out: Path) -> Path:
    """A copy of the XSpace at ``path`` whose host events ``name:type`` are renamed
    ``type:type`` (their lines and times untouched)."""
    space = pb.XSpace.FromString(path.read_bytes())
    host = next(p for p in space.planes if p.name == "/host:CPU")
    for meta in host.event_metadata.values():
        name, sep, op_type = meta.name.rpartition(":")
        if sep and name:
            meta.name = f"{op_type}:{op_type}"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(space.SerializeToString())
    return out


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> tuple[Profiler, Path]:
    xo.require_xprof()
    from tests.integration.wide_graph_capture import wide_capture

    graph_path, metas = wide_capture()
    prof = Profiler(pb.GraphDef.FromString(graph_path.read_bytes()))
    for step, meta in enumerate(metas):
        prof.add_step(step, pb.RunMetadata.FromString(meta.read_bytes()))
    (path,) = prof.write_xspace(tmp_path_factory.mktemp("wide"), run="r")
    return prof, Path(path)


def test_wide_graph_overlaps_on_many_lanes(wide: tuple[Profiler, Path]) -> None:
    prof, path = wide
    assert len(prof.model.names) >= 20_000
    host = next(p for p in pb.XSpace.FromString(path.read_bytes()).planes if p.id == HOST_PLANE_ID)
    op_lines = [ln for ln in host.lines if " #" in ln.name]
    assert len(op_lines) >= 2, "the inter-op threads ran no two ops at once"
    for line in op_lines:  # no two events of a lane overlap
        ends = [e.offset_ps + e.duration_ps for e in line.events]
        assert all(end <= nxt.offset_ps for end, nxt in zip(ends, line.events[1:]))


def test_wide_graph_listed_ops_self_time(wide: tuple[Profiler, Path]) -> None:
    prof, path = wide
    ours = _cpu_totals(prof.model, by_type=False)
    rows = _rows(path)
    assert len(rows) >= 400  # XProf lists at most 500 host ops
    for row in rows:
        assert row.self_us == pytest.approx(ours[row.op_name], rel=0.01, abs=0.5), row.op_name
        assert row.self_us == pytest.approx(row.total_us, abs=0.5), row.op_name  # none nested
    # the share of each listed op is of XProf's whole host time: ours
    total = sum(ours.values())
    for name, fraction in _host_fraction(path).items():
        if name in ours:
            assert fraction == pytest.approx(ours[name] / total, abs=1e-4), name


def test_wide_graph_op_type_shares(wide: tuple[Profiler, Path], tmp_path: Path) -> None:
    prof, path = wide
    ours = _cpu_totals(prof.model, by_type=True)
    by_type = _by_type_copy(path, tmp_path / "run" / path.name)
    theirs: dict[str, float] = defaultdict(float)
    for row in _rows(by_type):
        theirs[row.op_type] += row.self_us
    our_total, their_total = sum(ours.values()), sum(theirs.values())
    assert their_total == pytest.approx(our_total, rel=0.01)
    top = [t for t, micros in ours.items() if micros / our_total >= 0.01]
    assert {"Mul", "Tanh", "Const"} <= set(ours) and len(top) >= 4
    for op_type in top:
        share, their_share = 100 * ours[op_type] / our_total, 100 * theirs[op_type] / their_total
        assert their_share == pytest.approx(share, abs=SHARE_POINTS), op_type


# ---------------------------------------------------------------- hand-made lanes


def _hand_space(tmp_path: Path, lines: dict[str, list[tuple[str, int, int]]]) -> Path:
    """An XSpace whose host plane holds ``lines`` (name -> (op, start us, dur us))."""
    plane = PlaneBuilder(HOST_PLANE_ID, "/host:CPU", 0)
    for i, (line_name, events) in enumerate(lines.items()):
        line = plane.line(100 + i, line_name)
        for op, start, dur in events:
            plane.add(line, op, start, dur, {})
    env = PlaneBuilder(0, "Task Environment", 0)
    env.plane.stats.add(metadata_id=env.stat_id("profile_start_time"), uint64_value=1)
    end = max(s + d for evs in lines.values() for _, s, d in evs)
    env.plane.stats.add(metadata_id=env.stat_id("profile_stop_time"), uint64_value=end * 1000)
    space = pb.XSpace(hostnames=["localhost"])
    space.planes.extend([plane.finish(), env.finish()])
    path = tmp_path / "run" / "localhost.xplane.pb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(space.SerializeToString())
    return path


def _self_times(path: Path) -> dict[str, float]:
    return {row.op_name: row.self_us for row in _rows(path)}


def _packed(
    tmp_path: Path, records: list[tuple[str, int, int]], threads: list[int] | None
) -> tuple[Path, list[tuple[int, int]]]:
    lanes = pack_lanes([r[1] for r in records], [r[2] for r in records], threads)
    lines: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    for record, (thread, lane) in zip(records, lanes):
        lines[f"t{thread} #{lane}"].append(record)
    return _hand_space(tmp_path, dict(lines)), lanes


@pytest.fixture(autouse=False)
def need_xprof() -> None:
    xo.require_xprof()


def test_xprof_drops_an_event_that_partly_overlaps_on_its_line(
    need_xprof: None, tmp_path: Path
) -> None:
    records = [("a:Mul", 100, 10), ("b:Tanh", 105, 10)]
    seen = _self_times(_hand_space(tmp_path / "one", {"ops": records}))
    assert seen == {"a": pytest.approx(10)}  # b is dropped altogether
    path, lanes = _packed(tmp_path / "packed", records, None)
    assert [lane for _, lane in lanes] == [0, 1]
    assert sorted(_self_times(path).values()) == [10.0, 10.0]


def test_xprof_loses_an_inner_event_that_ends_with_its_parent(
    need_xprof: None, tmp_path: Path
) -> None:
    records = [("a:Mul", 100, 10), ("b:Tanh", 104, 6)]
    seen = _self_times(_hand_space(tmp_path / "one", {"ops": records}))
    assert len(seen) == 1  # b is gone, a keeps all 10 us
    path, lanes = _packed(tmp_path / "packed", records, [7, 7])
    assert lanes == [(7, 0), (7, 1)]  # not nested: it does not end strictly inside
    assert sorted(_self_times(path).values()) == [6.0, 10.0]


def test_containment_nests_only_on_one_thread(need_xprof: None, tmp_path: Path) -> None:
    records = [("a:Mul", 100, 10), ("b:Tanh", 102, 3), ("c:Const", 106, 0)]
    path, lanes = _packed(tmp_path / "same", records, [7, 7, 7])
    assert lanes == [(7, 0), (7, 0), (7, 0)]
    same = _self_times(path)
    assert same["a"] == pytest.approx(7) and same["b"] == pytest.approx(3)
    path, lanes = _packed(tmp_path / "other", records, [7, 8, 8])
    assert lanes == [(7, 0), (8, 0), (8, 0)]
    other = _self_times(path)
    assert other["a"] == pytest.approx(10) and other["b"] == pytest.approx(3)
    path, lanes = _packed(tmp_path / "none", records, None)
    assert [lane for _, lane in lanes] == [0, 1, 1]
    assert _self_times(path)["a"] == pytest.approx(10)


def test_identical_intervals_and_zero_durations(need_xprof: None, tmp_path: Path) -> None:
    records = [
        ("a:Mul", 100, 10),
        ("b:Mul", 100, 10),
        ("z1:Const", 105, 0),
        ("z2:Const", 105, 0),
        ("z3:Const", 110, 0),
        ("c:Tanh", 110, 4),
    ]
    for threads in (None, [7] * len(records)):
        path, lanes = _packed(tmp_path / str(bool(threads)), records, threads)
        assert lanes[0] != lanes[1]
        seen = _self_times(path)
        assert seen["a"] == pytest.approx(10) and seen["b"] == pytest.approx(10)
        assert seen["c"] == pytest.approx(4)
        assert sum(seen.values()) == pytest.approx(24)


# ---------------------------------------------------------------- GPU step times


def _gpu_host_outside(tmp_path: Path) -> tuple[Profiler, Path]:
    """Three TF 2.21-format GPU steps whose host ops start 60 us before the first
    kernel and end 80 us after the last, without a cuStreamSynchronize."""
    prof = Profiler(tf221_graph())
    for step in range(3):
        meta = tf221_gpu_meta(step)
        base = 1_000_000 + 1000 * step
        for dev in meta.step_stats.dev_stats:
            if dev.device.endswith("/sync"):
                del dev.node_stats[:]
            elif dev.device.endswith("device:GPU:0"):
                dev.node_stats.extend([ns("x", base - 60, 5), ns("out/Relu", base + 250, 8)])
        prof.add_step(step, meta)
    (path,) = prof.write_xspace(tmp_path, run="r")
    return prof, Path(path)


def test_gpu_step_times_with_host_ops_outside_the_kernels(tmp_path: Path) -> None:
    xo.require_xprof()
    prof, path = _gpu_host_outside(tmp_path)
    ours = {s.step: s.wall_micros for s in step_times(prof.model).steps}
    assert ours == {0: 318, 1: 318, 2: 318}  # 60 + 178 (kernels) + 80
    _check_steps(prof.model, path)


def test_gpu_steps_keep_their_device_events(tmp_path: Path) -> None:
    """The step bounds are zero-length: XProf's device op times stay the kernels'."""
    xo.require_xprof()
    prof, path = _gpu_host_outside(tmp_path)
    device = _rows(path, "Device")
    assert device, "XProf found no device ops"
    assert not any(r.op_name.startswith("Step ") and r.self_us > 0 for r in device)
    kernels = {r.kernel for r in xo.kernel_rows(xo.xprof_tool(path, "kernel_stats"))}
    assert not any(name.startswith("Step ") for name in kernels)
    # tfprof_lite's reader skips the bounds' line (named like XProf's derived one)
    back = Profiler.load(str(path)).model
    assert not any(n.startswith("Step ") for s in back.steps.values() for n in s.kernels.name)
    walls = {s.step: s.wall_micros for s in step_times(back).steps}
    assert sorted(walls.values()) == sorted(s.wall_micros for s in step_times(prof.model).steps)
