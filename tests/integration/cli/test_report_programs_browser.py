"""The report's XLA program sections in a real browser (headless Chromium).

On the H100 sample ``jax_h100_mlp``: the page loads without console errors or
network requests, the op profile table sorts by self time and filters by name,
the roofline and the memory viewer's chart are drawn (their SVG shapes exist
and have a size), and none of the three sections scrolls sideways at 1,400 px.
Screenshots of each section are saved. Needs Chromium and Playwright (see
``test_report_browser.py``, whose ``browser`` fixture this uses).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.cli.test_report_browser import browser  # noqa: F401 - a fixture
from tests.xspace_kernels import jax_file
from tfprof_lite.cli import main


@pytest.fixture(scope="module")
def xla_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("xla_report") / "report.html"
    assert main(["report", str(jax_file("jax_h100_mlp")), "-o", str(target)]) == 0
    return target


def test_program_sections_draw_sort_and_fit(
    browser: Any,  # noqa: F811 - the fixture
    xla_report: Path,
    tmp_path: Path,
) -> None:
    tab = browser.new_page(viewport={"width": 1400, "height": 900})
    problems: list[str] = []
    tab.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
    tab.on("pageerror", lambda err: problems.append(str(err)))
    tab.on("request", lambda r: problems.append(r.url) if not r.url.startswith("file:") else None)
    tab.goto(xla_report.as_uri())
    for anchor in ("op-profile", "roofline", "memory-viewer"):
        section = tab.locator(f"#{anchor}")
        section.screenshot(path=str(tmp_path / f"{anchor}.png"))
        assert (tmp_path / f"{anchor}.png").stat().st_size > 5_000
    header = tab.locator("#t-xla-ops thead th", has_text="Self time").first
    header.click()
    times = tab.evaluate(
        "() => Array.from(document.querySelectorAll('#t-xla-ops tbody tr'))"
        ".filter(r => !r.hidden).map(r => Number(r.cells[4].dataset.v))"
    )
    assert times == sorted(times, reverse=True) and times[0] > 100
    tab.fill('input[data-table="t-xla-ops"]', "/^custom-call/")
    names = tab.evaluate(
        "() => Array.from(document.querySelectorAll('#t-xla-ops tbody tr'))"
        ".filter(r => !r.hidden).map(r => r.cells[0].textContent)"
    )
    assert sorted(names) == ["custom-call.0", "custom-call.1", "custom-call.2"]
    drawn = tab.evaluate(
        "() => [document.querySelectorAll('#roofline circle').length,"
        " document.querySelectorAll('#roofline polyline').length,"
        " document.querySelector('#memory-viewer svg').getBoundingClientRect().width]"
    )
    assert drawn[0] >= 10 and drawn[1] >= 3 and drawn[2] > 400
    wide = tab.evaluate(
        "() => Array.from(document.querySelectorAll("
        "'#op-profile .scroll, #roofline .scroll, #memory-viewer .scroll'))"
        ".filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.outerHTML.slice(0, 80))"
    )
    assert wide == []
    assert problems == []
    tab.close()
