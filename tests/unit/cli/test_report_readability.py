"""The report's readability: unambiguous counts, the ``(gradient)`` suffix kept,
a warm-up step that neither squashes the step chart nor hides the typical step
time, and a memory section that names each step range and device once.

The profile is :func:`tests.unit.cli.profiles.warmup_profiler`: 50 steps of about
4.5 ms after a 9x warm-up step, MatMuls of 85.03 M FLOPs, a forward MatMul and
its gradient under one long code frame, one long device name.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from tests.unit.cli import profiles
from tfprof_lite import Profiler
from tfprof_lite.analysis.memory import memory_profile, step_ranges
from tfprof_lite.analysis.steptime import outliers, step_times
from tfprof_lite.base.units import format_count
from tfprof_lite.report import render_html
from tfprof_lite.report.memory import memory_fragment
from tfprof_lite.report.steps import CAP_HEADROOM, chart_scale, step_chart_svg, step_rows
from tfprof_lite.report.tables import name_markup


@pytest.fixture(scope="module")
def model() -> object:
    """The warm-up profile as ``tfprof-lite report profile_49`` reads it (saved)."""
    return Profiler.load(profiles.warmup_profiler().serialize_to_string()).model


@pytest.fixture(scope="module")
def page(model: object) -> str:
    return render_html(model)  # type: ignore[arg-type]


def _card(page: str, key: str) -> str:
    found = re.search(rf'<div class="k">{re.escape(key)}</div><div class="v">([^<]*)<', page)
    assert found, key
    return found.group(1)


@pytest.mark.parametrize(
    ("count", "unit", "text"),
    [
        (0, "", "0"),
        (999, "", "999"),
        (1000, "", "1.00 k"),
        (85_030_000, "", "85.03 M"),
        (2_130_000_000, "FLOPs", "2.13 GFLOPs"),
        (7, "FLOPs", "7 FLOPs"),
        (999_999, "", "1.00 M"),
        (999_994, "", "999.99 k"),
        (3 * 10**15, "", "3.00 P"),
        (-1500, "", "-1.50 k"),
    ],
)
def test_format_count(count: int, unit: str, text: str) -> None:
    assert format_count(count, unit) == text


def test_report_counts_never_read_as_milli(page: str) -> None:
    # tfprof writes 85.03m (m = million); the report writes 85.03 M.
    assert not re.search(r">\d+\.\d\d[kmb]<", page)
    assert _card(page, "FLOPs per step (nodes that ran)") == "170.06 M"
    assert ">85.03 M<" in page  # a table cell


def test_gradient_suffix_in_its_own_span(page: str) -> None:
    assert name_markup("a.py:1:f (gradient)") == (
        '<span class="stem">a.py:1:f</span><span class="sfx"> (gradient)</span>'
    )
    assert name_markup("<b> (gradient)") == (
        '<span class="stem">&lt;b&gt;</span><span class="sfx"> (gradient)</span>'
    )
    assert name_markup("plain") == "plain" and name_markup(" (gradient)") == " (gradient)"
    forward = f"train_loop.py:54:build_model [{profiles.WARMUP_LINE}]"
    code = page[page.index('id="t-code"') :]
    assert f'<td class="name">{forward}</td>' in code
    assert (
        f'<td class="name"><span class="stem">{forward}</span>'
        '<span class="sfx"> (gradient)</span></td>'
    ) in code
    css = page[page.index("<style>") : page.index("</style>")]
    assert "td.name span.stem" in css and "text-overflow: ellipsis" in css


def test_median_beside_mean(model: object, page: str) -> None:
    times = step_times(model)  # type: ignore[arg-type]
    assert [s.step for s in outliers(times)] == [0]
    assert times.mean_micros > 1.1 * times.p50_micros  # the warm-up lifts the mean
    assert _card(page, "Median time per step (wall)") == "4.70ms"
    assert _card(page, "Mean time per step (wall) (1 outlier step included)") == "5.37ms"
    summary = re.search(r'<p class="muted" id="steps-summary">([^<]*)</p>', page)
    assert summary is not None
    assert summary.group(1).startswith("Wall time per step: median 4.70ms, mean 5.37ms, max ")
    assert "1 outlier step" in summary.group(1) and "step 0)" in summary.group(1)
    assert "without it the mean is 4.70ms" in summary.group(1)


def test_outlier_marked_in_chart_and_table(page: str) -> None:
    assert '<text class="outlier" x=' in page and ">0!</text>" in page
    table = page[page.index('id="t-steps"') :]
    rows = re.findall(r"<tr( class=\"outlier\")?><td data-v=\"(\d+)\">", table)
    assert [step for mark, step in rows if mark] == ["0"]
    assert "8.04x outlier</td>" in table


class _Rects(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rects: list[dict[str, str | None]] = []
        self.cuts = 0
        self.labels: list[str] = []
        self._label = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "rect":
            self.rects.append(found)
        self.cuts += tag == "path" and found.get("class") == "cut"
        self._label = tag == "text" and found.get("class") == "cutv"

    def handle_data(self, data: str) -> None:
        if self._label:
            self.labels.append(data)
            self._label = False


def test_chart_keeps_typical_steps_readable(model: object) -> None:
    rows = step_rows(model)  # type: ignore[arg-type]
    fit = chart_scale(rows)
    typical = max(max(r.wall, r.op_total) for r in rows if r.step != 0)
    assert fit.cap == int(typical * CAP_HEADROOM) and fit.clipped == frozenset({0})
    height, top, base = 240, 22, 210
    svg = step_chart_svg(rows, height=height)
    parsed = _Rects()
    parsed.feed(svg)
    walls: dict[float, float] = {}
    for rect in parsed.rects:
        if rect.get("data-bar") == "wall":
            x = float(rect["x"] or 0)
            walls[x] = walls.get(x, 0.0) + float(rect["height"] or 0)
    heights = [walls[x] for x in sorted(walls)]
    assert heights[0] == pytest.approx(base - top, abs=0.2)  # the warm-up is cut at the top
    # Typical steps use more than half the plot (before: about an eighth of it).
    assert min(heights[1:]) > 0.5 * (base - top)
    assert parsed.cuts == 2 and parsed.labels == ["37.80ms"]


def test_chart_without_outliers_is_not_cut() -> None:
    rows = step_rows(profiles.warmup_profiler(steps=10, warmup=1).model)
    fit = chart_scale(rows)
    assert fit.outliers == frozenset() and fit.clipped == frozenset()
    assert fit.cap == max(max(r.wall, r.op_total) for r in rows)
    assert 'class="cut"' not in step_chart_svg(rows) and "!" not in step_chart_svg(rows)


@pytest.mark.parametrize(
    ("numbers", "text"),
    [
        ([], ""),
        ([4], "4"),
        ([0, 1], "0, 1"),
        (list(range(50)), "0-49"),
        ([0, 1, 2, 3, 7, 9, 10], "0-3, 7, 9, 10"),
        ([5, 3, 4, 4], "3-5"),
    ],
)
def test_step_ranges(numbers: list[int], text: str) -> None:
    assert step_ranges(numbers) == text


def test_memory_note_is_one_short_line(model: object) -> None:
    notes = memory_profile(model).notes  # type: ignore[arg-type]
    assert len(notes) == 1 and notes[0].startswith("steps 0-49: no allocator data (")


def test_memory_peaks_name_the_device_once(model: object) -> None:
    fragment = memory_fragment(model)  # type: ignore[arg-type]
    assert fragment is not None
    peaks = fragment[fragment.index("<h3>Peak per step</h3>") :]
    device = "/job:worker/replica:0/task:0/device:cpu:0"
    assert peaks.count(device) == 1
    assert peaks.count("<tr><td data-v=") == 50
    assert "steps 0-49: no allocator data" in fragment
