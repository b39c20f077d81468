"""The XSpace reader against TensorFlow's own xplane_pb2 (a second reader) on
the real JAX captures and on TF 2.21 profiles made here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests import xspace_files
from tests.integration import xspace_tf_small
from tfprof_lite.formats.xspace.wire import decode as xplane

pytestmark = pytest.mark.tf


def _value(stat: Any, names: dict[int, str]) -> Any:
    which = stat.WhichOneof("value")
    if which is None:
        return None
    value = getattr(stat, which)
    return names.get(value, "") if which == "ref_value" else value


def _events_by_tf(raw: bytes) -> list[tuple[Any, ...]]:
    """Every event as TF's reader sees it: plane, line, name, absolute ps, stats."""
    pb2 = pytest.importorskip("tensorflow.tsl.profiler.protobuf.xplane_pb2")
    space = pb2.XSpace()
    space.ParseFromString(raw)
    start = 0
    for plane in space.planes:
        if plane.name == "Task Environment":
            names = {k: m.name for k, m in plane.stat_metadata.items()}
            start = next(s.uint64_value for s in plane.stats
                         if names[s.metadata_id] == "profile_start_time")  # fmt: skip
    out = []
    for plane in space.planes:
        names = {k: m.name for k, m in plane.stat_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                meta = plane.event_metadata.get(event.metadata_id)
                stats = {names.get(s.metadata_id, ""): _value(s, names) for s in event.stats}
                out.append((
                    plane.name, line.id, line.name, meta.name if meta else "",
                    (start + line.timestamp_ns) * 1000 + event.offset_ps,
                    event.duration_ps, event.num_occurrences, stats,
                ))  # fmt: skip
    return out


def _events_by_us(raw: bytes) -> list[tuple[Any, ...]]:
    cols = xplane.decode_xspace(raw)
    out = []
    for e in range(len(cols.event_line)):
        line = int(cols.event_line[e])
        out.append((
            cols.plane_name[int(cols.line_plane[line])], int(cols.line_id[line]),
            cols.line_name[line], cols.event_name(e),
            cols.origin_ns * 1000 + int(cols.event_start_ps[e]),
            int(cols.event_duration_ps[e]), int(cols.event_occurrences[e]),
            cols.event_stat_dict(e),
        ))  # fmt: skip
    return out


@pytest.fixture(scope="module")
def tf_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("tensorflow")
    return xspace_tf_small.capture(tmp_path_factory.mktemp("xspace_tf") / "logdir")


@pytest.mark.parametrize("case", xspace_files.jax_cases())
def test_jax_capture_reads_as_tf_reads_it(case: str) -> None:
    raw = xspace_files.jax_file(case).read_bytes()
    ours, theirs = _events_by_us(raw), _events_by_tf(raw)
    assert len(ours) > 3000
    assert ours == theirs


def test_tf_capture_reads_as_tf_reads_it(tf_profile: Path) -> None:
    raw = tf_profile.read_bytes()
    ours, theirs = _events_by_us(raw), _events_by_tf(raw)
    names = {event[3] for event in ours}
    assert "train" in names and "MatMul:_MklMatMul" in names
    assert ours == theirs
    cols = xplane.decode_xspace(raw)
    assert cols.relative
    assert cols.hostnames and cols.plane_name[0] == "/host:CPU"


@pytest.mark.parametrize(
    ("mode", "source", "steps"),
    [
        ("markers", "step markers (train)", list(range(xspace_tf_small.STEPS))),
        ("keras", f"inferred: {xspace_tf_small.KERAS_STEPS} Keras multi_step_on_iterator calls, "
         "one per step (", list(range(xspace_tf_small.KERAS_STEPS))),
        ("session", f"inferred: {xspace_tf_small.STEPS} SessionRun calls, one per step (",
         list(range(xspace_tf_small.STEPS))),
    ],
)  # fmt: skip
def test_tf_capture_steps_and_ops(
    tmp_path_factory: pytest.TempPathFactory, mode: str, source: str, steps: list[int]
) -> None:
    pytest.importorskip("tensorflow")
    from tfprof_lite.analysis.steptime import step_times
    from tfprof_lite.profiler import Profiler

    path = xspace_tf_small.capture(tmp_path_factory.mktemp(f"xspace_{mode}") / "logdir", mode)
    prof = Profiler.load(path.parents[3])  # the logdir
    model = prof.model
    assert model.steps_source.startswith(source)  # then how sure, which varies
    assert model.sorted_steps() == steps
    walls = [s.wall_micros for s in step_times(model).steps]
    assert len(walls) == len(steps) and all(w > 0 for w in walls)
    ops = {model.ops[i] for i in range(len(model.names))}
    assert ("BiasAddGrad" if mode == "keras" else "Relu") in ops
    # Every op's CPU time lies inside its step.
    for step in steps:
        start, end = model.steps[step].wall_span()
        execs = model.steps[step]
        assert all(start <= s and s + d <= end for s, d in zip(execs.t_start, execs.t_dur))
