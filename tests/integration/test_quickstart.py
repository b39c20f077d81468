"""examples/quickstart.py (what ``make run`` runs) and every file it leaves in tfprof_out/.

The example runs as a subprocess in a temporary working directory (it writes to
``./tfprof_out`` and sets the XLA flags itself before importing TensorFlow); the
tests read its outputs back with tfprof_lite, the real pprof and ``xml.etree``.
A second run with ``dot`` off the PATH checks the fallback to DOT text.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

import tfprof_lite
from tests.integration.table_checks import assert_op_rows_match_text, csv_value, report_lines
from tfprof_lite.analysis.monitoring import parse_line
from tfprof_lite.proto import messages as pb

pytestmark = pytest.mark.tf

if importlib.util.find_spec("tensorflow") is None:
    pytest.skip("TensorFlow is not installed", allow_module_level=True)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "quickstart.py"
B = tfprof_lite.ProfileOptionBuilder
HAS_DOT = shutil.which("dot") is not None


@dataclass(frozen=True)
class Run:
    """One run of the example: its output directory and what it printed."""

    out: Path
    stdout: str
    stderr: str


def _run_example(cwd: Path, path: str | None = None) -> Run:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    for name in ("TF_XLA_FLAGS", "XLA_FLAGS"):
        env.pop(name, None)
    if path is not None:
        env["PATH"] = path
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    return Run(cwd / "tfprof_out", proc.stdout, proc.stderr)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return _run_example(tmp_path_factory.mktemp("quickstart"))


@pytest.fixture(scope="module")
def profile(run: Run) -> tfprof_lite.Profiler:
    return tfprof_lite.Profiler.load(run.out / "profile_4")


def test_lists_every_file_it_wrote(run: Run) -> None:
    listing = run.stdout.split(f"Wrote to {run.out}/:\n", 1)[1].splitlines()
    names = [name for line in listing for name in re.split(r"\s{2,}", line.strip())[1].split(", ")]
    expected = {"profile_2", "profile_4", "monitor.jsonl", "params.txt", "steps.json"}
    expected |= {"code_micros.pb.gz", "ops.csv", "advice.txt", "overview.txt", "overview.json"}
    expected |= {"xla_dump/"}
    assert expected <= set(names)
    for name in names:
        assert (run.out / name).exists(), name


def test_profiles_load(run: Run) -> None:
    early, late = (tfprof_lite.Profiler.load(run.out / f"profile_{n}") for n in (2, 4))
    assert early.model.sorted_steps() == [0, 1, 2]
    assert late.model.sorted_steps() == [0, 1, 2, 3, 4]


def test_timeline_is_a_chrome_trace_of_the_steps(run: Run) -> None:
    trace = json.loads((run.out / "steps.json").read_text(encoding="utf-8"))
    events = trace["traceEvents"]
    steps = [e["args"]["step"] for e in events if e.get("cat") == "Step"]
    assert steps == [0, 1, 2, 3, 4]
    ops = [e for e in events if e["ph"] == "X" and e.get("cat") != "Step"]
    assert any(e["args"]["op"] == "MatMul" and e["name"].startswith("gradients/") for e in ops)
    assert all(e["dur"] >= 0 and "op" in e["args"] for e in ops)
    assert f"({len(events)} events)" in run.stdout


def test_pprof_file_is_the_code_views(run: Run, profile: tfprof_lite.Profiler) -> None:
    path = run.out / "code_micros.pb.gz"
    data = pb.PprofProfile.FromString(gzip.decompress(path.read_bytes()))
    strings = data.string_table
    assert [strings[t.type] for t in data.sample_type] == ["count", "micros"]
    # The same profile as the code view of the saved profile_4 (all 5 steps).
    again = run.out.parent / "again.pb.gz"
    profile.profile_python(B().select(["micros"]).with_pprof_output(str(again)).build())
    assert gzip.decompress(again.read_bytes()) == gzip.decompress(path.read_bytes())
    assert data.sample and sum(s.value[1] for s in data.sample) > 0


def test_real_pprof_reads_the_pprof_file(run: Run) -> None:
    from tests.pprof_tool import run_pprof as _run_pprof  # skips without pprof

    path = run.out / "code_micros.pb.gz"
    data = pb.PprofProfile.FromString(gzip.decompress(path.read_bytes()))
    total = sum(s.value[1] for s in data.sample)
    top = _run_pprof("-top", "-sample_index=micros", "-unit=us", str(path))
    assert f"of {total}us total" in top.replace(",", "")
    assert "quickstart:" in _run_pprof("-traces", str(path))


def test_csv_is_the_op_view(run: Run, profile: tfprof_lite.Profiler) -> None:
    with open(run.out / "ops.csv", newline="", encoding="utf-8") as handle:
        rows = [{k: csv_value(v) for k, v in row.items()} for row in csv.DictReader(handle)]
    # The example's op view options, on the saved profile (the same 5 steps).
    opts = B(B.time_and_memory()).select(["micros", "bytes", "occurrence"]).build()
    text = run.out.parent / "ops.txt"
    profile.profile_operations(dict(opts, output=f"file:outfile={text}"))
    lines = report_lines(text.read_text(encoding="utf-8"))
    assert len(rows) == len(lines) > 5
    assert_op_rows_match_text(rows, lines)
    # ... and the op view the example printed.
    assert all(line in run.stdout for line in lines)


def _sections(text: str) -> dict[str, str]:
    parts = re.split(r"^(\w+Checker):\n", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def test_advice_has_every_checker(run: Run, profile: tfprof_lite.Profiler) -> None:
    sections = _sections((run.out / "advice.txt").read_text(encoding="utf-8"))
    # JobChecker reports only profiles of two or more tasks; this one has one.
    assert set(sections) == set(tfprof_lite.ALL_ADVICE) - {"JobChecker"}
    assert "top 1 operation type:" in sections["ExpensiveOperationChecker"]
    assert "peak" in sections["MemoryChecker"]
    with contextlib.redirect_stdout(io.StringIO()) as again:
        profile.advise(tfprof_lite.ALL_ADVICE)
    # Saved profiles keep no allocator details, so MemoryChecker differs on them.
    reloaded = _sections(again.getvalue())
    for name in ("ExpensiveOperationChecker", "InputPipelineChecker", "StepTimeChecker"):
        assert sections[name] == reloaded[name]
    assert "\nExpensiveOperationChecker:\n" not in run.stdout  # in the file only


def test_overview_text_and_json(run: Run) -> None:
    page = json.loads((run.out / "overview.json").read_text(encoding="utf-8"))
    assert page["steps"] == 5 and page["avg_step_micros"] > 0
    assert page["top_ops"] and page["recommendation"]
    text = (run.out / "overview.txt").read_text(encoding="utf-8")
    assert text.startswith("steps: 5, average step time:")
    assert text in run.stdout


def test_xla_cluster_times_and_drawing(run: Run) -> None:
    assert re.search(r"^cluster_\d+ +cluster_\d+_1 +compile\+run +3 ", run.stdout, re.MULTILINE)
    assert any((run.out / "xla_dump").glob("module_*.dot"))
    svgs = list(run.out.glob("module_*.svg"))
    dots = list(run.out.glob("module_*.dot"))
    if not HAS_DOT:
        assert len(dots) == 1 and "Wrote the DOT source instead." in run.stdout
        pytest.skip("Graphviz's dot is missing (scripts/install-tools.sh)")
    assert len(svgs) == 1 and not dots
    root = ET.parse(svgs[0]).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert "<svg" in svgs[0].read_text(encoding="utf-8")


def test_monitoring_summary_line(run: Run) -> None:
    summaries = [
        line for line in run.stderr.splitlines() if line.startswith("tfprof_lite monitor summary:")
    ]
    assert len(summaries) == 1
    fields = parse_line(summaries[0])
    assert fields["runs"] == "200" and fields["windows"] == "2"
    records = [json.loads(line) for line in (run.out / "monitor.jsonl").read_text().splitlines()]
    assert [r["event"] for r in records] == ["start", "window", "window", "end"]


def test_without_dot_writes_dot_text_and_one_line(tmp_path: Path) -> None:
    # PATH without Graphviz: only the interpreter's directory (a venv's bin/).
    result = _run_example(tmp_path, path=str(Path(sys.executable).parent))
    if shutil.which("dot", path=str(Path(sys.executable).parent)):
        pytest.skip("dot is in the interpreter's directory")
    hints = [line for line in result.stdout.splitlines() if line.startswith("No SVG: ")]
    assert len(hints) == 1 and "apt-get install graphviz" in hints[0]
    drawings = list(result.out.glob("module_*"))
    assert [p.suffix for p in drawings] == [".dot"]
    assert drawings[0].read_text(encoding="utf-8").lstrip().startswith("digraph")


def test_saved_profiles_carry_xla_compat(run: Run, capsys: pytest.CaptureFixture[str]) -> None:
    from tfprof_lite.cli import main

    capsys.readouterr()
    assert main(["xla-compat", str(run.out / "profile_4")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("XLA_CPU_JIT: 100.0% of ") and "dense1" in out
