"""Finding runs under logdirs (Keras' LOGDIR/train, several runs, depth, order),
Chrome trace JSON told apart, and file names that are not UTF-8 shown."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from tfprof_lite.base.shown import shown
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.formats.chrome_trace import chrome_trace_error, is_chrome_trace
from tfprof_lite.formats.xspace.read import load as xspace_load
from tfprof_lite.formats.xspace.read.runs import MAX_DEPTH, Run, find_runs, pick_run

TRACE = {"displayTimeUnit": "ns", "traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2}]}


def _run(logdir: Path, name: str, *hosts: str) -> Path:
    folder = logdir / "plugins" / "profile" / name
    folder.mkdir(parents=True)
    for host in hosts or ("vm",):
        (folder / f"{host}.xplane.pb").write_bytes(b"\x0a\x00")
    return folder


def _names(runs: list[Run]) -> list[tuple[str, str]]:
    return [(r.logdir, r.name) for r in runs]


def _chosen(path: Path, run: str | None = None) -> Run:
    chosen = pick_run(str(path), run).run
    assert chosen is not None
    return chosen


def test_keras_layout_and_the_newest_run(tmp_path: Path) -> None:
    old = _run(tmp_path / "train", "2026_01_01_00_00_00")
    new = _run(tmp_path / "train", "2026_01_02_00_00_00")
    (tmp_path / "validation").mkdir()
    pick = pick_run(str(tmp_path))
    assert pick.run is not None and pick.run.name == new.name
    assert pick.run.logdir == str(tmp_path / "train")
    assert pick.hosts == {"vm": str(new / "vm.xplane.pb")}
    assert [r.name for r in pick.others] == [old.name]
    # A run folder, its file, or --run read exactly that, with no others to tell.
    assert pick_run(str(old)).hosts == {"vm": str(old / "vm.xplane.pb")}
    assert pick_run(str(old)).run is None
    assert pick_run(str(old / "vm.xplane.pb")).hosts == {"vm": str(old / "vm.xplane.pb")}
    named = pick_run(str(tmp_path), old.name)
    assert named.hosts == {"vm": str(old / "vm.xplane.pb")}
    assert xspace_load.xspace_hosts(str(tmp_path)) == pick.hosts


def test_search_order_depth_and_what_is_skipped(tmp_path: Path) -> None:
    _run(tmp_path / "b" / "train", "r1")
    _run(tmp_path / "a", "r1")
    _run(tmp_path / ".hidden", "r9")
    _run(tmp_path / "x" / "y" / "z", "r2")  # MAX_DEPTH (3) levels down: found
    _run(tmp_path / "p" / "q" / "r" / "s", "r8")  # one level more: not
    assert MAX_DEPTH == 3
    runs = find_runs(str(tmp_path))
    assert _names(runs) == [
        (str(tmp_path / "a"), "r1"),
        (str(tmp_path / "b" / "train"), "r1"),
        (str(tmp_path / "x" / "y" / "z"), "r2"),
    ]
    assert _chosen(tmp_path).name == "r2"
    # Equal names: the first logdir found wins; --run of such a name is ambiguous.
    assert _chosen(tmp_path / "b").logdir == str(tmp_path / "b" / "train")
    with pytest.raises(InvalidInputError, match="run 'r1' is in several logdirs"):
        pick_run(str(tmp_path), "r1")
    # ... unless it is the run folder's path from the folder given.
    assert _chosen(tmp_path, os.path.join("a", "plugins", "profile", "r1")).logdir == str(
        tmp_path / "a"
    )


def test_plugins_and_profile_folders_and_errors(tmp_path: Path) -> None:
    run = _run(tmp_path, "r1", "a", "b")
    for folder in (tmp_path / "plugins", tmp_path / "plugins" / "profile"):
        assert sorted(pick_run(str(folder)).hosts) == ["a", "b"]
    (tmp_path / "plugins" / "profile" / "empty").mkdir()
    assert [r.name for r in find_runs(str(tmp_path))] == ["r1"]
    with pytest.raises(InvalidInputError, match=r"no run 'zz' with profiles \(runs: r1\)"):
        pick_run(str(tmp_path), "zz")
    empty = tmp_path / "nothing" / "plugins" / "profile" / "run1"
    empty.mkdir(parents=True)
    with pytest.raises(InvalidInputError, match="no \\*.xplane.pb here nor under plugins"):
        pick_run(str(tmp_path / "nothing"))
    assert run.is_dir()


def test_non_utf8_names_are_shown_escaped(tmp_path: Path) -> None:
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/d\xffir"))
    _run(odd, "r\xfe".encode("latin-1").decode("utf-8", "surrogateescape"), "h\udcfe")
    pick = pick_run(str(odd))
    (host,) = pick.hosts
    assert host == "h\\xfe" and os.path.isfile(pick.hosts[host])
    assert shown(str(odd)).endswith("/d\\xffir")
    assert shown("plain é") == "plain é"
    assert shown("lone \ud800") == "lone \\ud800"
    assert xspace_load.pick_host(pick.hosts, "h\udcfe", str(odd)) == pick.hosts


def test_chrome_traces_by_name_and_content(tmp_path: Path) -> None:
    text = json.dumps(TRACE).encode()
    assert is_chrome_trace("vm.trace.json.gz", gzip.compress(text))
    assert is_chrome_trace("anything", gzip.compress(text))  # gzip and JSON
    assert is_chrome_trace("anything", b"  " + text)  # traceEvents
    assert is_chrome_trace("x.bin", b'[{"ph": "X", "name": "a"}]')
    assert is_chrome_trace("t.json", b"{}")
    assert not is_chrome_trace("t.json", b"\x0a\x02ab")  # a proto named .json
    assert not is_chrome_trace("profile_4", b"\x0a\x02{a")
    assert not is_chrome_trace("x.gz", gzip.compress(b"\x0a\x02ab"))
    assert not is_chrome_trace("x.json.gz", b"\x1f\x8b broken")


def test_chrome_trace_errors_say_what_to_pass(tmp_path: Path) -> None:
    run = _run(tmp_path, "r1", "vm")
    trace = run / "vm.trace.json.gz"
    trace.write_bytes(gzip.compress(json.dumps(TRACE).encode()))
    err = chrome_trace_error(str(trace))
    assert str(err) == (
        f"{trace}: a Chrome trace (JSON) for trace viewers, not a profile; "
        f"pass the XSpace beside it instead: {run / 'vm.xplane.pb'}"
    )
    _run(tmp_path / "two", "r1", "a", "b")
    two = tmp_path / "two" / "plugins" / "profile" / "r1"
    (two / "c.trace.json.gz").write_bytes(trace.read_bytes())
    assert str(chrome_trace_error(str(two / "c.trace.json.gz"))).endswith(
        f"pass its run folder instead: {two} (2 hosts' *.xplane.pb)"
    )
    lone = tmp_path / "timeline.json"
    lone.write_text(json.dumps(TRACE))
    assert str(chrome_trace_error(str(lone))).endswith(
        "pass the profiler's XSpace instead: a *.xplane.pb file, its run folder "
        "(plugins/profile/<run>/) or the TensorBoard logdir"
    )
    assert chrome_trace_error(str(run / "vm.xplane.pb")) is None
    assert chrome_trace_error(str(tmp_path)) is None  # a directory is not opened
    assert chrome_trace_error(str(tmp_path / "missing.json")) is None
