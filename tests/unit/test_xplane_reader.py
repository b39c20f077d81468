"""The XSpace reader: columns of hand-made files (both timestamp conventions,
every stat kind) and of the real JAX captures, and one-line errors on bad bytes."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from tests import xspace_files
from tests.xspacecols import column_differences, require_xspace_native
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.formats.xspace.wire import columns as xcols
from tfprof_lite.formats.xspace.wire import decode as xplane
from tfprof_lite.formats.xspace.wire import native as xplane_native
from tfprof_lite.proto import messages as pb

START = 1_700_000_000_000_000_000


@pytest.mark.parametrize("relative", [True, False])
def test_both_timestamp_conventions_give_the_same_absolute_starts(relative: bool) -> None:
    cols = xplane.decode_xspace(xspace_files.hand_space(relative).SerializeToString())
    assert cols.relative is relative
    starts = cols.event_start_ns().tolist()
    assert starts[:2] == [START + 1_000, START + 1_000 + 1_000]
    # The kernel line starts 2 ns later and its event 1.5 ns after that (floored).
    assert starts[3] == START + 1_000 + 2 + 1
    assert int(cols.event_start_ps[3]) - int(cols.event_start_ps[0]) == 3_500


def test_stats_are_resolved_by_kind() -> None:
    cols = xplane.decode_xspace(xspace_files.hand_space().SerializeToString())
    assert cols.event_stat_dict(0) == {"_r": 1, "step_num": 3}
    assert cols.event_stat_dict(1) == {"big": (1 << 64) - 5}
    kernel = cols.event_stat_dict(3)
    assert kernel["kernel_details"].startswith("regs:32 static_shared:0")
    assert kernel["occ"] == 0.5
    assert kernel["note"] == "long text"
    assert kernel["blob"] == b"\x00\x01"
    assert kernel[""] == -2  # a stat whose metadata is missing keeps its value
    kinds = cols.event_stats.kind[cols.event_stat_at[3] : cols.event_stat_at[4]].tolist()
    assert kinds == [xcols.KIND_REF, xcols.KIND_DOUBLE, xcols.KIND_COMPRESSED,
                     xcols.KIND_BYTES, xcols.KIND_INT64]  # fmt: skip
    gpu = cols.plane_name.index("/device:GPU:0")
    assert cols.plane_stat_dict(gpu) == {"core_count": 132}


def test_lines_events_and_metadata_tables() -> None:
    cols = xplane.decode_xspace(xspace_files.hand_space().SerializeToString())
    assert cols.hostnames == ["box"]
    assert cols.line_name == ["python", "empty", "Stream #14(Compute)"]
    assert cols.line_event_at.tolist() == [0, 3, 3, 4]
    assert cols.line_id.tolist() == [7, 8, 14]
    assert [cols.event_name(e) for e in range(4)] == [
        "train",
        "dense/MatMul:MatMul",
        "",
        "fusion_1",
    ]
    assert cols.event_meta[2] == -1  # no metadata of id 99
    assert cols.event_occurrences.tolist() == [0, 0, 4, 0]
    # Metadata rows per plane, sorted by id.
    assert cols.meta_id.tolist() == [1, 2, 5]
    assert cols.meta_display_name[0] == "MatMul"
    assert cols.event_plane().tolist() == [0, 0, 0, 1]
    assert "kernel_details" in cols.stat_meta_name


def test_bad_compressed_string_is_one_line() -> None:
    space = xspace_files.hand_space()
    stat = space.planes[1].lines[0].events[0].stats[2]
    stat.compressed_str_value = b"not gzip"
    with pytest.raises(InvalidInputError, match="compressed string stat does not decompress"):
        xplane.decode_xspace(space.SerializeToString())


@pytest.mark.parametrize("cut", [1, 17, 1000])
def test_truncated_file_is_one_line(cut: int) -> None:
    raw = xspace_files.hand_space().SerializeToString()
    with pytest.raises(InvalidInputError, match=r"XSpace|not") as err:
        xplane.decode_xspace(raw[: len(raw) - cut], "f.xplane.pb")
    assert "\n" not in str(err.value)
    assert str(err.value).startswith("f.xplane.pb: ")


def test_other_messages_are_named() -> None:
    profile = pb.ProfileProto()
    profile.nodes[1].name = "a/b"
    profile.has_trace = True
    with pytest.raises(InvalidInputError, match="looks like a ProfileProto"):
        xplane.decode_xspace(profile.SerializeToString(), "p")
    graph = pb.GraphDef()
    graph.node.add(name="a", op="Const")
    with pytest.raises(InvalidInputError, match="but it looks like a GraphDef"):
        xplane.decode_xspace(graph.SerializeToString(), "g")
    with pytest.raises(InvalidInputError, match="no named plane"):
        xplane.decode_xspace(b"", "empty")


def test_empty_space_and_planes_without_lines() -> None:
    space = pb.XSpace()
    space.planes.add(name="/host:CPU")
    cols = xplane.decode_xspace(space.SerializeToString())
    assert len(cols.event_line) == 0 and cols.line_event_at.tolist() == [0]
    assert cols.event_start_ns().tolist() == []
    assert cols.origin_ns == 0


@pytest.mark.parametrize("case", xspace_files.jax_cases())
def test_real_jax_capture(case: str) -> None:
    cols = xplane.decode_xspace(xspace_files.jax_file(case).read_bytes())
    assert cols.relative and cols.origin_ns > 1_700_000_000 * 10**9
    train = cols.meta_name.index("train")
    steps = np.nonzero(cols.event_meta == train)[0]
    assert [cols.event_stat_dict(int(e))["step_num"] for e in steps] == list(range(22, 30))
    gpu = cols.plane_name.index("/device:GPU:0")
    on_gpu = np.nonzero(cols.event_plane() == gpu)[0]
    details = [cols.event_stat_dict(int(e)).get("kernel_details", "") for e in on_gpu]
    assert sum(d.startswith("regs:") for d in details) > 100
    # Every GPU event starts inside the profiling session.
    assert np.all(cols.event_start_ps[on_gpu] > 0)
    meta = cols.plane_name.index("/host:metadata")
    protos = [cols.meta_stat_dict(m) for m in np.nonzero(cols.meta_plane == meta)[0]]
    assert all(isinstance(p["Hlo Proto"], bytes) for p in protos) and protos


def test_compressed_stat_roundtrip_on_real_file() -> None:
    space = pb.XSpace()
    space.ParseFromString(xspace_files.jax_file("jax_h100_mlp").read_bytes())
    plane = next(p for p in space.planes if p.name == "/device:GPU:0")
    event = plane.lines[0].events[0]
    text = next(s for s in event.stats if s.WhichOneof("value") == "ref_value")
    name = plane.stat_metadata[text.ref_value].name
    text.ClearField("ref_value")
    text.compressed_str_value = gzip.compress(name.encode())
    cols = xplane.decode_xspace(space.SerializeToString())
    first = int(np.nonzero(cols.event_plane() == cols.plane_name.index("/device:GPU:0"))[0][0])
    assert name in cols.event_stat_dict(first).values()


def test_times_beyond_64_bits_are_one_line() -> None:
    space = pb.XSpace()
    plane = space.planes.add(name="/host:CPU")
    plane.event_metadata[1].name = "a:B"
    line = plane.lines.add(id=1, timestamp_ns=2**62)
    line.events.add(metadata_id=1, offset_ps=2**62, duration_ps=1)
    plane.lines.add(id=2, timestamp_ns=-(2**62)).events.add(metadata_id=1)
    with pytest.raises(InvalidInputError, match="beyond 64 bits of picoseconds"):
        xplane.decode_xspace(space.SerializeToString(), "big")


@pytest.mark.parametrize("pure", [False, True])
def test_event_stat_filter_keeps_the_named_stats(
    pure: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if pure:
        monkeypatch.setenv("TFPROF_LITE_PURE_PYTHON", "1")
    data = xspace_files.jax_file("jax_h100_mlp").read_bytes()
    whole = xplane.decode_xspace(data)
    keep = {"kernel_details", "step_num", "no_such_stat"}
    cut = xplane.decode_xspace(data, event_stats=keep)
    assert 0 < len(cut.event_stats) < len(whole.event_stats) // 3
    assert {cut.strings[k] for k in cut.event_stats.key.tolist()} == keep - {"no_such_stat"}
    assert len(cut.strings) < len(whole.strings)
    for event in range(0, len(whole.event_line), 7):
        kept = {k: v for k, v in whole.event_stat_dict(event).items() if k in keep}
        assert cut.event_stat_dict(event) == kept
    assert [cut.plane_stat_dict(p) for p in range(len(cut.plane_name))] == [
        whole.plane_stat_dict(p) for p in range(len(whole.plane_name))
    ]
    assert cut.meta_stat_dict(3) == whole.meta_stat_dict(3)
    assert cut.event_start_ps.tolist() == whole.event_start_ps.tolist()


@pytest.mark.parametrize("pure", [False, True])
def test_decoding_a_file_gives_the_columns_of_its_bytes(
    pure: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if pure:
        monkeypatch.setenv("TFPROF_LITE_PURE_PYTHON", "1")
    file = xspace_files.jax_file("jax_h100_mlp")
    for keep in (None, ("kernel_details", "tf_op")):
        got = xplane.decode_xspace_file(str(file), event_stats=keep)
        want = xplane.decode_xspace(file.read_bytes(), event_stats=keep)
        assert column_differences(got, want) == []


def test_a_declined_file_is_read_again_for_the_pure_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # About the native path: run it even in the pure-path rerun.
    monkeypatch.delenv("TFPROF_LITE_PURE_PYTHON", raising=False)
    require_xspace_native()
    space = xspace_files.hand_space()
    data = space.SerializeToString() + b"\xa8\x06\x01"  # XSpace field 101: unknown
    path = tmp_path / "unknown.xplane.pb"
    path.write_bytes(data)
    with open(path, "rb") as handle:
        assert xplane_native.native_file_columns(handle.fileno(), len(data)) is None
    got = xplane.decode_xspace_file(str(path))
    assert column_differences(got, xplane.decode_xspace(space.SerializeToString())) == []


@pytest.mark.parametrize("pure", [False, True])
def test_decoding_a_file_refuses_as_the_bounded_reader(
    pure: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if pure:
        monkeypatch.setenv("TFPROF_LITE_PURE_PYTHON", "1")
    empty = tmp_path / "empty.xplane.pb"
    empty.write_bytes(b"")
    with pytest.raises(
        InvalidInputError, match=r"empty\.xplane\.pb: the file is empty, expected an XSpace"
    ):
        xplane.decode_xspace_file(str(empty))
    with pytest.raises(InvalidInputError, match=r"missing\.xplane\.pb: cannot read \(No such file"):
        xplane.decode_xspace_file(str(tmp_path / "missing.xplane.pb"))
    with pytest.raises(InvalidInputError, match="is a directory, expected an XSpace"):
        xplane.decode_xspace_file(str(tmp_path))
    file = xspace_files.jax_file("jax_h100_mlp")
    limit = r"over the 1 KiB input limit for an XSpace \(\*\.xplane\.pb\); raise it"
    with pytest.raises(InvalidInputError, match=limit):
        xplane.decode_xspace_file(str(file), limit="1KiB")
    bad = tmp_path / "bad.xplane.pb"
    bad.write_bytes(file.read_bytes()[:1000])
    with pytest.raises(InvalidInputError, match=r"bad\.xplane\.pb: "):
        xplane.decode_xspace_file(str(bad))


def test_a_failed_read_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # About the native path: run it even in the pure-path rerun.
    monkeypatch.delenv("TFPROF_LITE_PURE_PYTHON", raising=False)
    require_xspace_native()

    def failing(fd: int, size: int, keep: object = None) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(xplane_native, "native_file_columns", failing)
    with pytest.raises(InvalidInputError, match=r"mlp.*: cannot read \(Input/output error\)$"):
        xplane.decode_xspace_file(str(xspace_files.jax_file("jax_h100_mlp")))


def _wire_offsets(space: pb.XSpace) -> tuple[list[int], list[int]]:
    events = [e for p in space.planes for line in p.lines for e in line.events]
    return [e.offset_ps for e in events], [e.num_occurrences for e in events]


@pytest.mark.parametrize("pure", [False, True])
@pytest.mark.parametrize("relative", [True, False])
def test_offsets_and_occurrences_are_those_of_the_file(
    pure: bool, relative: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Derived from the starts (offsets) and kept sparse (occurrences), they are
    still every event's own values, whichever timestamp convention."""
    if pure:
        monkeypatch.setenv("TFPROF_LITE_PURE_PYTHON", "1")
    space = xspace_files.hand_space(relative)
    space.planes[0].lines[0].events[1].offset_ps = -7  # before its line's start
    cols = xplane.decode_xspace(space.SerializeToString())
    assert (cols.event_offset_ps.tolist(), cols.event_occurrences.tolist()) == _wire_offsets(space)
    assert cols.event_occurrence_rows.tolist() == [2]
    real = pb.XSpace()
    real.ParseFromString(xspace_files.jax_file("jax_h100_mlp").read_bytes())
    cols = xplane.decode_xspace(real.SerializeToString())
    offsets, occurrences = _wire_offsets(real)
    assert cols.event_offset_ps.tolist() == offsets and not any(occurrences)
    assert len(cols.event_occurrence_rows) == 0
