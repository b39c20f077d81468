"""The HTML report in a real browser: headless Chromium driven by Playwright.

Checks that the page loads without console errors, exceptions or network
requests, that tables sort on a header click and filter by name, that the tree
tables collapse and expand, that nothing scrolls sideways at 1,400 px, that the
trace viewer draws (non-blank canvas pixels), zooms, pans and shows the details
of a clicked op, that the flame graph draws and zooms, that a node named
``<script>alert(1)</script>`` stays text, and saves screenshots. Needs
Chromium (``scripts/install-tools.sh`` installs Debian's ``chromium``) and the
``playwright`` package (the ``test`` extra); skips without either.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.unit.cli import profiles
from tfprof_lite.cli import main


def _chromium() -> str | None:
    for name in (os.environ.get("TFPROF_CHROMIUM", ""), "chromium", "chromium-browser"):
        found = shutil.which(name) if name else None
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = _chromium()
    if executable is None:
        pytest.skip("chromium is not installed (run scripts/install-tools.sh)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
        )
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def report_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("report")
    profile = profiles.write_profile(root / "profile_2")
    target = root / "report.html"
    assert main(["report", str(profile), "-o", str(target)]) == 0
    return target


@pytest.fixture
def page(browser: Any, report_file: Path) -> Iterator[tuple[Any, list[str]]]:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    problems: list[str] = []
    page.on(
        "console",
        lambda m: (
            problems.append(f"console {m.type}: {m.text}")
            if m.type in ("error", "warning")
            else None
        ),
    )
    page.on("pageerror", lambda err: problems.append(f"page error: {err}"))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.on(
        "request",
        lambda r: problems.append(f"request: {r.url}") if not r.url.startswith("file:") else None,
    )
    page.goto(report_file.as_uri())
    page.wait_for_function("document.querySelectorAll('#flame rect').length > 0")
    page.wait_for_function("() => window.tfprofTraceFirstDraw !== undefined")
    yield page, problems
    page.close()


def _column(page: Any, table: str, index: int) -> list[str]:
    script = (
        "([table, index]) => Array.from(document.querySelectorAll(`#${table} tbody tr`))"
        ".filter(r => !r.hidden).map(r => r.cells[index].textContent)"
    )
    result: list[str] = page.evaluate(script, [table, index])
    return result


def test_loads_without_errors_and_saves_a_screenshot(
    page: tuple[Any, list[str]], tmp_path: Path
) -> None:
    tab, problems = page
    shot = tmp_path / "report.png"
    tab.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 10_000
    assert problems == []


def test_tables_sort_on_header_click(page: tuple[Any, list[str]]) -> None:
    tab, problems = page
    header = tab.locator("#t-op thead th", has_text="Time").first
    header.click()
    assert header.get_attribute("aria-sort") == "descending"
    assert _column(tab, "t-op", 0)[0] == "MatMul"
    header.click()
    assert header.get_attribute("aria-sort") == "ascending"
    assert _column(tab, "t-op", 0)[0] == "Placeholder"
    name = tab.locator("#t-scope thead th").first
    name.click()
    names = _column(tab, "t-scope", 0)
    assert names == sorted(names, key=str.lower)
    assert problems == []


def test_filter_hides_rows(page: tuple[Any, list[str]]) -> None:
    tab, _ = page
    tab.fill('input[data-table="t-scope"]', "dense1/")
    # Matching rows and their ancestors stay, so the tree still reads.
    assert set(_column(tab, "t-scope", 0)) == {"dense1", "dense1/MatMul", "dense1/Relu", "dense1/w"}
    assert tab.text_content("#t-scope-count") == "3 of 14 rows match"
    tab.fill('input[data-table="t-scope"]', "/^dense[12]$/")
    assert _column(tab, "t-scope", 0) == ["dense1", "dense2"]


def test_script_named_node_stays_text(page: tuple[Any, list[str]]) -> None:
    tab, problems = page
    names = _column(tab, "t-scope", 0)
    assert profiles.SCRIPT_NAME in names
    assert profiles.CLOSE_NAME in names
    injected = tab.evaluate("() => document.querySelectorAll('td script, td b, #flame b').length")
    assert injected == 0
    scripts = tab.evaluate("() => document.querySelectorAll('script').length")
    assert scripts == 4  # the flame and trace data, the trace viewer and the page script
    labels = tab.evaluate(
        "() => Array.from(document.querySelectorAll('#flame title')).map(t => t.textContent)"
    )
    assert any(label.startswith(profiles.SCRIPT_NAME) for label in labels)
    assert problems == []


def test_flame_graph_zooms(page: tuple[Any, list[str]]) -> None:
    tab, problems = page
    assert tab.text_content("#flame-info").startswith("_TFProfRoot: ")
    widths = tab.evaluate(
        "() => [document.querySelector('#flame rect').getBoundingClientRect().width,"
        " document.getElementById('flame').clientWidth]"
    )
    assert abs(widths[0] - widths[1]) <= 1.0  # the root spans the whole graph, unscaled
    tab.evaluate(
        "() => { const g = Array.from(document.querySelectorAll('#flame g'))"
        ".find(g => g.querySelector('title').textContent.startsWith('dense1\\n'));"
        " g.dispatchEvent(new MouseEvent('click', {bubbles: true})); }"
    )
    assert tab.text_content("#flame-info").startswith("dense1: ")
    tab.click("#flame-reset")
    assert tab.text_content("#flame-info").startswith("_TFProfRoot: ")
    tab.select_option("#flame-view", "code")
    assert tab.evaluate("() => window.tfprofFlame.view") == "code"
    assert problems == []


def test_filter_then_clear_restores_the_tree(page: tuple[Any, list[str]]) -> None:
    tab, problems = page
    tab.fill('input[data-table="t-scope"]', "/^dense[12]$/")
    assert _column(tab, "t-scope", 0) == ["dense1", "dense2"]
    tab.fill('input[data-table="t-scope"]', "")
    assert len(_column(tab, "t-scope", 0)) == 14
    assert problems == []


def test_tree_tables_collapse_and_expand(page: tuple[Any, list[str]], tmp_path: Path) -> None:
    tab, problems = page
    assert len(_column(tab, "t-scope", 0)) == 14  # small trees open fully
    row = tab.locator("#t-scope tbody tr").filter(has_text="dense1").first
    toggle = row.locator("button.tw")
    assert toggle.get_attribute("aria-expanded") == "true"
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "false"
    names = _column(tab, "t-scope", 0)
    assert "dense1" in names and not any(n.startswith("dense1/") for n in names)
    assert "dense2/MatMul" in names and len(names) == 11
    toggle.click()
    assert {"dense1/MatMul", "dense1/Relu", "dense1/w"} <= set(_column(tab, "t-scope", 0))
    tab.click('button.tree-all[data-table="t-scope"][data-open="0"]')
    assert _column(tab, "t-scope", 0) == ["dense1", "dense2", profiles.SCRIPT_NAME[:-8], "odd", "x"]
    tab.locator("#scopes").screenshot(path=str(tmp_path / "scopes.png"))
    tab.click('button.tree-all[data-table="t-scope"][data-open="1"]')
    assert len(_column(tab, "t-scope", 0)) == 14
    # Sorting by total time orders siblings and keeps children under their parent.
    tab.locator("#t-scope thead th", has_text="Total").first.click()
    names = _column(tab, "t-scope", 0)
    assert names[:4] == ["dense1", "dense1/MatMul", "dense1/Relu", "dense1/w"]
    assert names[4] == "dense2"
    assert problems == []


def test_nothing_scrolls_sideways_at_1400px(page: tuple[Any, list[str]]) -> None:
    tab, problems = page
    widths = tab.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert widths[0] <= widths[1]
    wide = tab.evaluate(
        "() => Array.from(document.querySelectorAll('.scroll, .trace-wrap, .cards'))"
        ".filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.outerHTML.slice(0, 80))"
    )
    assert wide == []
    assert problems == []


def _painted(tab: Any) -> int:
    """Pixels of the trace canvas's plot area that are not blank."""
    count: int = tab.evaluate(
        "() => { const c = document.getElementById('trace-canvas');"
        " const g = c.getContext('2d'); const r = window.devicePixelRatio || 1;"
        " const d = g.getImageData(180 * r, 45 * r, c.width - 180 * r, c.height - 45 * r).data;"
        " let n = 0; for (let i = 3; i < d.length; i += 4) { if (d[i] > 0) n++; } return n; }"
    )
    return count


def test_trace_viewer_draws_zooms_and_pans(page: tuple[Any, list[str]], tmp_path: Path) -> None:
    tab, problems = page
    canvas = tab.locator("#trace-canvas")
    canvas.scroll_into_view_if_needed()
    shot = tmp_path / "trace.png"
    canvas.screenshot(path=str(shot))
    assert shot.stat().st_size > 2_000
    assert _painted(tab) > 200
    start = tab.evaluate("() => window.tfprofTrace.range()")
    box = canvas.bounding_box()
    tab.mouse.move(box["x"] + box["width"] / 2, box["y"] + 60)
    tab.mouse.wheel(0, -600)  # wheel up: zoom in around the pointer
    zoomed = tab.evaluate("() => window.tfprofTrace.range()")
    assert zoomed[1] - zoomed[0] < (start[1] - start[0]) / 2
    assert zoomed[0] > start[0]
    canvas.focus()
    tab.keyboard.press("s")  # zoom out a little
    wider = tab.evaluate("() => window.tfprofTrace.range()")
    assert wider[1] - wider[0] > zoomed[1] - zoomed[0]
    tab.keyboard.press("d")  # pan right
    panned = tab.evaluate("() => window.tfprofTrace.range()")
    assert panned[0] > wider[0]
    assert (
        abs((panned[1] - panned[0]) - (wider[1] - wider[0])) < 1e-6 * (wider[1] - wider[0]) + 1e-6
    )
    # Dragging to the right moves the view to earlier times.
    tab.mouse.move(box["x"] + 600, box["y"] + 60)
    tab.mouse.down()
    tab.mouse.move(box["x"] + 700, box["y"] + 60, steps=4)
    tab.mouse.up()
    dragged = tab.evaluate("() => window.tfprofTrace.range()")
    assert dragged[0] < panned[0]
    tab.keyboard.press("0")
    assert tab.evaluate("() => window.tfprofTrace.range()") == start
    assert problems == []


def test_trace_click_shows_the_op(page: tuple[Any, list[str]], tmp_path: Path) -> None:
    tab, problems = page
    index = tab.evaluate("() => window.tfprofTrace.find('dense1/MatMul', 1)")
    assert index >= 0
    # Zoom to the step, then click the op.
    step = tab.evaluate("() => window.tfprofTrace.data.steps[1]")
    tab.evaluate(f"() => window.tfprofTrace.zoomTo({step[1]} - 5, {step[2]} + 5)")
    rect = tab.evaluate(f"() => window.tfprofTrace.box({index})")
    assert rect["w"] > 20  # wide enough to hit
    tab.locator("#trace-canvas").scroll_into_view_if_needed()
    box = tab.locator("#trace-canvas").bounding_box()
    tab.mouse.click(box["x"] + rect["x"] + rect["w"] / 2, box["y"] + rect["y"] + rect["h"] / 2)
    details = tab.text_content("#trace-details")
    assert "Namedense1/MatMul" in details
    assert "Op typeMatMul" in details
    assert "device:cpu:0" in details
    assert "Step1" in details
    assert "Inputsx, dense1/w" in details
    assert "Consumersdense1/Relu" in details
    assert "Duration41us" in details  # 40us + step 1, as recorded
    tab.locator("#trace").screenshot(path=str(tmp_path / "trace-selected.png"))
    # A click on a step slice zooms to that step.
    tab.keyboard.press("0")
    full = tab.evaluate("() => window.tfprofTrace.range()")
    x = tab.evaluate(f"() => window.tfprofTrace.x({(step[1] + step[2]) / 2})")
    tab.mouse.click(box["x"] + x, box["y"] + 30)
    assert tab.evaluate("() => window.tfprofTrace.range()") == [step[1], step[2]]
    assert full != [step[1], step[2]]
    assert problems == []


@pytest.fixture(scope="module")
def gpu_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.unit.cli.test_report_trace import _gpu_model
    from tfprof_lite.report import render_html

    target = tmp_path_factory.mktemp("gpu_report") / "report.html"
    target.write_text(render_html(_gpu_model().model, source="gpu"), encoding="utf-8")
    return target


def test_gpu_report_lanes_kernels_and_legend(
    browser: Any, gpu_report: Path, tmp_path: Path
) -> None:
    tab = browser.new_page(viewport={"width": 1400, "height": 900})
    problems: list[str] = []
    tab.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda err: problems.append(str(err)))
    tab.on("request", lambda r: problems.append(r.url) if not r.url.startswith("file:") else None)
    tab.goto(gpu_report.as_uri())
    tab.wait_for_function("() => window.tfprofTraceFirstDraw !== undefined")
    lanes = tab.evaluate("() => window.tfprofTrace.ev.lanes.map(l => [l.dev, l.kind])")
    assert [kind for _, kind in lanes] == ["cpu", "accelerator", "memcpy", "kernel"]
    assert lanes[1][0].endswith("/stream:all") and lanes[3][0].endswith("/stream:7")
    # A kernel on stream:7: its details name the launching op.
    index = tab.evaluate("() => window.tfprofTrace.find('volta_sgemm_128x64_nn', 0)")
    tab.locator("#trace-canvas").scroll_into_view_if_needed()
    rect = tab.evaluate(f"() => window.tfprofTrace.box({index})")
    box = tab.locator("#trace-canvas").bounding_box()
    tab.mouse.click(box["x"] + rect["x"] + rect["w"] / 2, box["y"] + rect["y"] + rect["h"] / 2)
    details = tab.text_content("#trace-details")
    assert "Kernelvolta_sgemm_128x64_nn" in details and "Launched bya/mm" in details
    assert "Op typeMatMul" in details and "stream:7 (kernel time)" in details
    tab.locator("#trace").screenshot(path=str(tmp_path / "gpu-trace.png"))
    assert _painted(tab) > 100
    legend = tab.text_content("#steps .legend")
    assert "Accelerator op time (summed)" in legend and "Input" not in legend
    total = tab.locator("#t-kernels thead th", has_text="Total").first
    total.click()
    assert _column(tab, "t-kernels", 0) == ["volta_sgemm_128x64_nn", "relu_kernel", "Memcpy"]
    total.click()
    assert _column(tab, "t-kernels", 0) == ["Memcpy", "relu_kernel", "volta_sgemm_128x64_nn"]
    # The launch columns: registers (a copy has none), shared memory, grid, tensor cores.
    regs = tab.locator("#t-kernels thead th", has_text="Regs").first
    regs.click()
    first = _column(tab, "t-kernels", 0)
    regs.click()
    assert _column(tab, "t-kernels", 0) == first[::-1]
    rows = {
        name: (r, s, g, tc)
        for name, r, s, g, tc in zip(
            _column(tab, "t-kernels", 0),
            _column(tab, "t-kernels", 10),
            _column(tab, "t-kernels", 11),
            _column(tab, "t-kernels", 12),
            _column(tab, "t-kernels", 15),
        )
    }
    assert rows["volta_sgemm_128x64_nn"] == ("126", "16.38KB", "4,1,1", "yes")  # a/mm: MatMul
    assert rows["relu_kernel"] == ("16", "0B", "1,1,1", "no")
    assert rows["Memcpy"] == ("--", "--", "--", "--")
    tab.locator("#kernels").screenshot(path=str(tmp_path / "kernels.png"))
    assert tab.evaluate(
        "() => document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )
    assert problems == []
    tab.close()


@pytest.fixture(scope="module")
def warmup_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of a saved 50-step profile whose step 0 is a 9x warm-up, with a
    code frame wider than the column for a forward op and its gradient."""
    root = tmp_path_factory.mktemp("warmup")
    profile = root / "profile_49"
    profile.write_bytes(profiles.warmup_profiler().serialize_to_string())
    target = root / "report.html"
    assert main(["report", str(profile), "-o", str(target)]) == 0
    return target


_SUFFIX_BOXES = """() => Array.from(document.querySelectorAll('#t-code td.name')).map(cell => {
  const sfx = cell.querySelector('span.sfx'), stem = cell.querySelector('span.stem');
  const c = cell.getBoundingClientRect();
  return {name: cell.textContent, cell: [c.left, c.right],
          sfx: sfx && [sfx.getBoundingClientRect().left, sfx.getBoundingClientRect().right],
          cut: stem ? stem.scrollWidth > stem.clientWidth : cell.scrollWidth > cell.clientWidth};
})"""


@pytest.mark.parametrize("width", [1400, 1000])
def test_gradient_suffix_stays_visible(
    browser: Any, warmup_report: Path, tmp_path: Path, width: int
) -> None:
    tab = browser.new_page(viewport={"width": width, "height": 900})
    problems: list[str] = []
    tab.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda err: problems.append(str(err)))
    tab.goto(warmup_report.as_uri())
    tab.wait_for_function("document.querySelectorAll('#t-code button.tw, #t-code .tw-pad').length")
    rows = [r for r in tab.evaluate(_SUFFIX_BOXES) if "[h = tf.nn.relu" in r["name"]]
    forward = [r for r in rows if not r["name"].endswith(" (gradient)")]
    gradient = [r for r in rows if r["name"].endswith(" (gradient)")]
    assert len(forward) == len(gradient) == 1
    # Both names are too wide for the column; the gradient row's suffix is whole
    # and inside its cell, so the two rows read differently.
    assert forward[0]["cut"] and gradient[0]["cut"] and forward[0]["sfx"] is None
    left, right = gradient[0]["cell"]
    assert left < gradient[0]["sfx"][0] < gradient[0]["sfx"][1] <= right + 0.5
    tab.locator("#code").screenshot(path=str(tmp_path / f"code-{width}.png"))
    assert problems == []
    tab.close()


def test_warmup_step_chart_and_memory(browser: Any, warmup_report: Path, tmp_path: Path) -> None:
    tab = browser.new_page(viewport={"width": 1400, "height": 900})
    tab.goto(warmup_report.as_uri())
    summary = tab.text_content("#steps-summary")
    assert summary.startswith("Wall time per step: median 4.70ms, mean 5.37ms, max 37.80ms.")
    # Typical steps fill over half the plot; the warm-up's bars are cut and labelled.
    heights = tab.evaluate(
        "() => Array.from(document.querySelectorAll('svg.steps g.bar')).map(g =>"
        " Array.from(g.querySelectorAll('rect[data-bar=wall]'))"
        ".reduce((s, r) => s + r.getBoundingClientRect().height, 0))"
    )
    assert len(heights) == 50 and min(heights[1:]) > 0.5 * heights[0]
    assert tab.text_content("svg.steps text.cutv") == "37.80ms"
    assert tab.locator("svg.steps path.cut").count() == 2
    assert tab.text_content("svg.steps text.outlier") == "0!"
    tab.locator("#steps").screenshot(path=str(tmp_path / "steps.png"))
    memory = tab.text_content("#memory")
    assert memory.count("/job:worker/replica:0/task:0/device:cpu:0") == 2  # heading + peaks
    assert "steps 0-49: no allocator data" in memory
    tab.locator("#memory").screenshot(path=str(tmp_path / "memory.png"))
    tab.close()


@pytest.fixture(scope="module")
def window_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An XSpace report with a kernel and allocations outside its steps."""
    from tests.unit.test_window_ops_memory import _space
    from tfprof_lite.formats.xspace.read.load import model_from_bytes
    from tfprof_lite.report import render_html

    target = tmp_path_factory.mktemp("window_report") / "report.html"
    model = model_from_bytes(_space(), "window.xplane.pb")
    target.write_text(render_html(model, source="window"), encoding="utf-8")
    return target


def test_events_and_memory_outside_the_steps_are_drawn(
    browser: Any, window_report: Path, tmp_path: Path
) -> None:
    tab = browser.new_page(viewport={"width": 1400, "height": 900})
    problems: list[str] = []
    tab.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda err: problems.append(str(err)))
    tab.goto(window_report.as_uri())
    tab.wait_for_function("() => window.tfprofTraceFirstDraw !== undefined")
    lanes = tab.evaluate("() => window.tfprofTrace.ev.lanes.map(l => l.dev)")
    outside = [i for i, dev in enumerate(lanes) if dev.endswith("(outside steps)")]
    assert len(outside) == 1
    # The kernel outside the steps is drawn and, clicked, names itself.
    index = tab.evaluate("() => window.tfprofTrace.find('late_kernel', -1)")  # (any step)
    assert index >= 0
    tab.evaluate(
        f"() => {{ const t = window.tfprofTrace, e = {index};"
        " t.zoomTo(t.ev.start[e] - 50, t.ev.start[e] + t.ev.dur[e] + 50); }"
    )
    tab.locator("#trace-canvas").scroll_into_view_if_needed()
    rect = tab.evaluate(f"() => window.tfprofTrace.box({index})")
    assert rect["w"] > 0 and rect["h"] > 0
    box = tab.locator("#trace-canvas").bounding_box()
    tab.mouse.click(box["x"] + rect["x"] + rect["w"] / 2, box["y"] + rect["y"] + rect["h"] / 2)
    details = tab.text_content("#trace-details")
    assert "late_kernel" in details and "Stepnone (outside the steps)" in details
    # The whole window's memory chart comes first, its peak marked and visible.
    memory = tab.text_content("#memory")
    assert memory.index("Whole window") < memory.index("Peak per step")
    assert "peak 7.00MB in use" in memory and "outside the steps" in memory
    peak = tab.locator("#memory svg.memory circle.peak").first.bounding_box()
    assert peak is not None and peak["width"] > 0
    tab.locator("#memory").screenshot(path=str(tmp_path / "window-memory.png"))
    tab.locator("#trace").screenshot(path=str(tmp_path / "window-trace.png"))
    assert problems == []
    tab.close()
