"""User-code mode of the code view, without TensorFlow: options, view, outputs, CLI."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest

from tests.unit.cli import profiles
from tests.unit.cli.conftest import Runner
from tfprof_lite import ProfileOptionBuilder, Profiler
from tfprof_lite.errors import InvalidOptionError
from tfprof_lite.options.coerce import OPTION_NAMES
from tfprof_lite.options.options import Options
from tfprof_lite.options.user_code import UserCode, as_user_code
from tfprof_lite.proto import messages as pb
from tfprof_lite.views import make_view
from tfprof_lite.views.code_user import LIBRARY_NAME, SourceLines
from tfprof_lite.views.stats import ORDER_BY_STAT

B = ProfileOptionBuilder
SITE = "/venv/lib/python3.11/site-packages"
RUNPY = "/usr/lib/python3.11/runpy.py"
TF_OPS = f"{SITE}/tensorflow/python/framework/ops.py"
TF_MATH = f"{SITE}/tensorflow/python/ops/math_ops.py"
KERAS = "/opt/tf_keras/src/engine/base_layer.py"


@pytest.mark.parametrize(
    ("path", "user"),
    [
        ("/home/me/train.py", True),
        ("train.py", True),
        ("C:\\work\\train.py", True),
        (RUNPY, False),
        (TF_OPS, False),
        (f"{SITE}/absl/app.py", False),
        ("/usr/lib/python3/dist-packages/numpy/core.py", False),
        (KERAS, False),
        ("<frozen runpy>", False),
        ("C:\\Python311\\Lib\\runpy.py", False),
        ("/src/tfprof_lite/tfprof_lite/session/autostart.py", False),
        ("/src/tfprof_lite/tfprof_lite/run.py", False),
        ("/src/tfprof_lite/tests/integration/test_x.py", True),
        ("/src/tfprof_lite/examples/quickstart.py", True),
    ],
)
def test_library_paths(path: str, user: bool) -> None:
    assert UserCode().is_user(path, "f") is user


def test_include_and_exclude() -> None:
    rules = UserCode(include=(r".*/mylib/.*",), exclude=(r".*/train\.py", "helper"))
    assert rules.is_user(f"{SITE}/mylib/x.py", "f")
    assert not rules.is_user("/home/me/train.py", "main")
    assert not rules.is_user("/home/me/model.py", "helper")  # function names match too
    assert rules.is_user("/home/me/model.py", "build")
    both = UserCode(include=(".*",), exclude=(".*",))
    assert not both.is_user("/home/me/model.py", "build")  # exclude wins


def test_coercion_and_round_trip() -> None:
    assert as_user_code(None) is None and as_user_code(False) is None
    assert as_user_code(True) == UserCode()
    assert as_user_code({"include": ["a"]}) == UserCode(("a",), ())
    for bad in ("yes", 3, {"includes": []}, {"include": "a.*"}, {"exclude": [1]}):
        with pytest.raises(InvalidOptionError):
            as_user_code(bad)
    built = B().with_user_code(include=["x"], exclude=["y"]).build()
    opts = Options.from_dict(built)
    assert opts.user_code == UserCode(("x",), ("y",))
    assert Options.from_dict(opts.to_dict()) == opts
    assert "user_code" not in B().with_user_code().with_user_code(enabled=False).build()
    with pytest.raises(InvalidOptionError, match="invalid regular expression"):
        Options.from_dict(B().with_user_code(include=["(("]).build()).validate_strict()


def test_mode_off_keeps_tf_dicts_and_block() -> None:
    plain = Options.from_dict(B().build())
    on = Options.from_dict(B().with_user_code().build())
    assert list(plain.to_dict()) == list(OPTION_NAMES)
    assert on.block_text() == plain.block_text()
    assert {k: v for k, v in on.to_dict().items() if k != "user_code"} == plain.to_dict()


def _op_log(source: Path) -> Any:
    """Every op called from runpy -> train.py:main -> (Keras for every other op) ->
    model.py:layer -> TF; ``x``'s trace has library frames only."""
    msg = pb.OpLogProto()
    strings = [RUNPY, "_run_module", str(source), "main", "layer", TF_MATH, "matmul"]
    strings += [TF_OPS, "from_node_def", "/elsewhere/model.py", KERAS, "__call__"]
    for sid, text in enumerate(strings):
        msg.id_to_string[sid] = text
    for i, op in enumerate(profiles._ops("a")):
        entry = msg.log_entries.add(name=op.name)
        traces = entry.code_def.traces
        traces.add(file_id=0, lineno=88, function_id=1)
        if op.name != "x":
            traces.add(file_id=2, lineno=2, function_id=3, func_start_line=1)
            if i % 2:  # Keras between two user frames: folded away too
                traces.add(file_id=10, lineno=1000, function_id=11)
            traces.add(file_id=9, lineno=20 + i % 2, function_id=4, func_start_line=19)
        traces.add(file_id=5, lineno=300, function_id=6)
        traces.add(file_id=7, lineno=1221, function_id=8)
    return msg


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text("def main():\n    layer(x)  # the user's line\n", encoding="utf-8")
    return path


@pytest.fixture
def prof(source: Path) -> Profiler:
    prof = Profiler(profiles.graph_def(), op_log=_op_log(source))
    for step in (0, 1):
        prof.add_step(step, profiles.run_meta(step))
    return prof


def _names(node: Any, depth: int = 0) -> list[tuple[int, str]]:
    out = [(depth, node.name)]
    for kid in node.children:
        out.extend(_names(kid, depth + 1))
    return out


def test_view_folds_library_frames(prof: Profiler) -> None:
    view = make_view("code", prof.model)
    every = Options.from_dict(B().with_empty_output().build())
    user = Options.from_dict(B().with_user_code().with_empty_output().build())
    all_frames, folded = view.query(every), view.query(user)
    assert all_frames.root.total == folded.root.total  # moved, never lost
    names = _names(folded.root)
    assert names[1:] == [
        (1, LIBRARY_NAME),
        (1, "train.py:2:main [layer(x) # the user's line]"),  # spaces collapsed
        (2, "model.py:20:layer"),  # /elsewhere/model.py cannot be read: no text
        (2, "model.py:21:layer"),
    ]
    by_name = {n.name: n for n in folded.root.children}
    micros = ORDER_BY_STAT["micros"]
    assert by_name[LIBRARY_NAME].total[micros] == 2  # x, the only all-library trace
    assert "ops.py:1221:from_node_def" in str(_names(all_frames.root))
    assert "base_layer.py:1000:__call__" in str(_names(all_frames.root))
    # the view answers both modes from one object, each from its own tree
    assert _names(view.query(every).root) == _names(all_frames.root)


def test_user_frames_selected_by_patterns(prof: Profiler) -> None:
    opts = Options.from_dict(B().with_user_code(exclude=[".*/train\\.py"]).build())
    names = [n for _, n in _names(make_view("code", prof.model).query(opts).root)]
    assert "model.py:20:layer" in names and not any("train.py" in n for n in names)


def test_source_lines_never_fail(tmp_path: Path, source: Path) -> None:
    lines = SourceLines()
    assert lines.line(str(source), 2) == "layer(x)  # the user's line"
    assert lines.line(str(source), 99) == "" and lines.line(str(source), 0) == ""
    assert lines.line(str(tmp_path / "gone.py"), 1) == ""
    assert lines.line(str(tmp_path), 1) == ""  # a directory
    assert lines.line("<stdin>", 1) == ""


def test_drop_in_text_unchanged(prof: Profiler, capsys: pytest.CaptureFixture[str]) -> None:
    prof.profile_python(B().build())
    plain = capsys.readouterr().out
    prof.profile_python(B().with_user_code(enabled=False).build())
    assert capsys.readouterr().out == plain
    assert "ops.py:1221:from_node_def" in plain


@pytest.fixture
def saved(prof: Profiler, tmp_path: Path) -> Path:
    path = tmp_path / "profile_1"
    prof._write_profile(path)
    return path


def test_cli_code_flags(run: Runner, saved: Path, tmp_path: Path) -> None:
    default = run("code", saved, "-max_depth", "30")
    assert default.code == 0 and "from_node_def" in default.out
    assert run("code", saved, "--all-frames", "-max_depth", "30").out == default.out
    user = run("code", saved, "--user-code", "-max_depth", "30")
    assert user.code == 0 and "from_node_def" not in user.out and LIBRARY_NAME in user.out
    only = run("code", saved, "--user-exclude", ".*/train\\.py")  # a pattern turns it on
    assert "train.py" not in only.out and "model.py:20:layer" in only.out
    folded = tmp_path / "code.folded"
    assert run("code", saved, "-output", f"collapsed:outfile={folded}").code == 0
    text = folded.read_text()
    assert "from_node_def" not in text and "train.py:2:main" in text
    total = sum(int(line.rsplit(" ", 1)[1]) for line in text.splitlines())
    assert run("code", saved, "--all-frames", "-output", f"collapsed:outfile={folded}").code == 0
    every = folded.read_text()
    assert "from_node_def" in every
    assert sum(int(line.rsplit(" ", 1)[1]) for line in every.splitlines()) == total


def test_cli_flag_errors(run: Runner, saved: Path) -> None:
    both = run("code", saved, "--all-frames", "--user-include", "x")
    assert both.code == 2 and both.err.count("\n") == 1 and "--user-code" in both.err
    bad = run("pprof", saved, "--user-exclude", "((", "-o", "x.pb.gz")
    assert bad.code == 2 and "invalid regular expression '(('" in bad.err


def _functions(path: Path) -> set[str]:
    profile = pb.PprofProfile.FromString(gzip.decompress(path.read_bytes()))
    return {profile.string_table[f.name] for f in profile.function}


def test_cli_pprof_defaults_to_user_code(run: Runner, saved: Path, tmp_path: Path) -> None:
    user, every = tmp_path / "user.pb.gz", tmp_path / "all.pb.gz"
    out = run("pprof", saved, "-o", user)
    assert out.code == 0 and "code view, user code, tfprof format" in out.out
    assert run("pprof", saved, "--all-frames", "-o", every).code == 0
    # every user frame at its own line; x's all-library stack is one frame
    assert _functions(user) == {"train:main", "model:layer", "<library>:<library code>"}
    profile = pb.PprofProfile.FromString(gzip.decompress(user.read_bytes()))
    lines = {
        (profile.string_table[f.name], ln.line)
        for loc in profile.location
        for ln in loc.line
        for f in profile.function
        if f.id == ln.function_id
    }
    assert lines == {("train:main", 2), ("model:layer", 20), ("model:layer", 21)} | {
        ("<library>:<library code>", 0)
    }
    assert "ops:from_node_def" in _functions(every)
    sums = []
    for path in (user, every):
        profile = pb.PprofProfile.FromString(gzip.decompress(path.read_bytes()))
        sums.append(sum(s.value[1] for s in profile.sample))
    assert sums[0] == sums[1] > 0


def test_shell_code_takes_the_same_flags(run: Runner, saved: Path) -> None:
    from tests.unit.cli.test_shell import run_shell

    for flags in ("--user-code", "--all-frames", "--user-exclude .*/train\\.py", ""):
        cli = run("code", saved, *flags.split(), "-max_depth", "30")
        shell = run_shell(run, saved, f"code {flags} -max_depth 30\n")
        assert cli.code == shell.code == 0 and cli.out == shell.out
    assert LIBRARY_NAME in run("code", saved, "--user-code").out
    bad = run_shell(run, saved, "code --all-frames --user-include x\n")
    assert bad.code == 2 and "need --user-code" in bad.err
