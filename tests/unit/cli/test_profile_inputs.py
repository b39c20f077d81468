"""What TF2, Keras and JAX users pass as PROFILE, on hand-made trees of a real
XSpace: Keras' logdir layout, several runs (and the note that names them),
Chrome trace JSON (one line saying what to pass), file names that are not
UTF-8 in every command, and the help that says what PROFILE may be."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest

from tests import xspace_files
from tests.unit.cli.conftest import Run, Runner
from tfprof_lite.cli import main
from tfprof_lite.cli.common import PROFILE_HELP

MLP = "jax_h100_mlp"
OLD, NEW = "2026_11_27_04_20_00", "2026_11_27_04_24_45"
TRACE = {"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]}


def _copy_run(logdir: Path, run: str, host: str = "vm") -> Path:
    folder = logdir / "plugins" / "profile" / run
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(xspace_files.jax_file(MLP), folder / f"{host}.xplane.pb")
    return folder


@pytest.fixture(scope="module")
def keras_logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Keras ``log_dir``: ``train/plugins/profile/`` with two runs, ``validation/``."""
    root = tmp_path_factory.mktemp("keras_logdir")
    for run in (OLD, NEW):
        _copy_run(root / "train", run)
    (root / "validation").mkdir()
    return root


def _one_error(result: Run) -> str:
    assert result.code == 1, result
    assert result.err.startswith("tfprof-lite: error: ") and result.err.count("\n") == 1
    assert "Traceback" not in result.err
    return result.err


def test_a_keras_logdir_reads_the_newest_run_and_names_the_others(
    run: Runner, keras_logdir: Path
) -> None:
    result = run("overview", "--json", keras_logdir)
    assert result.code == 0, result.err
    assert len(json.loads(result.out)["step_time"]["steps"]) == 8  # traced, cut ones too
    assert result.err == (
        f"tfprof-lite: reading run {NEW} of {keras_logdir / 'train'} (1 other run: {OLD}; "
        "pick one with --run NAME or by passing its folder)\n"
    )
    folder = keras_logdir / "train" / "plugins" / "profile" / OLD
    for quiet in (["--run", OLD, keras_logdir], [folder], [folder / "vm.xplane.pb"],
                  [keras_logdir / "train" / "plugins" / "profile" / NEW]):  # fmt: skip
        again = run("overview", "--json", *quiet)
        assert again.code == 0 and again.err == "", (quiet, again.err)
        assert json.loads(again.out) == json.loads(result.out)


def test_several_logdirs_below_are_listed_newest_first(run: Runner, tmp_path: Path) -> None:
    for logdir, name in (("a", "r1"), ("a", "r3"), ("b/train", "r2"), ("c", "q4"),
                         ("c", "q5"), ("c", "q6")):  # fmt: skip
        _copy_run(tmp_path / logdir, name)
    result = run("op", tmp_path)
    assert result.code == 0, result.err
    assert result.err == (
        f"tfprof-lite: reading run r3 of {tmp_path / 'a'} (5 other runs: r2 in "
        f"{tmp_path / 'b' / 'train'}, r1, q6 in {tmp_path / 'c'}, q5 in {tmp_path / 'c'}, "
        "and 1 more; pick one with --run NAME or by passing its folder)\n"
    )


def test_directories_without_profiles_are_one_line(run: Runner, tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    err = _one_error(run("overview", tmp_path))
    assert "no profile_<step> files in this directory, nor profiler XSpaces" in err
    assert "up to 3 levels down" in err
    # Saved profiles in the folder itself come first: a logdir below is not read.
    (tmp_path / "profile_3").write_bytes(b"")
    _copy_run(tmp_path / "logs", "r1")
    assert "profile_3: the file is empty" in _one_error(run("overview", tmp_path))


def test_chrome_traces_are_refused_with_what_to_pass(run: Runner, tmp_path: Path) -> None:
    folder = _copy_run(tmp_path / "jaxdir", "2026_11_27_04_24_45")
    trace = folder / "vm.trace.json.gz"
    trace.write_bytes(gzip.compress(json.dumps(TRACE).encode()))
    expected = (
        f"tfprof-lite: error: {trace}: a Chrome trace (JSON) for trace viewers, not a "
        f"profile; pass the XSpace beside it instead: {folder / 'vm.xplane.pb'}\n"
    )
    for command in ("overview", "report", "scope", "timeline"):
        assert _one_error(run(command, trace)) == expected
    assert _one_error(run("op", folder / "vm.xplane.pb", trace)) == expected
    assert _one_error(run("op", "--graph", trace, "--run-meta", trace)) == expected
    plain = tmp_path / "steps"  # by content alone: no suffix
    plain.write_text(json.dumps(TRACE))
    assert _one_error(run("overview", plain)).endswith(
        "a Chrome trace (JSON) for trace viewers, not a profile; pass the profiler's "
        "XSpace instead: a *.xplane.pb file, its run folder (plugins/profile/<run>/) or "
        "the TensorBoard logdir\n"
    )


def _odd(base: Path, name: bytes) -> Path:
    return Path(os.fsdecode(bytes(base) + b"/" + name))


COMMANDS = (["overview"], ["overview", "--json"], ["scope", "-max_depth", "3"],
            ["op"], ["memory"], ["memory", "--json"], ["advise"], ["kernels"],
            ["kernels", "--json"], ["graph", "-max_depth", "2"], ["code"])  # fmt: skip


def test_non_utf8_names_work_in_every_command(run: Runner, tmp_path: Path) -> None:
    logdir = _odd(tmp_path, b"logs\xff")
    folder = _copy_run(
        _odd(logdir, b"tr\xfein"), "run\xe9".encode("latin-1").decode("utf-8", "surrogateescape")
    )
    out = _odd(tmp_path, b"out\xfd")
    out.mkdir()
    for path in (logdir, folder, folder / "vm.xplane.pb"):
        for args in COMMANDS:
            result = run(*args, path)
            assert result.code == 0 and "Traceback" not in result.err, (args, result.err)
            (result.out + result.err).encode("utf-8")  # strict: no file name's surrogates
        for extra in (["report", "-o", out / "r.html"], ["timeline", "-o", out / "t.json"],
                      ["xspace", "-o", out / "x"], ["diff", path]):  # fmt: skip
            result = run(*extra, path)
            assert result.code == 0 and "Traceback" not in result.err, (extra, result.err)
            (result.out + result.err).encode("utf-8")
    page = (out / "r.html").read_text(encoding="utf-8")
    assert "<title>tfprof-lite report: vm.xplane.pb</title>" in page
    assert str(tmp_path) + "/logs\\xff/tr\\xfein/plugins/profile/run\\xe9" in page
    assert os.listdir(out / "x" / "plugins" / "profile")
    note = run("report", "-o", out / "r.html", logdir)
    assert "<title>tfprof-lite report: logs\\xff</title>" in (out / "r.html").read_text()
    assert note.out == f"Wrote {tmp_path}/out\\xfd/r.html ({note.out.split('(')[1]}"


def test_non_utf8_names_in_errors_are_escaped(run: Runner, tmp_path: Path) -> None:
    odd = _odd(tmp_path, b"d\xffir")
    odd.mkdir()
    err = _one_error(run("overview", odd / "missing.pb"))
    missing = f"{tmp_path}/d\\xffir/missing.pb"
    assert err == f"tfprof-lite: error: {missing}: cannot read (No such file or directory)\n"
    assert "d\\xffir: no profile_<step> files" in _one_error(run("scope", odd))
    (odd / "trace.json").write_text(json.dumps(TRACE))
    assert "d\\xffir/trace.json: a Chrome trace" in _one_error(run("op", odd / "trace.json"))


def test_help_says_what_profile_may_be(run: Runner) -> None:
    top = run("--help").out
    for words in ("profile_<step>", "*.xplane.pb", "LOGDIR/plugins/profile/<run>/",
                  "TensorBoard logdir", "Keras'", "jax.profiler"):  # fmt: skip
        assert words in " ".join(top.split()), words
    for name in ("overview", "report", "scope", "op", "memory", "kernels", "advise",
                 "timeline", "xspace", "shell", "pprof"):  # fmt: skip
        text = " ".join(run(name, "--help").out.split())
        assert " ".join(PROFILE_HELP.split()) in text, name
    assert "run metadata" not in PROFILE_HELP
    assert main(["overview", "--help"]) == 0
