"""The window of an XSpace (``ProfileModel.event_window``) on hand-made files:
kernels before the first step, between two steps, after the last, a step
without kernels; what the kernel rows and the overview read of it; and a TF1
RunMetadata profile, which has none and reads its steps as before."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.handmade import ns, run_meta
from tests.xspace_files import SpaceBuilder
from tfprof_lite.analysis.kernels import kernel_stats
from tfprof_lite.analysis.overview import overview
from tfprof_lite.formats.xspace.read import conversion as xspace
from tfprof_lite.formats.xspace.read.load import model_from_bytes
from tfprof_lite.formats.xspace.wire import decode as xplane
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.window import KIND_COPY, KIND_KERNEL, DeviceEvents, EventWindow

DETAILS = "regs:32 static_shared:0 dynamic_shared:0 grid:4,1,1 block:128,1,1 occ_pct:50"
COPY = "kind_src:device kind_dst:pinned size:64 dest:0 async:0"
START = SpaceBuilder.START


def _space() -> bytes:
    """Marked steps 10, 11, 12 (50 us each, 100 us apart, from 1 ms): a kernel
    at 0.1 ms (before them), ``gemm`` in steps 10 and 11, a kernel between
    steps 10 and 11 (launched in the gap: the next step's), nothing in step 12,
    a copy and a kernel at 1.3 ms (after the last step)."""
    b = SpaceBuilder()
    main = b.line(b.host, 1, "python")
    gpu = b.gpu_plane()
    stream = b.line(gpu, 7, "Stream #7(Compute)")
    copies = b.line(gpu, 8, "Stream #8(MemcpyD2H)")
    b.event(gpu, stream, "early_kernel", 100_000, 1_000, kernel_details=DETAILS)
    for at, number in enumerate((10, 11, 12)):
        b.event(b.host, main, "train", 1_000_000 + at * 100_000, 50_000, step_num=number, _r=1)
    b.event(gpu, stream, "gemm", 1_010_000, 7_000, kernel_details=DETAILS)
    b.event(gpu, stream, "gap_kernel", 1_070_000, 2_000, kernel_details=DETAILS)
    b.event(gpu, stream, "gemm", 1_110_000, 7_000, kernel_details=DETAILS)
    b.event(gpu, copies, "MemcpyD2H", 1_290_000, 3_000, memcpy_details=COPY)
    b.event(gpu, stream, "late_kernel", 1_300_000, 4_000, kernel_details=DETAILS)
    return b.bytes()


@pytest.fixture(params=["convert", "load"])
def model(request: pytest.FixtureRequest) -> ProfileModel:
    """The hand-made file, through ``xspace.convert`` and through the loader."""
    if request.param == "load":
        return model_from_bytes(_space(), "hand-made")
    made = ProfileModel()
    xspace.convert(xplane.decode_xspace(_space()), made)
    return made


def _by_name(window: EventWindow) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for name, step in zip(window.device.name, window.device.step.tolist()):
        found.setdefault(name, []).append(step)
    return found


def test_window_holds_every_device_event_and_its_step(model: ProfileModel) -> None:
    window = model.event_window
    assert isinstance(window, EventWindow)
    assert window.step_numbers == [10, 11, 12]
    assert (window.start_ns, window.end_ns) == (START + 100_000, START + 1_304_000)
    # Step index 1 is step 11: the gap kernel was launched for it.
    assert _by_name(window) == {
        "early_kernel": [-1], "gemm": [0, 1], "gap_kernel": [1], "MemcpyD2H": [-1],
        "late_kernel": [-1],
    }  # fmt: skip
    assert window.outside_steps() == 3
    device = window.device
    # (in the file's order: line by line)
    assert device.kind.tolist() == [KIND_KERNEL] * 5 + [KIND_COPY]
    assert device.dur_ns.tolist() == [1_000, 7_000, 2_000, 7_000, 4_000, 3_000]
    assert device.start_ns[0] == START + 100_000
    assert device.gpu.tolist() == [0] * 6
    assert device.stream.tolist() == [7, 7, 7, 7, 7, 8]
    assert device.details[0] == DETAILS and device.details[5] == COPY


def test_step_spans_and_coverage(model: ProfileModel) -> None:
    window = model.event_window
    assert window is not None
    spans = list(zip(window.step_start_ns.tolist(), window.step_end_ns.tolist()))
    # Step 11 reaches back to the kernel launched for it in the gap before it.
    assert spans == [
        (START + 1_000_000, START + 1_050_000),
        (START + 1_070_000, START + 1_150_000),
        (START + 1_200_000, START + 1_250_000),
    ]
    assert window.covered_ns() == 180_000
    assert window.coverage() == pytest.approx(180_000 / 1_204_000)


def test_kernel_rows_count_the_whole_window(model: ProfileModel) -> None:
    rows = {(k.kind, k.kernel): (k.count, k.total_micros) for k in kernel_stats(model).kernels}
    assert rows == {
        ("kernel", "gemm"): (2, 14), ("kernel", "late_kernel"): (1, 4),
        ("memcpy", "MemcpyDtoH"): (1, 3), ("kernel", "gap_kernel"): (1, 2),
        ("kernel", "early_kernel"): (1, 1),
    }  # fmt: skip
    # The steps' own records leave out what ran before, after and between them.
    inside = {(k.kernel, k.count) for k in kernel_stats(model, step=11).kernels}
    assert inside == {("gemm", 1), ("gap_kernel", 1)}
    assert kernel_stats(model, step=12).kernels == []
    per_step = sum(len(model.steps[s].kernels) for s in model.sorted_steps())
    assert per_step == 2 * 3  # each kernel on stream:7 and stream:all


def test_kernel_report_says_it_counts_the_window(model: ProfileModel) -> None:
    report = kernel_stats(model)
    assert (report.steps, report.window_micros, report.outside_steps) == (3, 1204, 3)
    first = report.to_text().splitlines()[0]
    assert first.startswith("GPU kernels over the whole 1.20ms window (3 steps; 3 GPU events ")
    doc = json.loads(json.dumps(report.to_dict()))
    assert (doc["window_micros"], doc["outside_steps"]) == (1204, 3)


def test_overview_says_what_share_of_the_window_the_steps_cover(model: ProfileModel) -> None:
    view = overview(model)
    assert view.step_coverage == round(180_000 / 1_204_000, 6)
    assert view.window_micros == 1204
    assert view.device_events_outside_steps == 3
    assert "steps cover 15.0% of the 1.20ms window; 3 GPU events outside them" in view.to_text()
    doc = view.to_dict()
    assert (doc["step_coverage"], doc["device_events_outside_steps"]) == (0.149502, 3)


def test_no_markers_one_step_covers_the_window() -> None:
    b = SpaceBuilder()
    gpu = b.gpu_plane()
    stream = b.line(gpu, 3, "Stream #3")
    b.event(gpu, stream, "k1", 10_000, 5_000, kernel_details=DETAILS)
    b.event(gpu, stream, "k2", 30_000, 5_000, kernel_details=DETAILS)
    model = model_from_bytes(b.bytes(), "hand-made")
    window = model.event_window
    assert window is not None and window.step_numbers == [0]
    assert window.outside_steps() == 0 and window.coverage() == 1.0
    assert [k.count for k in kernel_stats(model).kernels] == [1, 1]


def test_a_cpu_only_file_has_a_window_without_device_events() -> None:
    b = SpaceBuilder()
    main = b.line(b.host, 1, "python")
    b.event(b.host, main, "train", 1_000, 4_000, step_num=1, _r=1)
    b.event(b.host, main, "train", 9_000, 4_000, step_num=2, _r=1)
    model = model_from_bytes(b.bytes(), "hand-made")
    window = model.event_window
    assert window is not None and len(window.device) == 0
    assert window.duration_ns == 12_000 and window.covered_ns() == 8_000
    report = kernel_stats(model)
    assert report.kernels == [] and report.window_micros is None
    assert "steps cover 66.7% of the 12us window" in overview(model).to_text()


def test_covered_time_counts_overlaps_once_and_clips_to_the_window() -> None:
    window = EventWindow(
        start_ns=100, end_ns=1_100, step_numbers=[1, 2, 3, 4],
        step_start_ns=np.asarray([50, 300, 350, 900], dtype=np.int64),
        step_end_ns=np.asarray([200, 400, 380, 2_000], dtype=np.int64),
        device=DeviceEvents(),
    )  # fmt: skip
    assert window.covered_ns() == 100 + 100 + 200
    assert window.coverage() == pytest.approx(0.4)
    assert EventWindow().coverage() == 0.0 and EventWindow().outside_steps() == 0


def test_tf1_profiles_have_no_window_and_their_outputs_keep_their_keys() -> None:
    from tfprof_lite.profiler import Profiler

    record = ns("a", 10, 5)
    record.timeline_label = "k1 regs:1"
    meta = run_meta([("/device:GPU:0/stream:all", [record])])
    prof = Profiler()
    prof.add_step(1, meta)
    assert prof.model.event_window is None
    assert "window_micros" not in kernel_stats(prof.model).to_dict()
    doc = overview(prof.model).to_dict()
    assert not {"window_micros", "step_coverage", "device_events_outside_steps"} & set(doc)
    assert "steps cover" not in overview(prof.model).to_text()


def test_the_trace_shows_the_events_outside_the_steps(model: ProfileModel) -> None:
    from tfprof_lite.outputs.steps_trace import step_events

    events = list(step_events(model))
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    outside = [
        (names[e["pid"]], e["name"], e["ts"], e["dur"])
        for e in events
        if e.get("cat") == "Outside steps"
    ]
    base = START // 1000
    assert sorted(outside) == [
        ("/device:GPU:0/memcpy (outside steps)", "MemcpyD2H", base + 1290, 3),
        ("/device:GPU:0/stream:all (outside steps)", "early_kernel", base + 100, 1),
        ("/device:GPU:0/stream:all (outside steps)", "late_kernel", base + 1300, 4),
    ]
    every = [e for e in step_events(model, [12, 10, 11]) if e.get("cat") == "Outside steps"]
    assert len(every) == 3  # every step named (as the timeline command does): the same
    # A chosen list of some steps shows those steps alone.
    assert not [e for e in step_events(model, [10]) if e.get("cat") == "Outside steps"]
