"""The window's host op events and allocator events (``EventWindow.host``,
``EventWindow.memory``), the op statistics (``analysis/op_stats.py``, ``tfprof-lite
op-stats``) and the window's memory (``analysis/memory_window.py`` and its lines
in the memory profile's notes) on hand-made XSpaces: ops and allocations before
the first step, between steps and after the last one, nested ops, a TF1 profile
without a window, and the pure-Python decoder giving the same columns."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from tests.handmade import ns, run_meta
from tests.unit.test_step_spans import _random_profile
from tests.xspace_data import JAX_CASES, jax_file
from tests.xspace_files import SpaceBuilder
from tfprof_lite.analysis import memory as memory_mod
from tfprof_lite.analysis.memory import NO_XSPACE_MEMORY, memory_profile
from tfprof_lite.analysis.memory_window import MAX_POINTS, _points, window_memory
from tfprof_lite.analysis.op_stats import STEPS_NOTE, UNKNOWN_TYPE, op_stats
from tfprof_lite.formats.xspace.read.load import model_from_bytes
from tfprof_lite.formats.xspace.read.window import _self_times
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.window import DATASET_TYPE
from tfprof_lite.report.memory import memory_fragment

START = SpaceBuilder.START
ALLOC = "bfc_cpu_allocator"
DETAILS = "regs:32 static_shared:0 dynamic_shared:0 grid:4,1,1 block:128,1,1 occ_pct:50"


def _alloc(b: SpaceBuilder, line: Any, at: int, size: int, addr: int, in_use: int,
           op: str, free: bool = False) -> None:  # fmt: skip
    kind = "MemoryDeallocation" if free else "MemoryAllocation"
    b.event(b.host, line, kind, at, 0, allocator_name=ALLOC, allocation_bytes=size, addr=addr,
            bytes_allocated=in_use, tf_op=op)  # fmt: skip


def _space(with_memory: bool = True, allocations_in_steps: bool = True) -> bytes:
    """Marked steps 3 and 4 (100 us each, from 1 ms and 1.2 ms). On ``tf_Compute``:
    ``pre/Fill:Fill`` at 0.5 ms (before the steps), per step ``a/MatMul:MatMul``
    (20 us) holding ``a/inner:Relu`` (5 us) and ``a/other:Relu`` (3 us), and an
    ``Iterator::Root`` (10 us) holding ``Iterator::Root::Map`` (4 us) on a
    tf.data thread; ``post/Sum:Sum`` at 1.5 ms (after the last). A GPU kernel
    launched by ``a/MatMul`` in each step and one after the steps with no op.
    Allocations: 4 MB before the steps (held to the end, in use 5 MB with 1 MB
    from before the window), 64 KB in each step (freed there), 2 MB after the
    last step (freed)."""
    b = SpaceBuilder()
    main = b.line(b.host, 1, "python")
    pool = b.line(b.host, 2, "tf_Compute/2")
    data = b.line(b.host, 3, "tf_data_private_threadpool/1")
    gpu = b.gpu_plane()
    stream = b.line(gpu, 7, "Stream #7(Compute)")
    b.event(b.host, pool, "pre/Fill:Fill", 500_000, 8_000, "Fill")
    if with_memory:
        _alloc(b, pool, 501_000, 4_000_000, 1, 5_000_000, "pre/Fill")
    for at, number in enumerate((3, 4)):
        t0 = 1_000_000 + at * 200_000
        b.event(b.host, main, "train", t0, 100_000, step_num=number, _r=1)
        b.event(b.host, pool, "a/MatMul:MatMul", t0 + 10_000, 20_000, "MatMul",
                correlation_id=10 + at)  # fmt: skip
        b.event(b.host, pool, "a/inner:Relu", t0 + 12_000, 5_000, "Relu")
        b.event(b.host, pool, "a/other:Relu", t0 + 20_000, 3_000, "Relu")
        b.event(b.host, data, "Iterator::Root", t0 + 40_000, 10_000)
        b.event(b.host, data, "Iterator::Root::Map", t0 + 42_000, 4_000)
        b.event(gpu, stream, "gemm", t0 + 35_000, 7_000, kernel_details=DETAILS,
                correlation_id=10 + at)  # fmt: skip
        if with_memory and allocations_in_steps:
            _alloc(b, pool, t0 + 13_000, 64_000, 100 + at, 5_064_000, "a/inner")
            _alloc(b, pool, t0 + 25_000, 64_000, 100 + at, 5_000_000, "a/inner", free=True)
    b.event(b.host, pool, "post/Sum:Sum", 1_500_000, 6_000, "Sum")
    b.event(gpu, stream, "late_kernel", 1_510_000, 2_000, kernel_details=DETAILS)
    if with_memory:
        _alloc(b, pool, 1_501_000, 2_000_000, 7, 7_000_000, "post/Sum")
        _alloc(b, pool, 1_505_000, 2_000_000, 7, 5_000_000, "post/Sum", free=True)
    return b.bytes()


@pytest.fixture(scope="module")
def model() -> ProfileModel:
    return model_from_bytes(_space(), "hand-made")


# ---------------------------------------------------------------- the window's columns


def test_self_time_takes_out_direct_children_on_the_same_line_only() -> None:
    # line 0: a [0, 100) holds b [10, 50) which holds c [20, 30); d [60, 70) in a;
    # e [90, 120) overlaps a's end without being inside it; line 1: f [0, 100).
    lines = [0, 0, 0, 0, 0, 1]
    starts = [0, 10, 20, 60, 90, 0]
    ends = [100, 50, 30, 70, 120, 100]
    assert _self_times(lines, starts, ends) == [100 - 40 - 10, 40 - 10, 10, 10, 30, 100]
    assert _self_times([], [], []) == []
    # equal spans: the first (longer first, then file order) holds the second
    assert _self_times([0, 0], [0, 0], [10, 10]) == [0, 10]


def test_host_ops_hold_every_op_event_with_step_and_self_time(model: ProfileModel) -> None:
    host = model.event_window.host
    rows = {}
    for i, name in enumerate(host.name):
        rows.setdefault(name, []).append(
            (host.op_type[i], int(host.dur_ns[i]), int(host.self_ns[i]), int(host.step[i]))
        )
    assert rows["pre/Fill"] == [("Fill", 8_000, 8_000, -1)]
    assert rows["post/Sum"] == [("Sum", 6_000, 6_000, -1)]
    assert rows["a/MatMul"] == [("MatMul", 20_000, 12_000, 0), ("MatMul", 20_000, 12_000, 1)]
    assert rows["a/inner"] == [("Relu", 5_000, 5_000, 0), ("Relu", 5_000, 5_000, 1)]
    assert rows["Iterator::Root"] == [
        (DATASET_TYPE, 10_000, 6_000, 0),
        (DATASET_TYPE, 10_000, 6_000, 1),
    ]
    assert rows["Iterator::Root::Map"] == [(DATASET_TYPE, 4_000, 4_000, s) for s in (0, 1)]
    assert "train" not in rows  # a step marker is no op
    assert sorted(host.lines) == [
        "/host:CPU/tf_Compute/2",
        "/host:CPU/tf_data_private_threadpool/1",
    ]
    assert host.start_ns[host.name.index("pre/Fill")] == START + 500_000
    assert model.event_window.step_numbers == [3, 4]


def test_memory_events_hold_allocations_outside_the_steps(model: ProfileModel) -> None:
    mem = model.event_window.memory
    assert mem.allocators == [ALLOC]
    assert mem.delta.tolist() == [
        4_000_000,
        64_000,
        -64_000,
        64_000,
        -64_000,
        2_000_000,
        -2_000_000,
    ]
    assert mem.step.tolist() == [-1, 0, 0, 1, 1, -1, -1]
    assert mem.in_use.max() == 7_000_000
    assert mem.op[0] == "pre/Fill" and mem.time_ns[0] == START + 501_000
    # the steps' records hold only the allocations inside them, as before
    assert memory_profile(model).steps[0].allocators[0].peak_bytes == 64_000


def test_a_file_without_memory_or_ops_has_empty_columns() -> None:
    b = SpaceBuilder()
    b.event(b.host, b.line(b.host, 1, "python"), "train", 1_000, 100, step_num=0, _r=1)
    window = model_from_bytes(b.bytes(), "bare").event_window
    assert len(window.host) == 0 and len(window.memory) == 0
    assert op_stats(model_from_bytes(b.bytes(), "bare")).types == []


def test_pure_python_gives_the_same_window_columns(tmp_path: Any) -> None:
    path = tmp_path / "hand.xplane.pb"
    path.write_bytes(_space())
    script = (
        "import json, sys\n"
        "from tfprof_lite.profiler import Profiler\n"
        "w = Profiler.load(sys.argv[1]).model.event_window\n"
        "h, m = w.host, w.memory\n"
        "print(json.dumps([h.name, h.op_type, h.lines, h.line.tolist(), h.start_ns.tolist(),"
        " h.dur_ns.tolist(), h.self_ns.tolist(), h.step.tolist(), m.allocators,"
        " m.allocator.tolist(), m.time_ns.tolist(), m.delta.tolist(), m.in_use.tolist(), m.op,"
        " m.step.tolist()]))\n"
    )
    outs = []
    for pure in ("0", "1"):
        env = {"TFPROF_LITE_PURE_PYTHON": pure} if pure == "1" else {}
        import os

        full = {k: v for k, v in os.environ.items() if k != "TFPROF_LITE_PURE_PYTHON"}
        done = subprocess.run([sys.executable, "-c", script, str(path)], env={**full, **env},
                              capture_output=True, text=True, check=True)  # fmt: skip
        outs.append(json.loads(done.stdout))
    assert outs[0] == outs[1]
    assert len(outs[0][0]) == 12 and len(outs[0][9]) == 7


# ---------------------------------------------------------------- op statistics


def test_op_stats_count_every_op_of_the_window(model: ProfileModel) -> None:
    found = op_stats(model)
    assert found.source == "window" and found.steps == 2
    ops = {(r.side, r.op_type, r.name): r for r in found.ops}
    fill = ops[("host", "Fill", "pre/Fill")]
    assert (fill.count, fill.total_ns, fill.self_ns, fill.outside) == (1, 8_000, 8_000, 1)
    matmul = ops[("host", "MatMul", "a/MatMul")]
    assert (matmul.count, matmul.total_ns, matmul.self_ns, matmul.outside) == (2, 40_000, 24_000, 0)
    relu = {t.op_type: t for t in found.types}["Relu"]
    assert (relu.ops, relu.count, relu.self_ns) == (2, 4, 16_000)
    host_self = 8_000 + 24_000 + 16_000 + 12_000 + 8_000 + 6_000
    assert found.self_ns["host"] == host_self
    assert fill.share == pytest.approx(8_000 / host_self)
    assert sum(r.share for r in found.ops if r.side == "host") == pytest.approx(1.0)
    assert sum(t.share for t in found.types if t.side == "host") == pytest.approx(1.0)
    gemm = ops[("device", "MatMul", "a/MatMul")]
    assert (gemm.count, gemm.total_ns, gemm.self_ns, gemm.outside) == (2, 14_000, 14_000, 0)
    late = ops[("device", UNKNOWN_TYPE, "late_kernel")]  # no op: the kernel's name
    assert (late.count, late.total_ns, late.outside) == (1, 2_000, 1)
    assert found.self_ns["device"] == 16_000
    selfs = [r.self_ns for r in found.ops]
    assert selfs == sorted(selfs, reverse=True)


def test_top_keeps_the_first_ops_of_each_side_and_every_type(model: ProfileModel) -> None:
    every = op_stats(model)
    cut = op_stats(model, top=1)
    assert [(r.side, r.name) for r in cut.ops] == [("host", "a/MatMul"), ("device", "a/MatMul")]
    assert cut.types == every.types and cut.self_ns == every.self_ns
    text = cut.to_text()
    assert "ops outside the steps included" in text and "pre/Fill" not in text
    assert "Relu" in text  # (a type row)
    doc = json.loads(json.dumps(cut.to_dict()))
    assert doc["source"] == "window" and len(doc["ops"]) == 2 and doc["self_ns"]["device"] == 16_000


def test_tf1_profile_sums_its_steps_records() -> None:
    from tfprof_lite.profiler import Profiler

    cpu = "/job:localhost/replica:0/task:0/device:CPU:0"
    prof = Profiler()
    prof.add_step(0, run_meta([(cpu, [ns("a/MatMul", 100, 30), ns("b/Relu", 140, 10)])]))
    prof.add_step(1, run_meta([(cpu, [ns("a/MatMul", 300, 20)])]))
    model = prof.model
    assert model.event_window is None
    found = op_stats(model)
    assert found.source == "steps" and found.notes == [STEPS_NOTE] and found.steps == 2
    ops = {r.name: r for r in found.ops}
    assert (ops["a/MatMul"].count, ops["a/MatMul"].total_ns) == (2, 50_000)
    assert (ops["b/Relu"].count, ops["b/Relu"].self_ns) == (1, 10_000)
    assert ops["a/MatMul"].share == pytest.approx(50 / 60)
    assert "from the steps' records" in found.to_text() and STEPS_NOTE in found.to_text()


def test_op_stats_command(tmp_path: Any) -> None:
    from click.testing import CliRunner

    from tfprof_lite.cli.op_stats import op_stats_command

    path = tmp_path / "hand.xplane.pb"
    path.write_bytes(_space())
    runner = CliRunner()
    text = runner.invoke(op_stats_command, [str(path), "--top", "2"])
    assert text.exit_code == 0, text.output
    assert "a/MatMul" in text.output and "Iterator::Root" in text.output
    as_json = runner.invoke(op_stats_command, [str(path), "--json"])
    doc = json.loads(as_json.output)
    assert {(r["side"], r["name"]) for r in doc["ops"]} >= {
        ("host", "pre/Fill"),
        ("host", "post/Sum"),
    }


# ---------------------------------------------------------------- the window's memory


def test_window_memory_peaks_outside_the_steps(model: ProfileModel) -> None:
    found = window_memory(model)
    assert found is not None and found.steps == 2
    (alloc,) = found.allocators
    assert alloc.allocator == ALLOC
    assert (alloc.peak_bytes, alloc.peak_step) == (7_000_000, None)
    assert alloc.peak_ns == START + 1_501_000 - model.event_window.start_ns
    assert alloc.steps_peak_bytes == 5_064_000
    assert (alloc.net_peak_bytes, alloc.baseline_bytes) == (6_000_000, 0)
    assert (alloc.allocations, alloc.frees, alloc.outside) == (4, 3, 3)
    assert max(v for _, v in alloc.timeline) == 7_000_000 and len(alloc.timeline) == 7
    assert json.loads(json.dumps(found.to_dict()))["allocators"][0]["timeline"][0] == [
        501_000 - 500_000,
        5_000_000,
    ]


def test_memory_profile_notes_the_window(model: ProfileModel) -> None:
    report = memory_profile(model)
    (line,) = [n for n in report.notes if n.startswith("whole window")]
    assert "peak 7.00MB in use" in line and "outside the steps" in line
    assert "the steps' highest 5.06MB" in line and "3 of them outside the steps" in line
    assert "whole window" in report.to_text()
    assert not [n for n in memory_profile(model, step=3).notes if "whole window" in n]
    # the JSON holds the window's curve itself; one step's report, or a TF1 one, has none
    doc = json.loads(json.dumps(report.to_dict()))
    assert doc["window"]["allocators"][0]["peak_bytes"] == 7_000_000
    assert max(v for _, v in doc["window"]["allocators"][0]["timeline"]) == 7_000_000
    assert "window" not in memory_profile(model, step=3).to_dict()


def test_allocations_only_outside_the_steps_are_no_missing_memory() -> None:
    model = model_from_bytes(_space(allocations_in_steps=False), "outside only")
    report = memory_profile(model)
    assert not any(s.allocators for s in report.steps)
    assert NO_XSPACE_MEMORY not in report.notes
    assert any(n.startswith("whole window") and "peak 7.00MB" in n for n in report.notes)
    bare = model_from_bytes(_space(with_memory=False), "no memory")
    assert window_memory(bare) is None
    assert NO_XSPACE_MEMORY in memory_profile(bare).notes


def test_long_timelines_keep_their_peak() -> None:
    times = np.arange(5 * MAX_POINTS + 7, dtype=np.int64)
    values = (times * 7919) % 10_007
    values[4321] = 99_999
    points = _points(times, values)
    assert len(points) == MAX_POINTS
    assert (4321, 99_999) in points
    assert [t for t, _ in points] == sorted(t for t, _ in points)
    assert _points(times[:10], values[:10]) == list(zip(range(10), values[:10].tolist()))


def test_report_draws_the_windows_memory(model: ProfileModel) -> None:
    html = memory_fragment(model)
    assert html is not None
    window, _, steps = html.partition("<h3>Step ")
    assert window.startswith("<h3>Whole window</h3>") and steps  # the steps' charts follow
    assert window.count("<svg") == 1 and "peak 7.00MB" in window
    assert "outside the steps" in window
    # only outside the steps: the window's chart, and the steps have none
    outside = memory_fragment(model_from_bytes(_space(allocations_in_steps=False), "outside"))
    assert outside is not None and outside.count("<svg") == 1
    assert "No memory records in the traced steps." in outside
    bare = memory_fragment(model_from_bytes(_space(with_memory=False), "no memory"))
    assert bare is not None and "Whole window" not in bare


@pytest.mark.parametrize("case", ["hand", "outside", "tf1", *JAX_CASES])
def test_steps_without_memory_skip_the_profile_with_the_same_answer(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if case == "hand":
        made = model_from_bytes(_space(), "hand-made")
    elif case == "outside":
        made = model_from_bytes(_space(allocations_in_steps=False), "outside only")
    elif case == "tf1":
        made = _random_profile(3)
    else:
        made = model_from_bytes(jax_file(case).read_bytes(), case)
    fast = memory_profile(made).to_dict()
    steps = made.sorted_steps()
    recorded = memory_mod._recorded(made, steps)
    monkeypatch.setattr(memory_mod, "_recorded", lambda model, steps: [True] * len(steps))
    assert memory_profile(made).to_dict() == fast
    # The TF1 profile's records and the steps of "outside" hold no memory: skipped.
    assert recorded == [case not in ("tf1", "outside")] * len(steps)
