"""Several PROFILEs of one task are two runs, not a cluster: every command that
takes several PROFILEs refuses them with one line (exit 2) pointing to
``tfprof-lite diff``, unless ``--merge`` asks for the merge; profiles of
different tasks merge as before (saved profiles and task-tagged captures)."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

import tfprof_lite
from tests.unit.cli.conftest import Runner
from tests.unit.test_cluster import W0, W1, worker_step, write_task
from tfprof_lite.cli import COMMANDS
from tfprof_lite.errors import SameTaskError, UsageError
from tfprof_lite.model.cluster import qualify

LOCAL = "/job:localhost/replica:0/task:0"
#: Every command whose PROFILE argument takes several profiles.
MULTI_PROFILE_COMMANDS = [
    name
    for name, command in COMMANDS.items()
    if any(isinstance(p, click.Argument) and p.nargs == -1 for p in command.params)
]


def command_args(name: str, profiles: list[Path], out_dir: Path) -> list[object]:
    """``name PROFILE...``, with ``-o`` into ``out_dir`` for commands that write a file."""
    args: list[object] = [name, *profiles]
    if any("-o" in p.opts for p in COMMANDS[name].params):
        suffix = ".svg" if name in ("roofline", "memory-viewer") else ".out"
        args += ["-o", out_dir / f"{name}{suffix}"]
    return args


def test_every_profile_command_is_covered() -> None:
    assert {"scope", "op", "overview", "report", "timeline", "shell", "cluster"} <= set(
        MULTI_PROFILE_COMMANDS
    )
    assert "diff" not in MULTI_PROFILE_COMMANDS


@pytest.mark.parametrize("name", MULTI_PROFILE_COMMANDS)
def test_profiles_of_one_task_are_refused(
    run: Runner, data_dir: Path, tmp_path: Path, name: str
) -> None:
    a, b = data_dir / "profile_2", data_dir / "b" / "profile_2"
    result = run(*command_args(name, [a, b], tmp_path))
    assert result.code == 2, result.err
    assert result.err == (
        f"tfprof-lite: error: {a} and {b} are both profiles of task {LOCAL}: profiles of "
        f"one task are not a cluster; compare two runs with 'tfprof-lite diff {a} {b}', "
        "or pass --merge to merge them anyway\n"
    )
    assert result.out == "" and not list(tmp_path.iterdir())


@pytest.mark.parametrize("name", MULTI_PROFILE_COMMANDS)
def test_merge_option_merges_them_anyway(
    run: Runner, data_dir: Path, tmp_path: Path, name: str
) -> None:
    if name == "shell":
        pytest.skip("interactive; its loading is the same load_profiler call")
    a, b = data_dir / "profile_2", data_dir / "b" / "profile_2"
    result = run(*command_args(name, [a, b], tmp_path), "--merge")
    if name == "xla-compat":  # merged, then: these profiles hold no XLA data
        assert result.code == 1 and "no XLA compatibility data" in result.err
    elif name in ("op-profile", "roofline", "memory-viewer"):  # nor compiled programs
        assert result.code == 1 and "holds no compiled XLA programs" in result.err
    else:
        assert result.code == 0, result.err
    assert "--merge" in COMMANDS[name].get_help(click.Context(COMMANDS[name]))


def test_explicit_merge_adds_both_runs_up(data_dir: Path) -> None:
    a, b = data_dir / "profile_2", data_dir / "profile_1"
    alone = tfprof_lite.Profiler.load(a).model
    merged = tfprof_lite.merge([a, b], allow_same_task=True).model
    node = "dense1/MatMul"
    assert alone.stats(0).run_count[alone.index[node]] == 1
    both = merged.index[qualify(LOCAL, node)]
    assert merged.stats(0).run_count[both] == 2  # step 0 of both runs


def test_three_profiles_name_the_pair_of_one_task(run: Runner, tmp_path: Path) -> None:
    saved = _saved_workers(tmp_path)
    again = tmp_path / "again"
    again.mkdir()
    (again / "profile_1").write_bytes((saved[0] / "profile_1").read_bytes())
    result = run("overview", saved[0], saved[1], again)
    assert result.code == 2
    assert f"{saved[0]} and {again} are both profiles of task {W0}" in result.err


def _saved_workers(root: Path) -> list[Path]:
    """``w0/profile_1``, ``w1/profile_1``: saved profiles of two workers."""
    dirs = []
    for task, slow in ((W0, 0), (W1, 20_000)):
        prof = tfprof_lite.Profiler(tfprof_lite.proto.messages.GraphDef())
        for step in (0, 1):
            prof.add_step(step, worker_step(task, 100_000 * (step + 1), slow=slow))
        directory = root / task.rsplit(":", 1)[1].join(("w", ""))
        directory.mkdir()
        (directory / "profile_1").write_bytes(prof.serialize_to_string())
        dirs.append(directory)
    return dirs


def test_saved_profiles_of_different_tasks_still_merge(run: Runner, tmp_path: Path) -> None:
    w0, w1 = _saved_workers(tmp_path)
    result = run("overview", w0, w1)
    assert result.code == 0, result.err
    assert W0 in result.out and W1 in result.out
    cluster = run("cluster", w0 / "profile_1", w1 / "profile_1")
    assert cluster.code == 0, cluster.err


def test_tagged_captures_of_different_tasks_still_merge(run: Runner, tmp_path: Path) -> None:
    w0 = write_task(tmp_path / "w0", W0, {0: worker_step(W0, 100_000)})
    w1 = write_task(tmp_path / "w1", W1, {0: worker_step(W1, 100_000)})
    assert run("op", w0, w1).code == 0
    same = write_task(tmp_path / "again", W0, {0: worker_step(W0, 300_000)})
    refused = run("cluster", w0, same)
    assert refused.code == 2 and f"are both profiles of task {W0}" in refused.err
    assert run("cluster", w0, same, "--merge").code == 0


def test_api_refuses_and_allows(data_dir: Path) -> None:
    a, b = data_dir / "profile_2", data_dir / "b" / "profile_2"
    with pytest.raises(SameTaskError) as caught:
        tfprof_lite.merge([a, b])
    assert isinstance(caught.value, UsageError) and caught.value.exit_code == 2
    assert caught.value.sources == (str(a), str(b)) and caught.value.task == LOCAL
    assert "allow_same_task=True" in str(caught.value)
    merged = tfprof_lite.merge([a, b], allow_same_task=True)
    assert merged.cluster.own_tasks == [LOCAL, LOCAL]  # type: ignore[attr-defined]


def test_profiles_whose_devices_name_no_task(run: Runner, tmp_path: Path) -> None:
    from tests.unit.test_cluster import meta

    paths = []
    for name in ("a", "b"):
        prof = tfprof_lite.Profiler(tfprof_lite.proto.messages.GraphDef())
        prof.add_step(0, meta([("/device:CPU:0", [("MatMul", 10, 5, "MatMul = MatMul(x, w)")])]))
        paths.append(tmp_path / f"profile_{name}")
        paths[-1].write_bytes(prof.serialize_to_string())
    result = run("op", *paths)
    assert result.code == 2
    assert "are both profiles of no known task (their devices name none)" in result.err
    assert run("op", *paths, "--merge").code == 0
