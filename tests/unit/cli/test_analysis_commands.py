"""``overview``, ``timeline``, ``pprof`` and ``hlo`` on synthetic inputs: options,
usage errors (exit 2) and the error paths the real-profile tests cannot reach."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.unit.cli import profiles
from tests.unit.cli.conftest import Runner
from tests.unit.test_xla_dot import XLA_STYLE
from tfprof_lite import Profiler
from tfprof_lite.analysis.overview import overview


def _one_line(err: str) -> None:
    assert err.startswith("tfprof-lite: error: ") and err.count("\n") == 1, err


def test_overview_text_and_json(run: Runner, profile: Path) -> None:
    expected = overview(Profiler.load(profile).model, 2)
    result = run("overview", profile, "--top", 2)
    assert (result.code, result.out) == (0, expected.to_text())
    doc = json.loads(run("overview", profile, "--json").out)
    assert doc["steps"] == 3 and doc["top_ops"][0]["op"] == "MatMul"


def test_overview_of_raw_protos(run: Runner, data_dir: Path) -> None:
    raw = data_dir / "raw"
    result = run("overview", "--graph", raw / "graph.pb", "--run-meta", raw / "run_meta_0.pb")
    assert result.code == 0, result.err
    assert result.out.startswith("steps: 1, average step time: ")


def test_overview_rejects_query_options(run: Runner, profile: Path) -> None:
    result = run("overview", profile, "-max_depth", 3)
    assert result.code == 2
    _one_line(result.err)


def test_timeline_needs_steps(run: Runner, data_dir: Path, tmp_path: Path) -> None:
    result = run("timeline", "--graph", data_dir / "raw" / "graph.pb", "-o", tmp_path / "t.json")
    assert result.code == 1
    assert "no traced steps in this profile" in result.err
    _one_line(result.err)


def test_timeline_memory_flags(run: Runner, data_dir: Path, profile: Path, tmp_path: Path) -> None:
    raw = data_dir / "raw"
    metas = f"{raw / 'run_meta_0.pb'},{raw / 'run_meta_1.pb'}"
    target = tmp_path / "m.json.gz"
    ok = run("timeline", "--run-meta", metas, "--step", 1, "--show-memory", "-o", target)
    assert ok.code == 0, ok.err
    assert "step 1, with memory" in ok.out
    phases = {e["ph"] for e in json.loads(gzip.decompress(target.read_bytes()))["traceEvents"]}
    assert {"X", "C", "N", "D"} <= phases
    for args in (
        ("timeline", profile, "--show-memory"),  # a saved profile has no tensor records
        ("timeline", "--run-meta", metas, "--show-dataflow"),  # two steps, no --step
    ):
        result = run(*args, "-o", tmp_path / "x.json")
        assert result.code == 2
        _one_line(result.err)
    missing = run("timeline", "--run-meta", metas, "--step", 5, "--show-memory")
    assert missing.code == 1 and "no step 5" in missing.err
    assert not (tmp_path / "x.json").exists()


def test_pprof_usage_errors(run: Runner, profile: Path, tmp_path: Path) -> None:
    for args in (
        ("--select", "micros,occurrence"),
        ("--view", "graph"),
    ):
        result = run("pprof", profile, *args, "-o", tmp_path / "p.pb.gz")
        assert result.code == 2, result.err
        _one_line(result.err)
    assert not (tmp_path / "p.pb.gz").exists()


def test_pprof_code_view_needs_traces(run: Runner, tmp_path: Path) -> None:
    prof = Profiler(profiles.graph_def())
    prof.add_step(0, profiles.run_meta(0))
    path = tmp_path / "profile_0"
    prof._write_profile(path)
    result = run("pprof", path, "-o", tmp_path / "p.pb.gz")
    assert result.code == 1
    assert result.err == (
        f"tfprof-lite: error: {path}: no code traces in this profile (the code view needs "
        "them); use --view scope or --view op\n"
    )
    assert run("pprof", path, "--view", "op", "-o", tmp_path / "p.pb.gz").code == 0


def test_pprof_filters_and_extended(run: Runner, profile: Path, tmp_path: Path) -> None:
    target = tmp_path / "p.pb.gz"
    result = run("pprof", profile, "--extended", "-account_type_regexes", "MatMul", "-o", target)
    assert result.code == 0, result.err
    assert "code view, user code, extended format" in result.out
    empty = run("pprof", profile, "--view", "op", "-account_type_regexes", "Nope", "-o", target)
    assert empty.code == 1 and "nothing to write" in empty.err


@pytest.fixture
def dumps(tmp_path: Path) -> Path:
    directory = tmp_path / "dumps"
    directory.mkdir()
    for module_id, suffix in ((1, "2"), (4, "7"), (5, "1")):
        cluster = "cluster_0" if module_id == 5 else "cluster_1"
        name = f"module_{module_id:04d}.{cluster}__X_.{suffix}.cpu_after_optimizations.dot"
        (directory / name).write_text(XLA_STYLE, encoding="utf-8")
    (directory / "module_0001.cluster_1__X_.2.before_optimizations.txt").write_text("HloModule")
    return directory


def test_hlo_lists_and_picks_modules(run: Runner, dumps: Path, tmp_path: Path) -> None:
    listed = run("hlo", dumps)
    assert listed.code == 0
    assert [line.split()[:2] for line in listed.out.splitlines()[1:]] == [
        ["module_0001", "cluster_1"],
        ["module_0004", "cluster_1"],
        ["module_0005", "cluster_0"],
    ]
    assert "before_optimizations, cpu_after_optimizations  dot, txt" in listed.out
    target = tmp_path / "m.dot"
    for name in ("cluster_0", "5", "0005", "module_0005", "cluster_0__X_.1"):
        result = run("hlo", dumps, "--module", name, "--format", "dot", "-o", target)
        assert result.code == 0, result.err
        assert "module_0005 cluster_0, cpu_after_optimizations" in result.out
    assert target.read_text().startswith("digraph")


def test_hlo_ambiguous_and_missing_stage(run: Runner, dumps: Path) -> None:
    ambiguous = run("hlo", dumps, "--module", "cluster_1", "--format", "dot")
    assert ambiguous.code == 1
    assert "(module_0001, module_0004); pick one with --module module_0004" in ambiguous.err
    _one_line(ambiguous.err)
    no_stage = run("hlo", dumps, "-m", 4, "--stage", "before", "--format", "dot")
    assert no_stage.code == 1 and "module_0004 has no before dump" in no_stage.err
    no_dot = run("hlo", dumps, "-m", 1, "--stage", "before", "--format", "dot")
    assert no_dot.code == 1 and "no .dot dump of this module" in no_dot.err
    _one_line(no_dot.err)


def test_hlo_unwritable_output(run: Runner, dumps: Path, tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "dir" / "m.dot"
    result = run("hlo", dumps, "-m", 5, "--format", "dot", "-o", target)
    assert result.code == 1
    assert result.err.startswith(f"tfprof-lite: error: cannot write {target}: ")
    _one_line(result.err)
