"""The benchmark's XSpace generator (``benchmarks/make_xspace.py``): a grown file is
an XSpace that protobuf and our reader read, each line repeated with shifted times
and correlation ids, the planes without lines written once."""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path
from typing import Any

from tests.xspace_files import hand_space, stat
from tfprof_lite.formats.xspace.wire.decode import decode_xspace
from tfprof_lite.proto import messages as pb

_SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "make_xspace.py"


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("make_xspace", _SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _source() -> Any:
    """The hand-made XSpace, its kernel linked to a host launch by correlation id 41."""
    space = hand_space()
    host, gpu = space.planes[0], space.planes[1]
    host_names = {m.name: k for k, m in host.stat_metadata.items()}
    gpu_names = {m.name: k for k, m in gpu.stat_metadata.items()}
    host.lines[0].events[1].stats.append(stat(host, host_names, "correlation_id", int64_value=41))
    gpu.lines[0].events[0].stats.append(stat(gpu, gpu_names, "correlation_id", uint64_value=41))
    return space


def _correlations(plane: Any) -> list[int]:
    key = next(k for k, m in plane.stat_metadata.items() if m.name == "correlation_id")
    return [
        getattr(s, s.WhichOneof("value"))
        for line in plane.lines
        for event in line.events
        for s in event.stats
        if s.metadata_id == key
    ]


def test_grown_file_repeats_lines_with_shifted_times_and_ids() -> None:
    source = _source()
    out = io.BytesIO()
    copies = _generator().write_grown(source, out, 8 * source.ByteSize())
    grown = pb.XSpace()
    grown.ParseFromString(out.getvalue())

    assert copies >= 8
    assert [p.name for p in grown.planes] == [p.name for p in source.planes]
    assert list(grown.hostnames) == ["box"]
    for before, after in zip(source.planes, grown.planes, strict=True):
        n = len(before.lines)
        assert len(after.lines) == n * copies if n else len(after.lines) == 0
        assert dict(after.event_metadata) == dict(before.event_metadata)
        for i, line in enumerate(after.lines):
            original = before.lines[i % n]
            assert line.id == original.id and line.name == original.name
            assert len(line.events) == len(original.events)
    host, gpu = grown.planes[0], grown.planes[1]
    step = gpu.lines[1].timestamp_ns - gpu.lines[0].timestamp_ns
    assert step > 0
    assert [line.timestamp_ns for line in gpu.lines] == [
        source.planes[1].lines[0].timestamp_ns + i * step for i in range(copies)
    ]
    assert _correlations(host) == [41 + i * 42 for i in range(copies)]
    assert _correlations(gpu) == _correlations(host)
    assert grown.planes[2] == source.planes[2]  # no lines: written once, unchanged


def test_grown_file_reads_as_an_xspace() -> None:
    source = _source()
    out = io.BytesIO()
    copies = _generator().write_grown(source, out, 4 * source.ByteSize())
    cols = decode_xspace(out.getvalue(), "grown")
    once = decode_xspace(source.SerializeToString(), "source")
    assert len(cols.event_line) == copies * len(once.event_line)
    assert cols.plane_name == once.plane_name
    assert cols.origin_ns == once.origin_ns
