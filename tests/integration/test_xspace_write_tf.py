"""Written XSpace files checked by XProf itself (``tests/xspace_oracle.py``).

Profiles made by TF 2.21 sessions with FULL_TRACE (one CPU, two CPUs, a
``tf.data`` pipeline) and a hand-made RunMetadata in TF 2.21's GPU format (with
allocator records) are written with :meth:`Profiler.write_xspace`; XProf's
converters then must find every step with our step times (1%), our per-op-type
self times (1%), every op execution in the trace viewer, every kernel with its
launch configuration, and our memory peak. Reading the file back gives the
source's per-op totals. XProf is required under ``CI=true`` (skipped elsewhere
without it).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

import pytest

from tests import xspace_oracle as xo
from tests.gpu_tf221 import KERNELS, tf221_gpu_meta, tf221_graph
from tests.handmade import GPU, Mem, ns
from tfprof_lite.analysis.kernels import kernel_stats
from tfprof_lite.analysis.memory import memory_profile
from tfprof_lite.analysis.steptime import step_times
from tfprof_lite.formats.xspace.write.gpu import STEP_BOUNDS_LINE
from tfprof_lite.model.execs import KIND_ACCELERATOR, KIND_CPU
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.profiler import Profiler
from tfprof_lite.proto import messages as pb

pytestmark = pytest.mark.tf
tf_models = pytest.importorskip("tests.integration.tf_models", reason="needs TensorFlow")

CASES = ("dense_net", "two_cpus", "data_pipeline")


def _profiler(name: str) -> Profiler:
    cap = getattr(tf_models, name)()
    prof = Profiler(cap.graph)
    for step, raw in cap.run_metas:
        prof.add_step(step, pb.RunMetadata.FromString(raw))
    return prof


def _xprof_op(name: str) -> bool:
    """Whether a record typed by its own name (no graph node) is compared with
    XProf: no. XProf takes ``_arg_x_0_0:_arg_x_0_0`` for a TF op in some files
    and not in others (``_retval_Sum_0_0`` of the input-bound session), and
    never a type holding a ``/``; such rows are left out on both sides."""
    return False


def _reader_op(name: str) -> bool:
    """Whether the XSpace reader takes ``name:name`` (a record typed by its own
    name) for a TF op: not for names starting with ``_`` (``_arg_x_0_0``) nor
    for types holding a ``/`` (``train/NoOp_1/_21``)."""
    return not name.startswith("_") and "/" not in name


def _op_type_totals(
    model: ProfileModel, kind: int, keep: Callable[[str], bool] | None = None
) -> dict[str, int]:
    """Per op type, the total time of ``kind``; ``keep`` decides on the records
    typed by their own name (no graph node: ``_arg_x_0_0``, ``.../replicate/_0``)."""
    out: dict[str, int] = defaultdict(int)
    for step in model.sorted_steps():
        execs = model.steps[step]
        for nid, k, dur in zip(execs.t_node, execs.t_kind, execs.t_dur):
            name = model.names[nid]
            own = model.ops[nid] == name and ("/" in name or name.startswith("_"))
            if k == kind and (keep is None or not own or keep(name)):
                out[model.ops[nid]] += dur
    return dict(out)


def _executions(model: ProfileModel) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for step in model.sorted_steps():
        execs = model.steps[step]
        for nid, k in zip(execs.t_node, execs.t_kind):
            if k == KIND_CPU:
                out[f"{model.names[nid]}:{model.ops[nid]}"] += 1
    return dict(out)


@pytest.fixture(scope="module", params=CASES)
def written(request: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Profiler, Path]:
    xo.require_xprof()
    prof = _profiler(request.param)
    logdir = tmp_path_factory.mktemp(request.param)
    (path,) = prof.write_xspace(logdir, run="run1")
    return prof, Path(path)


def _check_steps(model: ProfileModel, path: Path) -> None:
    ours = {s.step: s.wall_micros for s in step_times(model).steps}
    found = xo.overview(xo.xprof_tool(path, "overview_page"))
    assert found.steps_found, found.diagnostics
    theirs = {int(s.name.split()[-1]): s.micros for s in found.steps}
    assert set(theirs) == set(ours)
    for step, micros in ours.items():
        assert theirs[step] == pytest.approx(micros, rel=0.01), step


def _check_op_types(model: ProfileModel, path: Path, where: str, kind: int) -> None:
    rows = xo.framework_op_rows(xo.xprof_tool(path, "framework_op_stats"))
    theirs: dict[str, float] = defaultdict(float)
    own = {t for t in _op_type_totals(model, kind)} - set(_op_type_totals(model, kind, _xprof_op))
    for row in rows:
        if row.host_or_device == where and row.op_type not in own:
            theirs[row.op_type] += row.self_us
    ours = _op_type_totals(model, kind, _xprof_op)
    # XProf lists no op type whose executions all took 0 us
    assert set(theirs) == {t for t, micros in ours.items() if micros}
    for op_type, micros in ours.items():
        assert theirs.get(op_type, 0.0) == pytest.approx(micros, rel=0.01, abs=0.5), op_type


def test_overview_finds_every_step(written: tuple[Profiler, Path]) -> None:
    prof, path = written
    _check_steps(prof.model, path)


def test_framework_op_self_time_per_type(written: tuple[Profiler, Path]) -> None:
    prof, path = written
    _check_op_types(prof.model, path, "Host", KIND_CPU)


def test_trace_viewer_holds_every_op_execution(written: tuple[Profiler, Path]) -> None:
    prof, path = written
    events = xo.trace_events(xo.xprof_tool(path, "trace_viewer"))
    seen: dict[str, int] = defaultdict(int)
    for event in events:
        if event.process == "/host:CPU" and event.thread != "Step markers":
            seen[event.name] += 1
    assert dict(seen) == _executions(prof.model)
    steps = [e for e in events if e.thread == "Step markers" and e.name.startswith("train")]
    assert len(steps) == len(prof.model.steps)


def test_memory_profile_peak_equals_ours(written: tuple[Profiler, Path]) -> None:
    prof, path = written
    ours: dict[str, int] = {}
    for step in memory_profile(prof.model).steps:
        for alloc in step.allocators:
            ours[alloc.allocator] = max(ours.get(alloc.allocator, 0), alloc.peak_bytes)
    assert ours, "the TF 2.21 session recorded no allocator records"
    theirs = xo.memory_profile(xo.xprof_tool(path, "memory_profile"))
    assert {name: a.peak_heap_bytes for name, a in theirs.items()} == ours


def test_reading_back_gives_the_same_op_totals(written: tuple[Profiler, Path]) -> None:
    prof, path = written
    back = Profiler.load(str(path)).model
    for kind in (KIND_CPU, KIND_ACCELERATOR):
        assert _op_type_totals(back, kind) == _op_type_totals(prof.model, kind, _reader_op)
    assert sorted(back.steps) == sorted(prof.model.steps)


def test_two_devices_keep_their_lines(tmp_path: Path) -> None:
    prof = _profiler("two_cpus")
    (path,) = prof.write_xspace(tmp_path, run="r", host="box")
    assert Path(path) == tmp_path / "plugins" / "profile" / "r" / "box.xplane.pb"
    space = pb.XSpace.FromString(Path(path).read_bytes())
    host = next(p for p in space.planes if p.name == "/host:CPU")
    names = {line.name.rsplit(" #", 1)[0] for line in host.lines}
    assert {"Step markers", "Memory"} <= names
    assert sum("device:CPU:0" in n.upper() or "cpu:0" in n for n in names) >= 1
    assert sum("cpu:1" in n.lower() for n in names) >= 1
    assert not any(m.name == "group_id" for p in space.planes for m in p.stat_metadata.values())


# ---------------------------------------------------------------- GPU (TF 2.21 format)

_ALLOC = "GPU_0_bfc"


def _gpu_profiler() -> Profiler:
    prof = Profiler(tf221_graph())
    for step in range(2):
        meta = tf221_gpu_meta(step)
        base = 1_000_000 + 1000 * step
        host = meta.step_stats.dev_stats[0]
        assert host.device == GPU
        records = [(base + 10, 4096), (base + 60, 8192), (base + 150, -4096), (base + 190, -8192)]
        host.node_stats.append(
            ns(
                "dense/MatMul",
                base + 2,
                1,
                mem=[Mem(_ALLOC, 12288, 12288, 0, 12288, tuple(records))],
            )
        )
        prof.add_step(step, meta)
    return prof


@pytest.fixture(scope="module")
def gpu_written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Profiler, Path]:
    xo.require_xprof()
    prof = _gpu_profiler()
    (path,) = prof.write_xspace(tmp_path_factory.mktemp("gpu"), run="run1")
    return prof, Path(path)


def test_gpu_steps_and_device_op_times(gpu_written: tuple[Profiler, Path]) -> None:
    prof, path = gpu_written
    _check_steps(prof.model, path)
    rows = xo.framework_op_rows(xo.xprof_tool(path, "framework_op_stats"))
    device: dict[str, float] = defaultdict(float)
    for row in rows:
        if row.host_or_device == "Device":
            device[row.op_type] += row.self_us
    expected: dict[str, float] = defaultdict(float)
    for launch in KERNELS:
        expected[launch.op.split(":")[1] if launch.op else "unknown"] += 2 * launch.dur
    annotated = {k: v for k, v in expected.items() if k != "unknown"}
    for op_type, micros in annotated.items():
        assert device[op_type] == pytest.approx(micros, rel=0.01), op_type


def test_gpu_kernel_stats_list_every_kernel(gpu_written: tuple[Profiler, Path]) -> None:
    prof, path = gpu_written
    theirs = {
        (r.kernel, r.grid, r.block, r.registers_per_thread, r.op_name): (r.count, r.total_us)
        for r in xo.kernel_rows(xo.xprof_tool(path, "kernel_stats"))
    }
    ours = {}
    for row in kernel_stats(prof.model).kernels:
        if row.kind != "kernel":
            continue
        key = (row.kernel, row.grid, row.block, row.registers_per_thread, row.op)
        ours[key] = (row.count, float(row.total_micros))
    assert set(theirs) == set(ours)
    for key, (count, total) in ours.items():
        assert theirs[key][0] == count
        assert theirs[key][1] == pytest.approx(total, rel=0.01)
    assert len({k[0] for k in ours}) == len({k.kernel for k in KERNELS})


def test_gpu_memory_peak_equals_ours(gpu_written: tuple[Profiler, Path]) -> None:
    prof, path = gpu_written
    report = memory_profile(prof.model)
    ours = max(a.peak_bytes for s in report.steps for a in s.allocators if a.allocator == _ALLOC)
    assert ours == 12288
    theirs = xo.memory_profile(xo.xprof_tool(path, "memory_profile"))
    assert theirs[_ALLOC].peak_heap_bytes == ours


def test_gpu_copies_and_launches(gpu_written: tuple[Profiler, Path]) -> None:
    prof, path = gpu_written
    space = pb.XSpace.FromString(path.read_bytes())
    gpu = next(p for p in space.planes if p.name == "/device:GPU:0")
    assert gpu.id == 0
    stat_names = {m.id: m.name for m in gpu.stat_metadata.values()}
    events = [(gpu.event_metadata[e.metadata_id].name, e) for ln in gpu.lines for e in ln.events]
    copies = [e for name, e in events if name == "MemcpyHtoD"]
    assert len([e for name, e in events if name == "cuStreamSynchronize"]) == 2
    assert len(copies) == 2
    details = {stat_names[s.metadata_id]: s.str_value for s in copies[0].stats}
    assert details["memcpy_details"].startswith("kind_src:pageable")
    bounds = {"Step begin", "Step end"}
    kernels = [
        e for name, e in events if name not in {"MemcpyHtoD", "cuStreamSynchronize", *bounds}
    ]
    assert len(kernels) == 2 * len(KERNELS)
    assert (
        sorted(name for name, _ in events if name in bounds)
        == ["Step begin"] * 2 + ["Step end"] * 2
    )
    lines = {"Stream #13", "Stream #14", "Stream #15", "sync", STEP_BOUNDS_LINE}
    assert {ln.name for ln in gpu.lines} == lines
    back = Profiler.load(str(path)).model
    assert _op_type_totals(back, KIND_ACCELERATOR) == _op_type_totals(prof.model, KIND_ACCELERATOR)
