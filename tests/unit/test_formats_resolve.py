"""The one input table (tfprof_lite.formats.resolve) and its three readers:
``Profiler.load``, ``cluster.merge`` and the command line agree on what a path holds."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from tests.unit.cli.profiles import profile_bytes, run_meta, write_inputs
from tfprof_lite import cluster
from tfprof_lite.cli import main
from tfprof_lite.cli.inputs import InputSpec, capture_dir, load_profiler
from tfprof_lite.cli.xspace_inputs import is_xspace
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.formats import resolve
from tfprof_lite.profiler import Profiler
from tfprof_lite.proto import messages as pb

SAMPLE = Path(__file__).resolve().parents[3] / "shared" / "data" / "xspace" / "jax_h100_mlp"


def _xspace(path: Path) -> Path:
    space = pb.XSpace()
    plane = space.planes.add(name="/host:CPU", id=1)
    plane.event_metadata[1].name = "train"
    line = plane.lines.add(id=1, name="main", timestamp_ns=1000)
    line.events.add(metadata_id=1, offset_ps=0, duration_ps=5_000_000)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(space.SerializeToString())
    return path


@pytest.fixture()
def tree(tmp_path: Path) -> dict[str, Path]:
    """One path of every format of the table."""
    logdir = tmp_path / "logdir"
    run = logdir / "plugins" / "profile" / "2026_01_01_00_00_00"
    _xspace(run / "host.xplane.pb")
    keras = tmp_path / "keras"
    _xspace(keras / "train" / "plugins" / "profile" / "r1" / "h.xplane.pb")
    saved = tmp_path / "saved"
    saved.mkdir()
    (saved / "profile_3").write_bytes(profile_bytes((0, 1, 2, 3)))
    (saved / "profile_1").write_bytes(profile_bytes((0, 1)))
    metas = tmp_path / "metas"
    metas.mkdir()
    write_inputs(metas)
    os.remove(metas / "run_meta_0.pbtxt")
    tagged = tmp_path / "tagged"
    tagged.mkdir()
    (tagged / "task.w0.json").write_text(json.dumps({"task": "/job:worker/replica:0/task:0"}))
    (tagged / "run_meta.w0.0.pb").write_bytes(run_meta(0).SerializeToString())
    trace = tmp_path / "host.trace.json.gz"
    trace.write_bytes(gzip.compress(b'{"traceEvents": []}'))
    renamed = tmp_path / "renamed.bin"
    renamed.write_bytes((run / "host.xplane.pb").read_bytes())
    one = tmp_path / "one.pb"
    one.write_bytes(profile_bytes((0,)))
    return {
        "xspace-run": logdir, "xspace": renamed, "xspace-logdirs": keras,
        "saved-profiles": saved, "run-metadata-files": metas, "captures": tagged,
        "chrome-trace": trace, "tf-message": one,
    }  # fmt: skip


def test_every_row_of_the_table_is_named(tree: dict[str, Path]) -> None:
    names = {f.name for f in (*resolve.FILE_FORMATS, *resolve.DIR_FORMATS)}
    assert names == set(tree)
    for name, path in tree.items():
        assert resolve.identify(str(path)).name == name, path
    assert resolve.identify(str(tree["xspace-run"] / "plugins")).name in resolve.XSPACE_FORMATS


def test_precedence_follows_the_table(tree: dict[str, Path]) -> None:
    # a run folder that also holds profile_<step> files is still a run folder
    logdir = tree["xspace-run"]
    (logdir / "profile_0").write_bytes(profile_bytes((0,)))
    assert resolve.identify(str(logdir)).name == "xspace-run"
    # saved profiles beside logdirs below them: the saved profiles win
    saved = tree["saved-profiles"]
    _xspace(saved / "sub" / "plugins" / "profile" / "r" / "h.xplane.pb")
    assert resolve.identify(str(saved)).name == "saved-profiles"


def test_missing_and_empty_paths_say_what_could_be_there(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="no such file or directory"):
        resolve.identify(str(tmp_path / "nope"))
    with pytest.raises(InvalidInputError, match="no profile_<step> files in this directory"):
        resolve.identify(str(tmp_path))


def test_a_fifo_is_not_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert resolve.identify(str(fifo)).name == "tf-message"  # the reader refuses it


def test_profiler_load_reads_what_the_table_says(tree: dict[str, Path]) -> None:
    assert Profiler.load(tree["xspace-run"]).model.steps_source
    assert Profiler.load(tree["xspace"]).model.steps_source
    assert Profiler.load(tree["xspace-logdirs"]).model.steps_source
    newest = Profiler.load(tree["saved-profiles"]).model
    assert sorted(newest.steps) == [0, 1, 2, 3]
    assert sorted(Profiler.load(tree["tf-message"]).model.steps) == [0]
    with pytest.raises(InvalidInputError, match="a Chrome trace"):
        Profiler.load(tree["chrome-trace"])
    for name in ("run-metadata-files", "captures"):
        with pytest.raises(InvalidInputError, match=r"tfprof_lite\.cluster\.merge") as err:
            Profiler.load(tree[name])
        assert "\n" not in str(err.value)


def test_cluster_reads_what_the_table_says(tree: dict[str, Path]) -> None:
    assert len(cluster.load_task(str(tree["xspace-run"]))) == 1
    assert len(cluster.load_task(str(tree["xspace-logdirs"]))) == 1
    tagged = cluster.load_task(str(tree["captures"]))
    assert [t.task for t in tagged] == ["/job:worker/replica:0/task:0"]
    assert cluster.load_task(str(tree["run-metadata-files"]))[0].steps == [0, 1]
    saved = cluster.load_task(str(tree["saved-profiles"]))[0].model
    assert saved is not None and sorted(saved.steps) == [0, 1, 2, 3]
    with pytest.raises(InvalidInputError, match="a Chrome trace"):
        cluster.load_task(str(tree["chrome-trace"]))


def test_command_line_reads_what_the_table_says(tree: dict[str, Path]) -> None:
    for name in ("xspace-run", "xspace", "xspace-logdirs"):
        assert is_xspace(str(tree[name])), name
    for name in ("saved-profiles", "run-metadata-files", "captures", "tf-message"):
        assert not is_xspace(str(tree[name])), name
    assert capture_dir(str(tree["run-metadata-files"])) == "run-metadata-files"
    assert capture_dir(str(tree["captures"])) == "captures"
    assert capture_dir(str(tree["saved-profiles"])) is None
    prof = load_profiler(InputSpec(profile=str(tree["saved-profiles"])))
    assert sorted(prof.model.steps) == [0, 1, 2, 3]


def test_a_run_meta_folder_reads_as_its_files(tree: dict[str, Path], capsys) -> None:  # type: ignore[no-untyped-def]
    folder = tree["run-metadata-files"]
    files = ",".join(str(folder / f"run_meta_{i}.pb") for i in (0, 1))
    outs = []
    for args in (["op", str(folder)], ["op", "--run-meta", files]):
        assert main(args) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1]
    assert "dense1/MatMul" in outs[0]
