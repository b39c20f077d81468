"""The command line on XSpace files, run directories and logdirs; several hosts;
one-line errors on bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests import xspace_files
from tests.unit.cli.conftest import Runner

MLP = "jax_h100_mlp"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """:func:`tests.xspace_files.two_run_logdir` in a module's temporary folder."""
    return xspace_files.two_run_logdir(tmp_path_factory.mktemp("xspace_logdir"))


def test_cli_overview_json_and_commands(run: Runner, logdir: Path, tmp_path: Path) -> None:
    result = run("overview", "--json", logdir)
    assert result.code == 0, result.err
    data = json.loads(result.out)
    # 8 traced steps, the first cut by the trace's start: 7 whole ones.
    assert data["steps"] == 7 and len(data["step_time"]["steps"]) == 8
    memory = run("memory", logdir)
    assert memory.code == 0 and "GPU_0_bfc: peak" in memory.out, memory.err
    for args in (["kernels"], ["scope", "-max_depth", "2"], ["op"], ["advise"],
                 ["timeline", "-o", tmp_path / "t.json.gz"],
                 ["report", "-o", tmp_path / "r.html"]):  # fmt: skip
        result = run(*args, logdir)
        assert result.code == 0, (args, result.err)
        assert "Traceback" not in result.err
    scope = run("scope", "-max_depth", "5", logdir).out
    assert "jit(train_step)/jvp(MLP)/mlp/dense0 (" in scope
    ops = run("op", "-select", "accelerator_micros", logdir).out
    assert "dot_general (matmul)" in ops


def test_cli_hosts_merge_and_pick(run: Runner, logdir: Path) -> None:
    merged = run("overview", "--json", "--run", "2020_old", logdir)
    assert merged.code == 0, merged.err
    one = run("overview", "--json", "--run", "2020_old", "--host", "a", logdir)
    assert one.code == 0, one.err
    assert len(json.loads(one.out)["step_time"]["steps"]) == 8
    bad = run("op", "--run", "2020_old", "--host", "zz", logdir)
    assert bad.code == 1 and "no host 'zz'" in bad.err and bad.err.count("\n") == 1


def test_cli_bad_inputs(run: Runner, tmp_path: Path) -> None:
    empty_run = tmp_path / "plugins" / "profile" / "run1"
    empty_run.mkdir(parents=True)
    for path in (tmp_path, empty_run):
        result = run("overview", path)
        assert result.code == 1
        assert "Traceback" not in result.err and result.err.count("\n") == 1, result.err
    xspace = tmp_path / "x.bin"
    shutil.copy(xspace_files.jax_file(MLP), xspace)
    result = run("op", "--graph", xspace, "--run-meta", xspace)
    assert result.code == 1
    assert "XSpace" in result.err and result.err.count("\n") == 1, result.err
