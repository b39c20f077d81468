"""Profiler.load and the command line on XSpace files, run directories and
logdirs; several hosts; one-line errors on bad input."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests import xspace_files
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.profiler import Profiler
from tfprof_lite.proto import messages as pb

MLP = "jax_h100_mlp"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """:func:`tests.xspace_files.two_run_logdir` in a module's temporary folder."""
    return xspace_files.two_run_logdir(tmp_path_factory.mktemp("xspace_logdir"))


def test_load_file_run_dir_and_logdir(logdir: Path) -> None:
    file = xspace_files.jax_file(MLP)
    by_file = Profiler.load(file)
    assert by_file.model.sorted_steps() == list(range(22, 30))
    assert by_file.model.steps_source == "step markers (train)"
    by_dir = Profiler.load(file.parent)
    newest = Profiler.load(logdir)
    assert by_dir.model.names == by_file.model.names == newest.model.names
    old = Profiler.load(logdir, run="2020_old", host="b")
    assert old.model.names != by_file.model.names
    assert Profiler.load(file.read_bytes()).model.names == by_file.model.names


def test_content_detection_without_the_suffix(tmp_path: Path) -> None:
    renamed = tmp_path / "capture.bin"
    shutil.copy(xspace_files.jax_file(MLP), renamed)
    assert Profiler.load(renamed).model.sorted_steps() == list(range(22, 30))


def test_bad_inputs_are_one_line(tmp_path: Path, logdir: Path) -> None:
    raw = xspace_files.jax_file(MLP).read_bytes()
    cut = tmp_path / "cut.xplane.pb"
    cut.write_bytes(raw[: len(raw) // 2])
    profile = pb.ProfileProto(has_trace=True)
    profile.nodes[1].name = "a/b"
    as_xspace = tmp_path / "p.xplane.pb"
    as_xspace.write_bytes(profile.SerializeToString())
    empty_run = tmp_path / "logdir" / "plugins" / "profile" / "run1"
    empty_run.mkdir(parents=True)
    no_lines = pb.XSpace()
    no_lines.planes.add(name="/host:CPU")
    no_events = tmp_path / "none.xplane.pb"
    no_events.write_bytes(no_lines.SerializeToString())
    cases = {
        cut: "not a readable XSpace (truncated or corrupt)",
        as_xspace: "expected an XSpace (*.xplane.pb), but it looks like a ProfileProto",
        tmp_path / "logdir": "no *.xplane.pb here nor under plugins/profile/<run>/",
        no_events: "the profile holds no events (planes: /host:CPU)",
    }
    for path, message in cases.items():
        with pytest.raises(InvalidInputError, match=re.escape(message)) as err:
            Profiler.load(path)
        assert "\n" not in str(err.value)
    with pytest.raises(InvalidInputError, match="no run 'nope' with profiles"):
        Profiler.load(logdir, run="nope")
    with pytest.raises(InvalidInputError, match=r"several hosts \(a, b\); pass host=NAME"):
        Profiler.load(logdir, run="2020_old")
    with pytest.raises(InvalidInputError, match=r"no host 'c' in this profile \(hosts: a, b\)"):
        Profiler.load(logdir, run="2020_old", host="c")


def test_cluster_merge_takes_a_run_of_several_hosts(logdir: Path) -> None:
    from tfprof_lite.cluster import merge

    run = logdir / "plugins" / "profile" / "2020_old"
    merged = merge([run])
    tasks = merged.cluster.tasks  # type: ignore[attr-defined]
    assert len(tasks) == 2
    one = Profiler.load(run, host="a")
    assert len(merged.model.names) >= len(one.model.names)


def test_an_xspace_given_as_another_message_is_named() -> None:
    import tfprof_lite

    raw = xspace_files.jax_file(MLP).read_bytes()
    with pytest.raises(
        InvalidInputError, match=r"looks like an XSpace; load it with Profiler\.load"
    ):
        tfprof_lite.Profiler().add_step(0, raw)


def test_the_decoded_event_stats_cover_what_the_conversion_reads() -> None:
    from tfprof_lite.formats.xspace.read import events as xspace_events
    from tfprof_lite.formats.xspace.read import memory as xspace_memory
    from tfprof_lite.formats.xspace.read.load import EVENT_STATS

    read = {*xspace_events._TEXT_STATS, *xspace_events._INT_STATS}
    read |= {*xspace_memory._INT_STATS, *xspace_memory._TEXT_STATS}
    assert read == EVENT_STATS


def test_loading_decodes_only_the_event_stats_it_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    from tfprof_lite.formats.xspace.read import conversion as xspace
    from tfprof_lite.formats.xspace.read import load as xspace_load

    seen = []
    real = xspace.plan_steps

    def spy(cols, **kwargs):  # type: ignore[no-untyped-def]
        seen.append({cols.strings[k] for k in cols.event_stats.key.tolist()})
        return real(cols, **kwargs)

    monkeypatch.setattr(xspace_load, "plan_steps", spy)
    file = xspace_files.jax_file(MLP)
    whole = Profiler.load(file)
    assert seen and seen[0] <= xspace_load.EVENT_STATS and "scope_range_id" not in seen[0]
    assert Profiler.load(file.read_bytes()).model.names == whole.model.names
    assert len(seen) == 2 and seen[1] == seen[0]


def test_the_native_path_never_holds_the_file_as_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the native decoder the file is read by the decoder itself (into memory
    it gives back line by line), never into one ``bytes`` held next to the columns."""
    from tfprof_lite.base import reading
    from tfprof_lite.formats.xspace.wire import decode as xplane
    from tfprof_lite.formats.xspace.wire import native as xplane_native

    if not xplane_native.available():
        pytest.skip("the native XSpace decoder is not built")
    read: list[str] = []
    real = reading.read_input

    def spy(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        read.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(xplane, "read_input", spy)
    file = xspace_files.jax_file(MLP)
    assert Profiler.load(file).model.sorted_steps() == list(range(22, 30))
    assert read == []


def test_the_event_table_shares_the_decoded_starts() -> None:
    """The per-event starts are the decoded column, not a copy (8 bytes per event)."""
    import numpy as np

    from tfprof_lite.formats.xspace.read.events import event_table
    from tfprof_lite.formats.xspace.wire.decode import decode_xspace

    cols = decode_xspace(xspace_files.jax_file(MLP).read_bytes())
    assert np.shares_memory(event_table(cols).start, cols.event_start_ps)
