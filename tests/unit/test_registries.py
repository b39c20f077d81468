"""Every registered plug-in runs on one small hand-made profile: each view of
``VIEWS``, each output of ``OUTPUTS``, each advisor checker of ``CHECKERS`` and
each command of the CLI. A plug-in registered without a case here fails
``test_every_plugin_has_a_case``, so it is exercised as soon as it exists.

The profile is the hand-made code case (call stacks, CPU and stream records,
memory) plus a GPU step with a ``BatchNorm`` node, and the XLA compatibility
tags of a report on its ops, so that every checker has something to say.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import gzip
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tfprof_lite
from tests import hand_cases
from tests.handmade import ALL_SELECT, GPU, STREAM_ALL, ns, run_meta
from tests.program_cases import basic_program, xspace_file
from tests.unit.test_monitoring import record
from tests.unit.test_xla_dot import XLA_STYLE
from tfprof_lite.advisor import CHECKERS, render_advice, run_advisor
from tfprof_lite.analysis.xla_compat import OpInfo, build_report, op_log_of
from tfprof_lite.cli import COMMANDS, main
from tfprof_lite.model import decode
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.options.builder import ProfileOptionBuilder as B
from tfprof_lite.options.options import Options
from tfprof_lite.outputs.answer import answer_query
from tfprof_lite.outputs.emit import OUTPUTS
from tfprof_lite.outputs.text import render_report
from tfprof_lite.proto import messages as pb
from tfprof_lite.views import VIEWS, make_view


@functools.cache
def profiler() -> tfprof_lite.Profiler:
    """The smoke profile (built once)."""
    case = hand_cases.code_case()
    prof = tfprof_lite.Profiler(case.graph_def, op_log=case.op_log)
    for step, data in case.run_metas:
        prof.add_step(step, data)
    gpu_step = run_meta(
        [
            (GPU, [ns("dense/MatMul", 200, 8), ns("bn/BatchNorm", 210, 4)]),
            (STREAM_ALL, [ns("dense/MatMul", 202, 6)]),
        ]
    )
    prof.add_step(1, gpu_step)
    model = prof.model
    ops = [_xla_op(model, nid) for nid in range(len(model))]
    model.add_op_log(*decode.op_log_entries(op_log_of([build_report("XLA_CPU_JIT", ops, 1)])))
    return prof


def _xla_op(model: ProfileModel, nid: int) -> OpInfo:
    """Every op compatible but the ``Sum``."""
    ok = model.ops[nid] != "Sum"
    inputs = tuple(model.inputs[nid][pos] for pos in sorted(model.inputs[nid]))
    return OpInfo(model.names[nid], model.ops[nid], inputs, ok, "" if ok else "no kernel", "")


def _options(output: str, select: list[str] | None = None, step: int = -1) -> Options:
    built = B().select(ALL_SELECT if select is None else select).with_step(step).build()
    return Options.from_dict(dict(built, output=output))


# ------------------------------------------------------------------------ views
#: The message each view returns.
VIEW_MESSAGES: dict[str, Any] = {
    "scope": pb.GraphNodeProto,
    "graph": pb.GraphNodeProto,
    "op": pb.MultiGraphNodeProto,
    "code": pb.MultiGraphNodeProto,
}


@pytest.mark.parametrize("cmd", list(VIEWS))
def test_view(cmd: str) -> None:
    model = profiler().model
    result = make_view(cmd, model).query(_options("none"))
    assert not result.empty
    text = render_report(result)
    assert "Profile:\nnode name |" in text and text.count("\n") > 10
    message = VIEW_MESSAGES[cmd].FromString(
        answer_query(model, make_view(cmd, model), result.opts).SerializeToString()
    )
    assert message.total_exec_micros > 0 and message.total_float_ops > 0


# ---------------------------------------------------------------------- outputs
def _stdout(out: str, tmp: Path) -> None:
    assert "_TFProfRoot" in out


def _text_file(out: str, tmp: Path) -> None:
    (path,) = tmp.iterdir()
    assert "_TFProfRoot" in path.read_text(encoding="utf-8") and out == ""


def _nothing(out: str, tmp: Path) -> None:
    assert out == "" and not list(tmp.iterdir())


def _timeline(out: str, tmp: Path) -> None:
    (path,) = tmp.iterdir()
    assert json.loads(path.read_text(encoding="utf-8"))["traceEvents"]
    assert str(path) in out


def _pprof(out: str, tmp: Path) -> None:
    (path,) = tmp.iterdir()
    profile = pb.PprofProfile.FromString(gzip.decompress(path.read_bytes()))
    assert profile.sample and "pprof" in out


def _json(out: str, tmp: Path) -> None:
    (path,) = tmp.iterdir()
    assert json.loads(path.read_text(encoding="utf-8"))


def _csv(out: str, tmp: Path) -> None:
    (path,) = tmp.iterdir()
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
    assert len(rows) > 2 and all(len(row) == len(rows[0]) for row in rows)


def _collapsed(out: str, tmp: Path) -> None:
    (path,) = tmp.iterdir()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines and all(line.rsplit(" ", 1)[1].isdigit() for line in lines)


#: Output type -> (view, -output value with ``{dir}``, -select or None for all,
#: step, check of stdout and the directory written to).
OUTPUT_CASES: dict[str, tuple[str, str, list[str] | None, int, Callable[[str, Path], None]]] = {
    "stdout": ("scope", "stdout", None, -1, _stdout),
    "file": ("graph", "file:outfile={dir}/report.txt", None, -1, _text_file),
    "none": ("op", "none", None, -1, _nothing),
    "timeline": ("scope", "timeline:outfile={dir}/timeline.json", None, 0, _timeline),
    "pprof": ("code", "pprof:outfile={dir}/code.pb.gz", ["micros"], -1, _pprof),
    "json": ("op", "json:outfile={dir}/ops.json", None, -1, _json),
    "csv": ("scope", "csv:outfile={dir}/scope.csv", None, -1, _csv),
    "collapsed": ("code", "collapsed:outfile={dir}/code.txt", ["micros"], -1, _collapsed),
}


@pytest.mark.parametrize("output", list(OUTPUTS))
def test_output(output: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    view, spec, select, step, check = OUTPUT_CASES[output]
    opts = _options(spec.format(dir=tmp_path), select, step)
    model = profiler().model
    capsys.readouterr()
    answer_query(model, make_view(view, model), opts)
    check(capsys.readouterr().out, tmp_path)


# ---------------------------------------------------------------------- advisor
#: Checker options where the defaults say nothing on a one-task profile.
CHECKER_OPTIONS: dict[str, dict[str, str]] = {"JobChecker": {"always_report": "true"}}


@pytest.mark.parametrize("name", list(CHECKERS))
def test_checker(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_advisor(profiler().model, {name: CHECKER_OPTIONS.get(name, {})})
    assert capsys.readouterr().out == ""  # the advisor itself prints nothing
    reports = list(result.advice.checkers[name].reports)
    assert any(report.strip() for report in reports)
    assert result.text == render_advice(result.advice)
    assert result.text.startswith(f"\n{name}:\n")
    assert pb.AdviceProto.FromString(result.advice.SerializeToString()) == result.advice


# -------------------------------------------------------------------------- CLI
@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with the smoke profile, a one-step variant, a monitor log, an
    XLA dump and an XSpace holding one compiled program."""
    root = tmp_path_factory.mktemp("registries")
    (root / "profile_1").write_bytes(profiler().serialize_to_string())
    case = hand_cases.code_case()
    before = tfprof_lite.Profiler(case.graph_def, op_log=case.op_log)
    for step, data in case.run_metas:
        before.add_step(step, data)
    (root / "before").mkdir()
    (root / "before" / "profile_0").write_bytes(before.serialize_to_string())
    (root / "monitor").mkdir()
    lines = [{"event": "start", "run": "r1", "level": 1}, record(0, [0.001, 0.002]).to_dict()]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (root / "monitor" / "monitor.jsonl").write_text(text, encoding="utf-8")
    (root / "xla").mkdir()
    dump = root / "xla" / "module_0001.cluster_1__X_.2.cpu_after_optimizations.dot"
    dump.write_text(XLA_STYLE, encoding="utf-8")
    xspace_file(root / "host.xplane.pb", [(7, basic_program())])
    return root


#: Command -> its arguments (``{in}`` the input directory, ``{out}`` a scratch
#: directory) and the file it writes (None: it prints).
CLI_CASES: dict[str, tuple[list[str], str | None]] = {
    "scope": (["{in}/profile_1", "-max_depth", "3"], None),
    "graph": (["{in}/profile_1"], None),
    "op": (["{in}/profile_1", "-select", "micros,occurrence"], None),
    "code": (["{in}/profile_1"], None),
    "advise": (["{in}/profile_1"], None),
    "shell": (["{in}/profile_1"], None),
    "report": (["{in}/profile_1", "-o", "{out}/report.html"], "report.html"),
    "diff": (["{in}/before/profile_0", "{in}/profile_1"], None),
    "monitor": (["{in}/monitor"], None),
    "xla-compat": (["{in}/profile_1"], None),
    "overview": (["{in}/profile_1"], None),
    "memory": (["{in}/profile_1"], None),
    "kernels": (["{in}/profile_1"], None),
    "timeline": (["{in}/profile_1", "-o", "{out}/steps.json"], "steps.json"),
    "pprof": (["{in}/profile_1", "-o", "{out}/code.pb.gz"], "code.pb.gz"),
    "hlo": (["{in}/xla"], None),
    "op-profile": (["{in}/host.xplane.pb"], None),
    "roofline": (["{in}/host.xplane.pb", "-o", "{out}/roofline.svg"], "roofline.svg"),
    "op-stats": (["{in}/profile_1", "--top", "3"], None),
    "memory-viewer": (["{in}/host.xplane.pb"], None),
    "help": (["options"], None),
    "cluster": (["{in}/profile_1", "{in}/before/profile_0", "--merge"], None),
    "xspace": (
        ["{in}/profile_1", "-o", "{out}/logs", "--run-name", "r"],
        "logs/plugins/profile/r/localhost.xplane.pb",
    ),
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_command(name: str, inputs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args, written = CLI_CASES[name]
    argv = [name, *(a.format(**{"in": inputs, "out": tmp_path}) for a in args)]
    monkeypatch.setattr(sys, "stdin", io.StringIO("op -max_depth 1\n"))  # the shell's input
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert code == 0, err.getvalue()
    assert "error" not in err.getvalue()
    if written is None:
        assert out.getvalue().strip()
    else:
        assert (tmp_path / written).stat().st_size > 0


# --------------------------------------------------------------------- coverage
def test_every_plugin_has_a_case() -> None:
    assert set(VIEW_MESSAGES) == set(VIEWS)
    assert set(OUTPUT_CASES) == set(OUTPUTS)
    assert set(CLI_CASES) == set(COMMANDS)
