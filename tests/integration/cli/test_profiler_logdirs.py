"""The command line on what Keras and JAX really write (made in child processes by
:mod:`tests.integration.profiler_logdirs`): Keras' ``TensorBoard(log_dir)`` with two
runs, JAX's ``start_trace`` folder and the ``*.trace.json.gz`` beside its XSpace,
and both under a folder whose name is not UTF-8."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.cli.runner import fails
from tests.integration.profiler_logdirs import JAX_STEPS, PROFILE_BATCH, REPO_ROOT, logdir
from tfprof_lite.cli import main

NOTE_END = "; pick one with --run NAME or by passing its folder)\n"


@pytest.fixture(scope="session")
def keras_logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Keras 3 ``model.fit`` with ``TensorBoard(log_dir, profile_batch=(2, 3))``, twice."""
    return logdir("keras", tmp_path_factory)


@pytest.fixture(scope="session")
def jax_logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A jitted JAX loop under ``jax.profiler.start_trace(dir)``."""
    return logdir("jax", tmp_path_factory)


def _ok(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[str, str]:
    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Traceback" not in err
    return out, err


def _runs(root: Path) -> list[Path]:
    return sorted(root.glob("**/plugins/profile/*/"))


def test_keras_logdir_opens_and_names_the_run_it_read(
    keras_logdir: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    old, new = _runs(keras_logdir)
    assert old.parent == keras_logdir / "train" / "plugins" / "profile"
    out, err = _ok(capsys, "overview", "--json", keras_logdir)
    steps = PROFILE_BATCH[1] - PROFILE_BATCH[0] + 1
    assert json.loads(out)["steps"] == steps
    assert err == (
        f"tfprof-lite: reading run {new.name} of {keras_logdir / 'train'} "
        f"(1 other run: {old.name}" + NOTE_END
    )
    _, err = _ok(capsys, "report", keras_logdir, "-o", tmp_path / "report.html")
    assert err.endswith(f"(1 other run: {old.name}" + NOTE_END)
    assert "<html" in (tmp_path / "report.html").read_text()
    for exact in (old, old / "vm.xplane.pb", *old.glob("*.xplane.pb")):
        out, err = _ok(capsys, "overview", "--json", exact)
        assert err == "" and json.loads(out)["steps"] == steps
    out, err = _ok(capsys, "op", "--run", old.name, keras_logdir)
    assert err == "" and "MatMul" in out


def test_jax_trace_dir_and_its_chrome_trace(
    jax_logdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (run,) = _runs(jax_logdir)
    (xplane,) = run.glob("*.xplane.pb")
    (trace,) = run.glob("*.trace.json.gz")
    out, err = _ok(capsys, "overview", "--json", jax_logdir)
    traced = json.loads(out)["step_time"]["steps"]  # the first is cut by the trace's start
    assert len(traced) == JAX_STEPS and err == ""
    for command in ("overview", "report", "scope"):
        assert fails(capsys, command, trace) == (
            f"tfprof-lite: error: {trace}: a Chrome trace (JSON) for trace viewers, not a "
            f"profile; pass the XSpace beside it instead: {xplane}\n"
        )
    xplane_less = jax_logdir.parent / "trace_only"
    xplane_less.mkdir(exist_ok=True)
    shutil.copy(trace, xplane_less / "steps")  # no name to go by: gzip and JSON
    assert fails(capsys, "op", xplane_less / "steps").endswith(
        "pass the profiler's XSpace instead: a *.xplane.pb file, its run folder "
        "(plugins/profile/<run>/) or the TensorBoard logdir\n"
    )


COMMANDS = (["report", "-o", "{out}/r.html"], ["overview"], ["scope", "-max_depth", "3"],
            ["op"], ["memory"], ["advise"], ["kernels"], ["timeline", "-o", "{out}/t.json"],
            ["xspace", "-o", "{out}/x"])  # fmt: skip


def _odd_copy(source: Path, tmp_path: Path) -> tuple[Path, Path]:
    """``source`` copied under a folder named with byte 0xff, and an output folder."""
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/logs\xff"))
    shutil.copytree(source, odd)
    out = Path(os.fsdecode(bytes(tmp_path) + b"/out\xfe"))
    out.mkdir()
    return odd, out


@pytest.mark.parametrize("kind", ["keras", "jax"])
def test_non_utf8_folder_names_in_every_command(
    kind: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:  # fmt: skip
    odd, out = _odd_copy(request.getfixturevalue(f"{kind}_logdir"), tmp_path)
    for args in COMMANDS:
        line = [a.format(out=out) for a in args]
        text, err = _ok(capsys, *line, odd)
        assert "\udcff" not in text + err and "\udcfe" not in text + err
    assert "logs\\xff" in (out / "r.html").read_text(encoding="utf-8")
    # The real entry point, stdout as strict as a UTF-8 locale makes it.
    env = dict(os.environ, PYTHONIOENCODING="utf-8:strict", PYTHONPATH=str(REPO_ROOT))
    raw = os.fsencode(odd)
    lines: list[list[str | bytes]] = [["report", "-o", "-", raw], ["diff", raw, raw],
                                      ["overview", raw]]  # fmt: skip
    for argv in lines:
        done = subprocess.run(
            [sys.executable, "-m", "tfprof_lite", *argv],
            capture_output=True, env=env, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
        assert b"Traceback" not in done.stderr
        done.stdout.decode("utf-8")  # strict: valid UTF-8 throughout
