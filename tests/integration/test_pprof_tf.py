"""pprof output: the same gzip bytes as TensorFlow's tfprof, readable by the real pprof."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest

import tfprof_lite
from tests.pprof_tool import run_pprof
from tfprof_lite.proto import messages as pb

pytestmark = pytest.mark.tf

tf_oracle = pytest.importorskip("tests.integration.tf_oracle")
B = tfprof_lite.ProfileOptionBuilder

SELECTS = [
    "micros",
    "accelerator_micros",
    "cpu_micros",
    "bytes",
    "peak_bytes",
    "residual_bytes",
    "output_bytes",
    "params",
    "float_ops",
]
_ours: dict[int, tfprof_lite.Profiler] = {}


def ours_for(capture: Any) -> tfprof_lite.Profiler:
    prof = _ours.get(id(capture))
    if prof is None:
        prof = tfprof_lite.Profiler(capture.graph)
        for step, data in capture.run_metas:
            prof.add_step(step, data)
        _ours[id(capture)] = prof
    return prof


def _variants(capture: Any) -> list[B]:
    first_step = capture.run_metas[0][0]
    return [
        B(),
        B().with_max_depth(4),
        B().with_min_execution_time(min_micros=10),
        B().with_step(first_step),
        B().with_node_names(hide_name_regexes=[".*gradient.*"]),
    ]


@pytest.mark.parametrize("select", SELECTS)
def test_pprof_bytes_equal_tf(capture: Any, oracle: Any, select: str, tmp_path: Path) -> None:
    for index, builder in enumerate(_variants(capture)):
        theirs = tmp_path / f"tf{index}.pb.gz"
        mine = tmp_path / f"ours{index}.pb.gz"
        opts = builder.select([select]).with_pprof_output(str(theirs)).build()
        oracle.profiler.profile_python(opts)
        ours_for(capture).profile_python(dict(opts, output=f"pprof:outfile={mine}"))
        expected = pb.PprofProfile.FromString(gzip.decompress(theirs.read_bytes()))
        got = pb.PprofProfile.FromString(gzip.decompress(mine.read_bytes()))
        assert got == expected
        # The serialized profile is identical; the gzip stream can differ from
        # TensorFlow's bundled zlib on larger inputs, so compare the payload.
        assert gzip.decompress(mine.read_bytes()) == gzip.decompress(theirs.read_bytes())


def test_pprof_rejects_like_tf(capture: Any, tmp_path: Path, caplog: Any) -> None:
    prof = ours_for(capture)
    path = tmp_path / "x.pb.gz"
    msg = prof.profile_name_scope(B().with_pprof_output(str(path)).build())
    assert msg.name == "_TFProfRoot" and not msg.children
    assert "Only 'code' view supports pprof output now." in caplog.text
    prof.profile_python(B().select(["micros", "bytes"]).with_pprof_output(str(path)).build())
    assert "Can only select 1 attribute for pprof output." in caplog.text
    prof.profile_python(B().select(["occurrence"]).with_pprof_output(str(path)).build())
    assert "pprof doesn't support -select=occurrence" in caplog.text
    assert not path.exists()


def _raw_samples(text: str) -> list[tuple[int, int, int, str]]:
    """(count, value, stack depth, graph node) per sample from ``pprof -raw``.

    pprof renumbers locations, so only the depth of each stack is compared.
    """
    lines = text.split("Samples:\n", 1)[1].split("Locations", 1)[0].splitlines()[1:]
    out = []
    for head, label in zip(lines[::2], lines[1::2]):
        values, _, locs = head.partition(":")
        count, value = (int(v) for v in values.split())
        name = label.strip().removeprefix("graph node::[").removesuffix("]")
        out.append((count, value, len(locs.split()), name))
    return out


def test_real_pprof_reads_our_file(capture: Any, tmp_path: Path) -> None:
    path = tmp_path / "code.pb.gz"
    prof = ours_for(capture)
    prof.profile_python(B().select(["micros"]).with_pprof_output(str(path)).build())
    profile = pb.PprofProfile.FromString(gzip.decompress(path.read_bytes()))
    strings = profile.string_table
    written = [
        (s.value[0], s.value[1], len(s.location_id), strings[s.label[0].str])
        for s in profile.sample
    ]
    assert sorted(_raw_samples(run_pprof("-raw", str(path)))) == sorted(written)
    total = sum(v for _, v, _, _ in written)
    top = run_pprof("-top", "-sample_index=micros", "-unit=us", str(path))
    assert f"of {total}us total" in top.replace(",", "")
    counts = run_pprof("-top", "-sample_index=0", str(path))
    assert f"of {len(written)} total" in counts
    traces = run_pprof("-traces", str(path))
    for _, _, _, name in written[:20]:
        assert name in traces
