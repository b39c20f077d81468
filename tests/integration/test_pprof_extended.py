"""Extended pprof (several sample types, labels, every view) read by the real pprof."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

import tfprof_lite
from tests.pprof_tool import run_pprof as _run_pprof
from tfprof_lite.errors import InvalidOptionError
from tfprof_lite.proto import messages as pb

pytestmark = pytest.mark.tf
tf_models = pytest.importorskip("tests.integration.tf_models")

B = tfprof_lite.ProfileOptionBuilder
METHODS = {
    "scope": "profile_name_scope",
    "graph": "profile_graph",
    "op": "profile_operations",
    "code": "profile_python",
}
SELECT = ["micros", "bytes", "float_ops", "params"]
TOTAL_KEYS = {
    "micros": "exec_micros_total",
    "bytes": "requested_bytes_total",
    "float_ops": "float_ops_total",
    "params": "parameters_total",
}


@pytest.fixture(scope="module")
def prof() -> tfprof_lite.Profiler:
    capture = tf_models.ALL_CAPTURES["cnn"]()
    profiler = tfprof_lite.Profiler(capture.graph)
    for step, data in capture.run_metas:
        profiler.add_step(step, data)
    return profiler


def _totals(prof: Any, view: str, tmp_path: Path) -> dict[str, int]:
    getattr(prof, METHODS[view])(
        dict(B().select(SELECT).build(), output=f"json:outfile={tmp_path / 'r.json'}")
    )
    rows = json.loads((tmp_path / "r.json").read_text())["rows"]
    if view == "op":
        return {
            k: sum(r[v.replace("_total", "_self")] for r in rows) for k, v in TOTAL_KEYS.items()
        }
    return {k: rows[0][v] for k, v in TOTAL_KEYS.items()}


@pytest.mark.parametrize("view", ["scope", "graph", "op", "code"])
def test_extended_pprof_totals_match_report(prof: Any, view: str, tmp_path: Path) -> None:
    path = tmp_path / "x.pb.gz"
    opts = B().select(SELECT).build()
    getattr(prof, METHODS[view])(dict(opts, output=f"pprof:outfile={path},extended=1"))
    profile = pb.PprofProfile.FromString(gzip.decompress(path.read_bytes()))
    strings = profile.string_table
    types = [strings[t.type] for t in profile.sample_type]
    assert types == ["count", "bytes", "float_ops", "micros", "params"]
    totals = _totals(prof, view, tmp_path)
    for index, name in enumerate(types[1:], start=1):
        assert sum(s.value[index] for s in profile.sample) == totals[name]
        unit = "us" if name == "micros" else ""
        top = _run_pprof("-top", f"-sample_index={name}", "-unit=us", str(path)) if unit else ""
        if unit:
            assert f"of {totals[name]}us total" in top.replace(",", "")
    raw = _run_pprof("-raw", str(path))
    assert "count/count bytes/bytes float_ops/count micros/microseconds params/count" in raw
    if view != "op":
        tags = _run_pprof("-tags", str(path))
        assert "device:" in tags and "op:" in tags


def test_extended_needs_numeric_select(prof: Any, tmp_path: Path) -> None:
    opts = dict(B().select(["device"]).build(), output=f"pprof:outfile={tmp_path / 'x'},extended=1")
    with pytest.raises(InvalidOptionError, match="extended pprof output needs a numeric select"):
        prof.profile_name_scope(opts)
