"""A step's own span (``StepExecs.span``) and step times measured at once.

An XSpace's step roots are spans, not nodes: a hand-made file's markers give no
node, no record on a steps device and no row in any view, and the step time
runs over the span. The batched step times (:func:`steptime._measure`) equal
the per-step ones (:func:`steptime._one_step`) on random profiles, and on
values the batched path leaves to the per-step one (zero starts, negative
durations).
"""

from __future__ import annotations

import random

import pytest

import tfprof_lite
from tests.xspace_files import SpaceBuilder
from tfprof_lite.analysis import steptime
from tfprof_lite.formats.xspace.read import conversion as xspace
from tfprof_lite.formats.xspace.read.steps import StepSpan
from tfprof_lite.formats.xspace.wire import decode as xplane
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.step_batch import add_spans
from tfprof_lite.options.options import Options
from tfprof_lite.proto import messages as pb
from tfprof_lite.views.query import run_view

CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU = "/job:localhost/replica:0/task:0/device:GPU:0"
MS = 1_000_000  # ns
#: Every node accounted and shown.
_ALL = Options(
    account_type_regexes=(".*",), start_name_regexes=(".*",), show_name_regexes=(".*",),
    select=("micros",), output="none",
)  # fmt: skip


def _random_profile(seed: int, steps: int = 12) -> ProfileModel:
    rng = random.Random(seed)
    graph = pb.GraphDef()
    for i in range(6):
        graph.node.add(name=f"n{i}", op="MatMul" if i % 2 else "Add")
    prof = tfprof_lite.Profiler(graph)
    for step in rng.sample(range(100), steps):
        meta = pb.RunMetadata()
        for device in (CPU, GPU, GPU + "/stream:all", GPU + "/stream:7"):
            dev = meta.step_stats.dev_stats.add(device=device)
            for _ in range(rng.randrange(0, 8)):
                dev.node_stats.add(
                    node_name=f"n{rng.randrange(6)}",
                    all_start_micros=1_000_000 + rng.randrange(5_000),
                    op_end_rel_micros=rng.randrange(0, 300),
                )
        prof.add_step(step, meta)
    return prof.model


def _per_step(model: ProfileModel) -> list[steptime.StepTime | None]:
    return [steptime._one_step(model, s) for s in model.sorted_steps()]


@pytest.mark.parametrize("seed", range(6))
def test_batched_step_times_equal_the_per_step_ones(seed: int) -> None:
    model = _random_profile(seed)
    ordered = model.sorted_steps()
    joined = steptime._Joined([model.steps[s] for s in ordered])
    assert joined.exact()
    assert steptime._measure(model, ordered) == _per_step(model)


def test_a_span_widens_the_wall_time_and_a_span_alone_makes_a_step() -> None:
    model = _random_profile(7, steps=3)
    first, second, third = model.sorted_steps()
    wall = model.steps[first].wall_span()
    assert wall is not None
    add_spans(
        model,
        [first, second, 500],
        [StepSpan("train", wall[0] - 40, wall[1] + 60), None, StepSpan("train", 10, 25)],
    )
    assert model.steps[first].wall_span() == (wall[0] - 40, wall[1] + 60)
    assert model.steps[second].span is None and model.steps[third].span is None
    # another file of step 500: the span over both
    add_spans(model, [500], [StepSpan("train", 5, 20)])
    assert model.steps[500].span == StepSpan("train", 5, 25)
    assert model.steps[500].wall_span() == (5, 25)
    report = steptime.step_times(model)
    by_step = {s.step: s for s in report.steps}
    assert by_step[first].wall_micros == wall[1] - wall[0] + 100
    assert by_step[500].wall_micros == 20 and by_step[500].op_micros == 0
    assert steptime._measure(model, model.sorted_steps()) == _per_step(model)


def negative_duration_profile(first_op: str = "Add") -> ProfileModel:
    """Step 1 of two nodes on the CPU: ``a`` (op ``first_op``) with a negative
    duration, then ``b`` (``Add``): what the batched measures leave to the
    per-step ones."""
    graph = pb.GraphDef()
    graph.node.add(name="a", op=first_op)
    graph.node.add(name="b", op="Add")
    prof = tfprof_lite.Profiler(graph)
    meta = pb.RunMetadata()
    dev = meta.step_stats.dev_stats.add(device=CPU)
    dev.node_stats.add(node_name="a", all_start_micros=100, op_end_rel_micros=-30)
    dev.node_stats.add(node_name="b", all_start_micros=150, op_end_rel_micros=20)
    prof.add_step(1, meta)
    return prof.model


def test_values_the_batch_cannot_take_are_measured_per_step() -> None:
    model = negative_duration_profile()
    assert not steptime._Joined([model.steps[1]]).exact()
    assert steptime._measure(model, [1]) == _per_step(model)
    assert steptime.step_times(model).steps[0] == _per_step(model)[0]


def _marked_file() -> bytes:
    """Three ``train`` markers, each around a kernel launch and its kernel."""
    b = SpaceBuilder()
    py = b.line(b.host, 1, "python")
    stream = b.line(b.gpu_plane(), 7, "Stream #7(Compute)")
    for step in range(3):
        t0 = MS + step * 10 * MS
        b.event(b.host, py, "train", t0, 8 * MS, step_num=step, _r=1)
        b.event(b.host, py, "cuLaunchKernel", t0 + MS, 50_000, correlation_id=step + 1)
        b.event(b.gpu, stream, "kernel", t0 + MS + 100_000, 500_000,
                kernel_details="grid:1,1,1 block:1,1,1", correlation_id=step + 1)  # fmt: skip
    return b.bytes()


def test_markers_are_spans_not_nodes_records_or_rows() -> None:
    model = ProfileModel()
    xspace.convert(xplane.decode_xspace(_marked_file()), model)
    assert model.steps_source == "step markers (train)"
    assert "train" not in model.names
    for step in range(3):
        execs = model.steps[step]
        assert not any("steps" in d for d in execs.device_names)
        span = execs.span
        assert span is not None and span.name == "train"
        assert span.end - span.start == 8_000  # the marker's 8 ms
    walls = [s.wall_micros for s in steptime.step_times(model).steps]
    assert walls == [8_000] * 3
    for view in ("scope", "graph", "op"):
        result = run_view(model, view, _ALL)
        shown = _tree_names(result.root)
        assert len(shown) > 1 and "train" not in shown, (view, shown)


def _tree_names(root: object) -> list[str]:
    names: list[str] = []
    stack = [root]
    while stack:
        node = stack.pop()
        names.append(node.name)  # type: ignore[attr-defined]
        stack.extend(node.children)  # type: ignore[attr-defined]
    return names


def test_a_merged_profile_keeps_each_steps_span() -> None:
    one = tfprof_lite.Profiler.load(_marked_file())
    spans = {n: one.model.steps[n].span for n in one.model.sorted_steps()}
    merged = tfprof_lite.merge([one, tfprof_lite.Profiler.load(_marked_file())],
                               allow_same_task=True).model  # fmt: skip
    assert merged.sorted_steps() == sorted(spans)
    for number, span in spans.items():
        got = merged.steps[number].span
        assert got is not None and span is not None
        assert got.name == "train" and got.end - got.start == span.end - span.start == 8_000
    walls = [s.wall_micros for s in steptime.step_times(merged).steps]
    assert walls == [8_000] * 3
