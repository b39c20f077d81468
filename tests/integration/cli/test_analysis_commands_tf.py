"""``overview``, ``timeline`` and ``pprof`` on profiles of real TensorFlow sessions.

Inputs: the profile tfprof_lite saves for the ``dense_net`` and ``cnn`` captures
(a file, and a ProfileContext-style directory of ``profile_<step>`` files), the
ProfileProto TensorFlow's own ``Profiler.serialize_to_string()`` writes, and the
raw RunMetadata files. The commands run through click's ``CliRunner``; error
cases go through :func:`tfprof_lite.cli.main`, which turns errors into one line.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import tfprof_lite
from tests.integration.cli.runner import fails, invoke
from tfprof_lite.analysis.overview import TOP_OPS_TITLE, overview
from tfprof_lite.proto import messages as pb

pytestmark = pytest.mark.tf
tf_models = pytest.importorskip("tests.integration.tf_models")
tf_oracle = pytest.importorskip("tests.integration.tf_oracle")
from tests.pprof_tool import run_pprof as _run_pprof  # noqa: E402

B = tfprof_lite.ProfileOptionBuilder


@dataclass(frozen=True)
class Saved:
    """One capture saved to disk in every form the commands read."""

    name: str
    profile: Path  # tfprof_lite's profile_<last step>, in ``directory``
    directory: Path
    tf_profile: Path  # written by TensorFlow's own profiler
    run_metas: tuple[Path, ...]  # file i holds the i-th traced step
    steps: tuple[int, ...]


def _save(name: str, root: Path) -> Saved:
    capture = tf_models.ALL_CAPTURES[name]()
    prof = tfprof_lite.Profiler(capture.graph)
    metas = []
    for index, (step, data) in enumerate(capture.run_metas):
        prof.add_step(step, data)
        meta = root / f"run_meta_{index}.pb"
        meta.write_bytes(data)
        metas.append(meta)
    steps = tuple(step for step, _ in capture.run_metas)
    directory = root / "tfprof_out"
    directory.mkdir()
    path = directory / f"profile_{max(steps)}"
    prof._write_profile(path)
    tf_path = root / "tf_profile"
    tf_path.write_bytes(tf_oracle.oracle_for(capture).serialized_profile(canonical=False))
    return Saved(name, path, directory, tf_path, tuple(metas), steps)


@pytest.fixture(scope="module", params=["dense_net", "cnn"])
def saved(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Saved:
    return _save(request.param, tmp_path_factory.mktemp(request.param))


# ---------------------------------------------------------------- overview
@pytest.mark.parametrize("which", ["profile", "directory", "tf_profile"])
def test_overview_equals_the_analysis(saved: Saved, which: str) -> None:
    path = getattr(saved, which)
    model = tfprof_lite.Profiler.load(saved.tf_profile if which == "tf_profile" else saved.profile)
    expected = overview(model.model)
    text = invoke("overview", path).output
    assert text == expected.to_text()
    assert f"steps: {len(saved.steps)}," in text
    doc = json.loads(invoke("overview", path, "--json").output)
    assert doc == json.loads(json.dumps(expected.to_dict()))
    assert doc["steps"] == len(saved.steps)
    assert doc["avg_step_micros"] == expected.avg_step_micros > 0
    assert [op["op"] for op in doc["top_ops"]] == [op.op for op in expected.top_ops]
    assert [op["flops_per_sec"] for op in doc["top_ops"]] == [
        op.flops_per_sec for op in expected.top_ops
    ]
    assert len(doc["top_ops"]) == 10


def test_overview_top_and_raw_protos(saved: Saved) -> None:
    doc = json.loads(invoke("overview", saved.profile, "--top", 3, "--json").output)
    assert len(doc["top_ops"]) == 3
    raw = invoke("overview", "--run-meta", ",".join(map(str, saved.run_metas))).output
    assert raw.startswith(f"steps: {len(saved.steps)}, average step time: ")
    assert TOP_OPS_TITLE in raw


# ---------------------------------------------------------------- timeline
def _events(path: Path) -> list[dict[str, Any]]:
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data = gzip.decompress(data)
    events: list[dict[str, Any]] = json.loads(data)["traceEvents"]
    return events


def test_timeline_has_every_step(saved: Saved, tmp_path: Path) -> None:
    target = tmp_path / "steps.json.gz"
    out = invoke("timeline", saved.profile, "-o", target).output
    events = _events(target)
    assert f"Wrote {target} ({len(events)} events, {len(saved.steps)} steps)" in out
    slices = {e["args"]["step"] for e in events if e.get("cat") == "Step"}
    assert slices == set(saved.steps)
    ops_per_step = {s: 0 for s in saved.steps}
    for event in events:
        if event.get("cat") == "Op":
            ops_per_step[event["args"]["step"]] += 1
    assert all(count > 10 for count in ops_per_step.values()), ops_per_step
    processes = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert "Steps" in processes and any("cpu:0" in p for p in processes)


def test_timeline_one_step_from_a_directory(saved: Saved, tmp_path: Path) -> None:
    step = saved.steps[-1]
    target = tmp_path / "one.json"
    invoke("timeline", saved.directory, "--step", step, "-o", target)
    events = _events(target)
    assert {e["args"]["step"] for e in events if e.get("ph") == "X"} == {step}


def test_timeline_memory_and_dataflow_match_tensorflow(saved: Saved, tmp_path: Path) -> None:
    from tensorflow.python.client import timeline as tf_timeline

    target = tmp_path / "mem.json"
    metas = ",".join(map(str, saved.run_metas))
    invoke(
        "timeline",
        "--run-meta",
        metas,
        "--step",
        1,
        "--show-memory",
        "--show-dataflow",
        "-o",
        target,
    )
    meta = tf_models.ALL_CAPTURES[saved.name]().run_metadata(1)
    theirs = tf_timeline.Timeline(meta.step_stats).generate_chrome_trace_format(
        show_dataflow=True, show_memory=True
    )
    assert json.loads(target.read_text()) == json.loads(theirs)
    phases = {e["ph"] for e in _events(target)}
    assert {"X", "C", "N", "D"} <= phases  # ops, allocator counters, tensors


# ---------------------------------------------------------------- pprof
def test_pprof_code_view_is_tensorflows(saved: Saved, tmp_path: Path) -> None:
    mine = tmp_path / "code.pb.gz"
    out = invoke("pprof", saved.tf_profile, "--all-frames", "-o", mine).output
    assert "code view, all frames, tfprof format" in out
    theirs = tmp_path / "tf.pb.gz"
    oracle = tf_oracle.oracle_for(tf_models.ALL_CAPTURES[saved.name]())
    oracle.profiler.profile_python(B().select(["micros"]).with_pprof_output(str(theirs)).build())
    assert gzip.decompress(mine.read_bytes()) == gzip.decompress(theirs.read_bytes())
    profile = pb.PprofProfile.FromString(gzip.decompress(mine.read_bytes()))
    total = sum(s.value[1] for s in profile.sample)
    top = _run_pprof("-top", "-sample_index=micros", "-unit=us", str(mine))
    assert f"of {total}us total" in top.replace(",", "")


@pytest.mark.parametrize("view", ["scope", "op"])
def test_pprof_extended_views_read_by_pprof(saved: Saved, view: str, tmp_path: Path) -> None:
    path = tmp_path / f"{view}.pb.gz"
    step = saved.steps[0]
    invoke(
        "pprof",
        saved.profile,
        "--view",
        view,
        "--select",
        "micros,bytes",
        "--step",
        step,
        "-o",
        path,
    )
    profile = pb.PprofProfile.FromString(gzip.decompress(path.read_bytes()))
    strings = profile.string_table
    assert [strings[t.type] for t in profile.sample_type] == ["count", "bytes", "micros"]
    raw = _run_pprof("-raw", str(path))
    assert "count/count bytes/bytes micros/microseconds" in raw
    micros = sum(s.value[2] for s in profile.sample)
    nbytes = sum(s.value[1] for s in profile.sample)
    assert micros > 0 and nbytes > 0
    top = _run_pprof("-top", "-sample_index=micros", "-unit=us", str(path))
    assert f"of {micros}us total" in top.replace(",", "")
    by_bytes = _run_pprof("-top", "-sample_index=bytes", "-unit=B", str(path))
    assert f"of {nbytes}B total" in by_bytes.replace(",", "")
    totals = _step_totals(saved.profile, view, step, tmp_path)
    assert (micros, nbytes) == totals


def _step_totals(profile: Path, view: str, step: int, tmp_path: Path) -> tuple[int, int]:
    """The report's total time and requested bytes of ``step`` (JSON table output)."""
    prof = tfprof_lite.Profiler.load(profile)
    table = tmp_path / "t.json"
    opts = dict(
        B().select(["micros", "bytes"]).with_step(step).build(), output=f"json:outfile={table}"
    )
    getattr(prof, "profile_name_scope" if view == "scope" else "profile_operations")(opts)
    rows = json.loads(table.read_text())["rows"]
    if view == "op":
        return sum(r["exec_micros_self"] for r in rows), sum(
            r["requested_bytes_self"] for r in rows
        )
    return rows[0]["exec_micros_total"], rows[0]["requested_bytes_total"]


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize("command", ["overview", "timeline", "pprof"])
def test_missing_and_corrupt_files(
    command: str, saved: Saved, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = [] if command == "overview" else ["-o", tmp_path / "out"]
    missing = tmp_path / "nothing" / "profile_3"
    err = fails(capsys, command, missing, *out)
    assert err == f"tfprof-lite: error: {missing}: cannot read (No such file or directory)\n"
    corrupt = tmp_path / "profile_5"
    corrupt.write_bytes(saved.profile.read_bytes()[:-40] + b"\xff" * 7)
    err = fails(capsys, command, corrupt, *out)
    assert err.startswith(f"tfprof-lite: error: {corrupt}: ")
    assert "corrupt or truncated" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["timeline", "pprof"])
def test_missing_step(
    command: str, saved: Saved, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = fails(capsys, command, saved.profile, "--step", 999, "-o", tmp_path / "x")
    have = ", ".join(map(str, sorted(saved.steps)))
    assert (
        err == f"tfprof-lite: error: {saved.profile}: no step 999 in this profile (steps: {have})\n"
    )
    err = fails(capsys, command, saved.directory, "--step", 999, "-o", tmp_path / "x")
    assert "no profile_999 here" in err
    assert not (tmp_path / "x").exists()
