"""The HTML report (``tfprof_lite.report``) and ``tfprof-lite report``, without a browser
(``tests/integration/test_report_browser.py`` drives it in headless Chromium)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.unit.cli import profiles
from tests.unit.cli.conftest import Runner
from tfprof_lite import Profiler, report
from tfprof_lite.report import render_html, script_json, step_times


@pytest.fixture(scope="module")
def page() -> str:
    return render_html(profiles.profiler().model, source="synthetic")


class _Collector(HTMLParser):
    """Collects text per element id, table cells, and external references."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[str] = []
        self.refs: list[str] = []
        self.scripts: dict[str, str] = {}
        self._cell: list[str] | None = None
        self._script: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        for key in ("src", "href"):
            if found.get(key) and not str(found[key]).startswith("#"):
                self.refs.append(str(found[key]))
        if tag == "td":
            self._cell = []
        if tag == "script":
            self._script = found.get("id") or "inline"

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.cells.append("".join(self._cell))
            self._cell = None
        if tag == "script":
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._script is not None:
            self.scripts[self._script] = self.scripts.get(self._script, "") + data


def _parse(page: str) -> _Collector:
    collector = _Collector()
    collector.feed(page)
    return collector


def test_page_is_self_contained(page: str) -> None:
    parsed = _parse(page)
    assert parsed.refs == []
    assert "@import" not in page and "url(" not in page
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert page.startswith("<!DOCTYPE html>")


def test_profile_text_stays_text(page: str) -> None:
    assert profiles.SCRIPT_NAME not in page
    assert "</script><b>" not in page
    parsed = _parse(page)
    assert profiles.SCRIPT_NAME in parsed.cells
    assert profiles.CLOSE_NAME in parsed.cells
    data = json.loads(parsed.scripts["flame-data"])
    names = json.dumps(data, ensure_ascii=False)
    assert profiles.SCRIPT_NAME in names and profiles.CLOSE_NAME in names


def test_script_json_escapes_markup() -> None:
    text = script_json({"n": "</script><!-- & \u2028"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"n": "</script><!-- & \u2028"}


def test_sections_and_tables(page: str) -> None:
    for anchor in ("overview", "steps", "trace", "flamegraph", "ops", "scopes", "code", "memory"):
        assert f'<section id="{anchor}">' in page
    assert '<table class="data sortable" id="t-steps">' in page
    # 12 columns: the name column keeps 240px, each number column 86px.
    assert '<table class="data sortable fixed" id="t-op" style="min-width: 1186px">' in page
    for table in ("t-scope", "t-code"):
        assert f'<table class="data sortable fixed tree" id="{table}" style="min-width: ' in page
    assert page.count('class="filter"') == 3
    assert '<section id="kernels">' not in page  # a CPU-only profile has no kernel table
    parsed = _parse(page)
    assert "MatMul" in parsed.cells and "dense1/MatMul" in parsed.cells
    assert "train.py:10:main [main()]" in parsed.cells  # user-code mode by default


def test_code_view_all_frames() -> None:
    model = profiles.profiler().model
    cells = _parse(render_html(model, all_frames=True)).cells
    assert "train.py:10:main" in cells and "train.py:10:main [main()]" not in cells


def test_overview_numbers(page: str) -> None:
    assert [s.total for s in step_times(profiles.profiler().model)] == [104, 113, 122]
    assert re.search(r'<div class="k">Steps</div><div class="v">3</div>', page)
    assert "/job:localhost/replica:0/task:0/device:cpu:0" in page
    assert page.count('<g class="bar">') == 3
    # Steps run back to back: the wall time equals the summed op time here.
    assert (
        "step 2: wall 122us (input 0us, compute 122us, idle 0us); summed op time 122us "
        "(cpu 122us, accelerator 0us)"
    ) in page
    assert re.search(r'<div class="k">Mean time per step \(wall\)</div><div class="v">113us<', page)
    assert re.search(
        r'<div class="k">Median time per step \(wall\)</div><div class="v">113us<', page
    )


def test_glossary_defines_every_column(page: str) -> None:
    for column in report.op_columns(1) + report.tree_columns("Scope"):
        assert column.term in report.GLOSSARY
        assert f"<dt>{column.term}</dt>" in page.replace("&#x27;", "'")
    for term in ("Self", "Total", "CPU time", "Accelerator time", "Peak bytes", "Residual bytes"):
        assert f"<dt>{term}</dt>" in page


def test_code_section_without_traces() -> None:
    prof = profiles.profiler()
    prof.model.has_trace = False
    page = render_html(prof.model)
    assert "This profile has no code traces" in page
    assert 't-code"' not in page


def test_row_cap_keeps_the_slowest() -> None:
    page = render_html(profiles.profiler().model, max_rows=2)
    assert "2 rows (the 2 slowest of 14)" in page  # scope
    assert "2 rows (the 2 slowest of 10)" in page  # code
    assert "2 rows (the 2 slowest of 5)" in page  # op


def test_slots(monkeypatch: pytest.MonkeyPatch) -> None:
    model = profiles.profiler().model
    monkeypatch.setitem(report.SLOTS, "memory", ("Memory timeline", lambda m: "<p>MEM</p>"))

    def broken(m: object) -> str:
        raise RuntimeError("advisor exploded\nsecond line")

    monkeypatch.setitem(report.SLOTS, "advisor", ("Advisor findings", broken))
    page = render_html(model)
    assert '<div class="slot" data-slot="memory"><p>MEM</p></div>' in page
    assert "This section failed: advisor exploded second line" in page


def test_advisor_failure_is_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    import tfprof_lite.advisor as advisor

    def boom(model: object, options: object) -> None:
        raise ValueError("<no>")

    monkeypatch.setattr(advisor, "run_checkers", boom)
    fragment = report.advisor_section(profiles.profiler().model)
    assert fragment == (
        '<p class="muted">The advisor could not run on this profile: &lt;no&gt;</p>'
    )


def test_memory_section(page: str) -> None:
    fragment = report.memory_timeline_section(profiles.profiler().model)
    assert fragment is not None and fragment in page
    assert '<div class="slot" data-slot="memory"><p class="muted">Step ' in page
    assert '<svg class="chart memory"' in fragment and '<circle class="peak"' in fragment
    assert "dense1/MatMul" in _parse(fragment).cells
    # Node names stay text in the memory tables too.
    assert profiles.SCRIPT_NAME not in fragment and profiles.CLOSE_NAME not in fragment
    assert profiles.SCRIPT_NAME in _parse(fragment).cells
    assert report.memory_timeline_section(Profiler(profiles.graph_def()).model) is None


def test_deterministic() -> None:
    model = profiles.profiler().model
    assert render_html(model) == render_html(model)


def test_cli_writes_the_file(run: Runner, profile: Path, tmp_path: Path) -> None:
    target = tmp_path / "r.html"
    result = run("report", profile, "-o", target, "--title", "T <1>")
    assert result.code == 0, result.err
    assert result.out.startswith(f"Wrote {target} (")
    html_text = target.read_text()
    assert "<title>T &lt;1&gt;</title>" in html_text
    stdout = run("report", profile, "--output", "-", "--title", "T <1>")
    assert stdout.out == html_text


def test_cli_step_and_filters(run: Runner, profile: Path, tmp_path: Path) -> None:
    target = tmp_path / "r.html"
    result = run("report", profile, "-o", target, "-step", 0, "-hide_name_regexes", "dense2.*")
    assert result.code == 0, result.err
    text = target.read_text()
    assert "tables show step 0" in text
    assert '<td class="name">dense2/MatMul</td>' not in text
    assert '<td class="name">dense1/MatMul</td>' in text


def test_cli_single_dash_output_spelling(run: Runner, profile: Path, tmp_path: Path) -> None:
    target = tmp_path / "x.html"
    assert run("report", profile, "-output", target).code == 0
    assert target.exists()


def test_cli_unknown_step(run: Runner, profile: Path, tmp_path: Path) -> None:
    result = run("report", profile, "-o", tmp_path / "r.html", "-step", 9)
    assert result.code == 1
    assert result.err == (
        f"tfprof-lite: error: {profile}: no step 9 in this profile (steps: 0, 1, 2)\n"
    )
    assert not (tmp_path / "r.html").exists()


def test_graph_only_report(run: Runner, data_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "g.html"
    result = run("report", "--graph", data_dir / "raw" / "graph.pb", "-o", target)
    assert result.code == 0, result.err
    assert result.err == ""  # the advisor's log messages go into the page
    assert "No steps were recorded" in target.read_text()


def test_advisor_log_messages_become_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    import logging

    import tfprof_lite.advisor as advisor

    def fake(model: object, options: dict[str, object]) -> object:
        logging.getLogger("tfprof_lite").warning("Missing <run_meta>")
        logging.getLogger("tfprof_lite").warning("Missing <run_meta>")
        return {"OperationChecker": ["use <NCHW>"]}

    monkeypatch.setattr(advisor, "run_checkers", fake)
    fragment = report.advisor_section(profiles.profiler().model)
    assert fragment == (
        '<p class="muted">Advisor notes:</p><ul class="muted"><li>Missing &lt;run_meta&gt;</li>'
        '</ul><h3>OperationChecker</h3><ul class="advice"><li>use &lt;NCHW&gt;</li></ul>'
    )
