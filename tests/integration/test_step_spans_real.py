"""Step markers are the steps' spans, never nodes, in real captures.

A marked JAX CPU loop (``StepTraceAnnotation("train")``), Keras 3 ``fit`` on
TF 2.21 (steps inferred from its ``multi_step_on_iterator`` calls), both made
in child processes (``tests/integration/step_captures.py``), and the H100
samples. Each step's root is its span (``StepExecs.span``), so no output lists
it: not the scope, graph, op or code views (text, JSON, CSV, collapsed stacks),
not pprof (its functions decoded), not ``diff``, not the advisor, not the
report's tables. Each step's wall time is its span's, which holds all its
records (as the marker's record did); ``tests/integration/test_xspace_steps_real.py``
checks those times against the loops' own timers and the H100 samples' notes.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from pathlib import Path

import pytest

from tests.integration.cli.runner import invoke
from tests.integration.step_captures import jax_loop, keras_fit
from tests.pprof_tool import traced_frames
from tests.xspace_data import JAX_CASES, jax_file
from tfprof_lite.analysis import steptime
from tfprof_lite.analysis.diff import DIFF_VIEWS, Side, view_values
from tfprof_lite.formats.xspace.read.load import load_model
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.proto import messages as pb

VIEWS = ("scope", "graph", "op", "code")


def _case(case: str) -> tuple[Path, str]:
    """The XSpace file of ``case`` and the name of its step roots."""
    if case == "jax_markers":
        return jax_loop("markers").xplane, "train"
    if case == "keras_fit":
        return keras_fit().xplane, "multi_step_on_iterator"
    return jax_file(case), "train"


CASES = ("jax_markers", pytest.param("keras_fit", marks=pytest.mark.tf), *JAX_CASES)


def _spans_hold_the_steps(model: ProfileModel, root: str) -> None:
    """Every step has a span named after its root, no record and no node do;
    the wall time is the span's (which holds every record of the step)."""
    assert root not in model.names
    assert not any(n.endswith("/" + root) or n == root for n in model.names)
    report = steptime.step_times(model)
    assert report.steps
    for timing in report.steps:
        execs = model.steps[timing.step]
        span = execs.span
        assert span is not None and span.name == root
        assert not any("/steps" in d for d in execs.device_names)
        starts, ends = execs.spans["start"], execs.spans["end"]
        assert span.start <= int(starts.min()) and int(ends.max()) <= span.end
        assert timing.wall_micros == span.end - span.start
    ordered = model.sorted_steps()
    batched = steptime._measure(model, ordered)
    assert batched == [steptime._one_step(model, s) for s in ordered]


def _pprof_functions(path: Path) -> set[str]:
    """The functions of a pprof file, as the real pprof reads them (and as the
    file's own function table lists them: the same)."""
    profile = pb.PprofProfile.FromString(gzip.decompress(path.read_bytes()))
    names = {profile.string_table[f.name] for f in profile.function}
    assert names  # a profile of the ops' time
    assert traced_frames(path) == names
    return names


def _names(kind: str, body: str) -> set[str]:
    """The node names of a view written as ``kind`` (json, csv, collapsed)."""
    if kind == "json":
        rows = json.loads(body)["rows"]
        return {r["name"] for r in rows} | {r["parent"] for r in rows}
    if kind == "csv":
        return {row[0] for row in csv.reader(io.StringIO(body))} - {"name"}
    return {frame for line in body.splitlines() for frame in line.rsplit(" ", 1)[0].split(";")}


def _two_steps(model: ProfileModel) -> str:
    first, second = model.sorted_steps()[1:3]
    return f"{first},{second}"


def _leaf(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _no_root_in_outputs(xplane: Path, root: str, out: Path) -> None:
    # a node or op type of the text views: its name heads its line
    heads = re.compile(rf"^\s*{re.escape(root)}(\s|$)", re.M)
    for view in VIEWS:
        text = invoke(view, xplane, "-select", "micros,occurrence").output
        assert view == "code" or text.count("\n") > 5, (view, text)
        assert not heads.search(text), (view, text)
        for kind in ("json", "csv", "collapsed"):
            target = out / f"{view}.{kind}"
            invoke(view, xplane, "-output", f"{kind}:outfile={target}")
            if view == "code" and not target.exists():
                continue  # (no code traces: Keras)
            names = _names(kind, target.read_text())
            assert len(names) > 2 and root not in {_leaf(n) for n in names}, (view, kind)
    code = invoke("code", xplane).output.strip() != ""  # (Keras: no code traces)
    for view in ("scope", "op", "code") if code else ("scope", "op"):  # pprof's views
        pprof = out / f"{view}.pb.gz"
        invoke("pprof", xplane, "--view", view, "-o", pprof)
        names = _pprof_functions(pprof)
        assert root not in {_leaf(n) for n in names}
    model = load_model(str(xplane))
    for view in DIFF_VIEWS:  # every entry diff compares, listed or not
        values, _ = view_values(Side(model, "a"), view)
        assert len(values) > 2 and root not in {_leaf(n) for n in values}, view
    diff = json.loads(invoke("diff", xplane, "--steps", _two_steps(model), "--json").output)
    listed = re.findall(r'"name": "([^"]*)"', json.dumps(diff))
    # two steps of a steady loop may differ in no entry (none listed), but
    # every view compared its entries: the root is none of them (above)
    assert all(sum(v["counts"].values()) > 2 for v in diff["views"].values()), diff["views"]
    assert root not in {_leaf(n) for n in listed}
    advice = invoke("advise", xplane).output
    assert not heads.search(advice) and f" {root} " not in advice, advice
    report = out / "report.html"
    invoke("report", xplane, "-o", report)
    cells = {c.strip() for c in re.findall(r"<td[^>]*>([^<]*)</td>", report.read_text())}
    assert cells and root not in {_leaf(c) for c in cells}


@pytest.mark.parametrize("case", CASES)
def test_step_roots_are_spans_not_nodes(case: str) -> None:
    xplane, root = _case(case)
    _spans_hold_the_steps(load_model(str(xplane)), root)


@pytest.mark.parametrize("case", CASES)
def test_no_output_shows_a_step_root(case: str, tmp_path: Path) -> None:
    xplane, root = _case(case)
    _no_root_in_outputs(xplane, root, tmp_path)
