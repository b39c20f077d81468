"""JSON, CSV and collapsed-stack outputs agree with the text report on real models."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

import tfprof_lite
from tests.integration.table_checks import assert_op_rows_match_text, report_lines
from tfprof_lite.base.units import format_memory, format_number, format_time

pytestmark = pytest.mark.tf
tf_models = pytest.importorskip("tests.integration.tf_models")

B = tfprof_lite.ProfileOptionBuilder
METHODS = {
    "scope": "profile_name_scope",
    "graph": "profile_graph",
    "op": "profile_operations",
    "code": "profile_python",
}
SELECT = ["bytes", "micros", "float_ops", "occurrence"]
_ours: dict[str, tfprof_lite.Profiler] = {}


@pytest.fixture(scope="module", params=["dense_net", "rnn"])
def prof(request: pytest.FixtureRequest) -> tfprof_lite.Profiler:
    name = request.param
    if name not in _ours:
        capture = tf_models.ALL_CAPTURES[name]()
        profiler = tfprof_lite.Profiler(capture.graph)
        for step, data in capture.run_metas:
            profiler.add_step(step, data)
        _ours[name] = profiler
    return _ours[name]


def _run(prof: tfprof_lite.Profiler, view: str, output: str, builder: Any) -> None:
    getattr(prof, METHODS[view])(dict(builder.build(), output=output))


def _pair(row: dict[str, Any], name: str, fmt: Any) -> str:
    total = fmt(row[f"{name}_total"])
    self_value = row[f"{name}_self"]
    return f"--/{total}" if self_value is None else f"{fmt(self_value)}/{total}"


def _expected_tree_line(row: dict[str, Any], code: bool) -> str:
    fields = [] if code else [_pair(row, "float_ops", format_number) + " flops"]
    fields.append(_pair(row, "requested_bytes", format_memory))
    for stat in ("exec_micros", "accelerator_exec_micros", "cpu_exec_micros"):
        fields.append(_pair(row, stat, format_time))
    if code:
        fields.append(_pair(row, "float_ops", format_number) + " flops")
        fields.append("occurrence N/A in code view")
    else:
        run = _pair(row, "run_count", format_number)
        defined = format_number(row["definition_count"])
        fields.append(f"{run}|{'1' if row['accounted'] else '--'}/{defined}")
    return " " * (2 * row["depth"]) + f"{row['name']} ({', '.join(fields)})"


@pytest.mark.parametrize("view", ["scope", "graph", "code"])
def test_json_and_csv_match_tree_text(prof: Any, view: str, tmp_path: Path) -> None:
    builder = B().select(SELECT).with_max_depth(6)
    _run(prof, view, f"file:outfile={tmp_path / 'r.txt'}", builder)
    _run(prof, view, f"json:outfile={tmp_path / 'r.json'}", builder)
    _run(prof, view, f"csv:outfile={tmp_path / 'r.csv'}", builder)
    text_lines = (tmp_path / "r.txt").read_text().split("Profile:\n", 1)[1].splitlines()[1:]
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["schema"] == "tfprof_lite.view" and doc["version"] == 1
    expected = [_expected_tree_line(row, view == "code") for row in doc["rows"]]
    assert expected == text_lines
    with open(tmp_path / "r.csv", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert [r["name"] for r in table] == [r["name"] for r in doc["rows"]]
    for csv_row, json_row in zip(table, doc["rows"]):
        for key, value in json_row.items():
            assert csv_row[key] == ("" if value is None else str(value))


def test_json_matches_op_text(prof: Any, tmp_path: Path) -> None:
    builder = B().select(["bytes", "micros", "params", "float_ops", "occurrence"])
    builder = builder.order_by("micros")
    _run(prof, "op", f"file:outfile={tmp_path / 'r.txt'}", builder)
    _run(prof, "op", f"json:outfile={tmp_path / 'r.json'}", builder)
    lines = report_lines((tmp_path / "r.txt").read_text())
    rows = json.loads((tmp_path / "r.json").read_text())["rows"]
    assert rows and len(rows) == len(lines)
    assert_op_rows_match_text(rows, lines)


@pytest.mark.parametrize("view", ["scope", "code", "op"])
def test_collapsed_stacks_add_up(prof: Any, view: str, tmp_path: Path) -> None:
    builder = B().select(["micros"]).with_max_depth(1000)
    _run(prof, view, f"collapsed:outfile={tmp_path / 's.txt'}", builder)
    _run(prof, view, f"json:outfile={tmp_path / 'r.json'}", builder)
    lines = (tmp_path / "s.txt").read_text().splitlines()
    total = sum(int(line.rsplit(" ", 1)[1]) for line in lines)
    rows = json.loads((tmp_path / "r.json").read_text())["rows"]
    if view == "op":
        assert total == sum(r["exec_micros_self"] for r in rows)
    else:
        assert total == rows[0]["exec_micros_total"]
        assert all(line.startswith("_TFProfRoot") for line in lines)
