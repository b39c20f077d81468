"""The report's per-step section: wall time beside summed op time, and where the
wall time went (input, compute, idle).

Contract of :func:`step_rows` and :func:`steps_section`:

* *wall time* is what ``tfprof-lite overview`` and ``steptime`` call time per
  step: the step's first start to its last end over all devices
  (:func:`tfprof_lite.analysis.steptime.step_times`, ``StepExecs.wall_span``);
* *summed op time* adds every op's duration (CPU plus accelerator time, as the
  tfprof views count it; :func:`tfprof_lite.report.sections.step_times`); it
  exceeds the wall time when ops run in parallel;
* the wall time splits into *input* (some input op ran:
  :func:`tfprof_lite.analysis.input_pipeline.input_pipeline`), *compute* (some
  other op ran, no input op) and *idle* (no op ran), which add up to it;
* the chart draws two bars per step on one scale, the legend names only the
  series the profile has (no accelerator entry on a CPU-only run, no input
  entry without input ops), and a sortable table repeats the numbers;
* a line above the chart gives the median wall time beside the mean; steps
  slower than ``OUTLIER_FACTOR`` times the median (a warm-up step) are
  *outliers*, marked ``!`` on the axis and in the table; when an outlier's
  bar would squash the others, the y axis stops :data:`CAP_HEADROOM` above the
  tallest bar of the other steps (:func:`chart_scale`): taller bars are cut
  there and marked with a break and their time;
* a step of an XSpace cut by the trace's start or stop (``cut``, see
  :mod:`tfprof_lite.formats.xspace.read.cut`) is drawn greyed and hatched, marked
  ``~`` on the axis and in the table, and left out of the median, the mean,
  the outliers and the axis; a legend entry and a line say why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from tfprof_lite.analysis.input_pipeline import input_pipeline
from tfprof_lite.analysis.steptime import OUTLIER_FACTOR, percentile
from tfprof_lite.analysis.steptime import step_times as wall_times
from tfprof_lite.base.units import format_time
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.report.markup import Section, esc, y_grid
from tfprof_lite.report.sections import step_times as op_times

__all__ = [
    "CAP_HEADROOM",
    "CUT_FROM",
    "MAX_SHOWN_STEPS",
    "ChartScale",
    "StepRow",
    "chart_scale",
    "step_chart_svg",
    "step_rows",
    "shown_rows",
    "steps_section",
]


@dataclasses.dataclass(frozen=True)
class StepRow:
    """One step's wall time and its split, and its summed op time (microseconds)."""

    step: int
    wall: int
    input: int
    compute: int
    idle: int
    op_total: int
    accelerator: int
    cpu: int
    parallelism: float
    nodes: int
    cut: str = ""


def step_rows(model: ProfileModel) -> list[StepRow]:
    """Every step with a start, in step order (see the module docstring)."""
    walls = {s.step: s for s in wall_times(model).steps}
    inputs = {s.step: s.input_micros for s in input_pipeline(model).steps}
    rows = []
    for ops in op_times(model):
        wall = walls.get(ops.step)
        if wall is None:
            continue
        busy = min(wall.busy_micros, wall.wall_micros)
        waited = min(inputs.get(ops.step, 0), busy)
        rows.append(
            StepRow(
                step=ops.step,
                wall=wall.wall_micros,
                input=waited,
                compute=busy - waited,
                idle=wall.wall_micros - busy,
                op_total=ops.total,
                accelerator=ops.accelerator,
                cpu=ops.cpu,
                parallelism=wall.parallelism,
                nodes=ops.nodes,
                cut=wall.cut,
            )
        )
    return rows


#: Series of the chart: (CSS class, legend text, bar: 0 wall, 1 op time).
_SERIES = (
    ("input", "Input (wall)", 0),
    ("compute", "Compute (wall)", 0),
    ("idle", "Idle (wall)", 0),
    ("cpu", "CPU op time (summed)", 1),
    ("acc", "Accelerator op time (summed)", 1),
)


def _shown(rows: Sequence[StepRow]) -> list[tuple[str, str, int]]:
    has = {
        "input": any(r.input for r in rows),
        "compute": True,
        "idle": any(r.idle for r in rows),
        "cpu": True,
        "acc": any(r.accelerator for r in rows),
    }
    return [s for s in _SERIES if has[s[0]]]


def _value(row: StepRow, key: str) -> int:
    return {"input": row.input, "compute": row.compute, "idle": row.idle, "cpu": row.cpu}.get(
        key, row.accelerator
    )


#: With outliers, the y axis stops this much above the tallest other bar ...
CAP_HEADROOM = 1.25
#: ... when the tallest outlier bar is more than this many times that height.
CUT_FROM = 1.5


@dataclasses.dataclass(frozen=True)
class ChartScale:
    """How the chart fits the steps: the y axis runs from 0 to ``cap``
    (microseconds); bars of steps in ``clipped`` are taller and cut at the top;
    steps in ``outliers`` are slower than :data:`OUTLIER_FACTOR` times the
    ``median`` wall time."""

    cap: int
    median: float
    outliers: frozenset[int]
    clipped: frozenset[int]


def chart_scale(rows: Sequence[StepRow]) -> ChartScale:
    """The y axis of the step chart: :data:`CAP_HEADROOM` above the tallest bar
    of the steps that are not outliers when an outlier's bar would be more than
    :data:`CUT_FROM` times that (a warm-up step would squash the typical ones),
    else up to the tallest bar."""
    whole = [r for r in rows if not r.cut] or list(rows)
    median = percentile([r.wall for r in whole], 50)
    slow = frozenset(r.step for r in whole if median and r.wall > OUTLIER_FACTOR * median)
    heights = {r.step: max(r.wall, r.op_total) for r in whole}
    tallest = max(heights.values(), default=0)
    typical = [h for step, h in heights.items() if step not in slow]
    if slow and typical:  # headroom, so that cut bars stand out above the others
        capped = int(max(typical) * CAP_HEADROOM)
        if tallest > CUT_FROM * capped:  # cut only what would squash the others
            tallest = capped
    cap = max(tallest, 1)
    clipped = frozenset(r.step for r in rows if max(r.wall, r.op_total) > cap)
    return ChartScale(cap, median, slow, clipped)


def _cut(x: float, w: float, top: float) -> str:
    """The break drawn across a bar cut at the top of the chart."""
    return (
        f'<path class="cut" d="M{x:.1f},{top + 7:.1f}l{w:.1f},-4M{x:.1f},{top + 11:.1f}'
        f'l{w:.1f},-4"/>'
    )


def _bars(row: StepRow, x: float, w: float, scale: float, base: float, top: float) -> str:
    parts = []
    for bar, label in ((0, "wall"), (1, "op")):
        y = base
        bx = x + bar * (w + 2)
        for key, _, which in _SERIES:
            if which != bar:
                continue
            h = min(_value(row, key) * scale, y - top)
            if h <= 0:
                continue
            y -= h
            parts.append(
                f'<rect class="{key}" data-bar="{label}" x="{bx:.1f}" y="{y:.1f}" '
                f'width="{w:.1f}" height="{h:.1f}"/>'
            )
        total = row.wall if bar == 0 else row.op_total
        if row.cut and total:
            parts.append(_hatch(bx, w, base, min(total * scale, base - top)))
        if total * scale > base - top + 0.05:
            parts.append(_cut(bx, w, top))
    tip = (
        f"step {row.step}: wall {format_time(row.wall)} (input {format_time(row.input)}, "
        f"compute {format_time(row.compute)}, idle {format_time(row.idle)}); summed op time "
        f"{format_time(row.op_total)} (cpu {format_time(row.cpu)}, accelerator "
        f"{format_time(row.accelerator)})" + (f"; {row.cut}: left out" if row.cut else "")
    )
    kind = "bar cutstep" if row.cut else "bar"
    return f'<g class="{kind}"><title>{esc(tip)}</title>{"".join(parts)}</g>'


def _hatch(x: float, w: float, base: float, h: float, gap: float = 6.0) -> str:
    """Diagonal lines across the bar ``x .. x + w`` from ``base`` up ``h``
    (drawn, not a pattern: the page refers to nothing, ``url()`` included)."""
    segments = []
    c = gap
    while c < w + h:
        t0, t1 = max(0.0, c - h), min(w, c)
        segments.append(f"M{x + t0:.1f},{base - (c - t0):.1f}L{x + t1:.1f},{base - (c - t1):.1f}")
        c += gap
    return f'<path class="hatch" d="{"".join(segments)}"/>'


def _x_label(row: StepRow, x: float, y: float, outlier: bool) -> str:
    mark = ' class="outlier"' if outlier else ""
    text = f"{row.step}{_mark(row, outlier)}"
    return f'<text{mark} x="{x:.1f}" y="{y}" text-anchor="middle">{text}</text>'


def _mark(row: StepRow, outlier: bool) -> str:
    """``!`` after an outlier step, ``~`` after a cut one."""
    return "!" if outlier else "~" if row.cut else ""


def step_chart_svg(
    rows: Sequence[StepRow], width: int = 960, height: int = 240, fit: ChartScale | None = None
) -> str:
    """Two bars per step on one scale: wall time (split) and summed op time; the
    axis is :func:`chart_scale`'s (taller bars cut and marked, outlier steps'
    labels marked ``!``); ``fit``: that scale, made of more steps than ``rows``."""
    if not rows:
        return '<p class="muted">No steps were recorded (a graph without RunMetadata).</p>'
    fit = chart_scale(rows) if fit is None else fit
    left, bottom, top = 70, 30, 22 if fit.clipped else 10
    plot_w, base = width - left - 10, height - bottom
    scale = (base - top) / fit.cap
    slot = plot_w / len(rows)
    bar_w = max(min(slot * 0.38, 40), 0.5)
    parts = [
        f'<svg class="chart steps" role="img" aria-label="time per step" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}">'
    ]
    parts += y_grid(left, width - 10, base, top, fit.cap, format_time)
    every = max(1, len(rows) // 20)
    labelled = -1e9  # x of the last cut bar's time label: labels keep 56 px apart
    for i, row in enumerate(rows):
        x = left + i * slot
        parts.append(_bars(row, x + slot / 2 - bar_w - 1, bar_w, scale, base, top))
        outlier = row.step in fit.outliers
        if i % every == 0 or outlier or row.cut:
            parts.append(_x_label(row, x + slot / 2, base + 16, outlier))
        if row.step in fit.clipped and x + slot / 2 - labelled >= 56:
            labelled = x + slot / 2
            value = format_time(max(row.wall, row.op_total))
            parts.append(
                f'<text class="cutv" x="{labelled:.1f}" y="{top - 5}" '
                f'text-anchor="middle">{esc(value)}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def _summary(rows: Sequence[StepRow], source: str = "") -> str:
    """The line above the chart: median beside mean, the outliers, the axis,
    the cut steps (``source``: how an XSpace's steps were found)."""
    fit = chart_scale(rows)
    walls = [r.wall for r in rows if not r.cut]
    if walls:
        text = (
            f"Wall time per step: median {format_time(int(fit.median))}, mean "
            f"{format_time(int(sum(walls) / len(walls)))}, max {format_time(max(walls))}."
        )
    else:
        text = f"No whole step, so no wall time per step ({source or 'every step is cut'})."
    text += _cut_note(rows)
    if fit.outliers:
        slow = [r for r in rows if r.step in fit.outliers]
        rest = [r.wall for r in rows if r.step not in fit.outliers]
        names = ", ".join(str(r.step) for r in slow[:10]) + (", ..." if len(slow) > 10 else "")
        one = len(slow) == 1
        rest_mean = format_time(int(sum(rest) / len(rest)))
        text += (
            f" {len(slow)} outlier step{'' if one else 's'} (wall time above "
            f"{OUTLIER_FACTOR:g} times the median, marked ! on the axis and in the table: "
            f"step{'' if one else 's'} {names}) lift{'s' if one else ''} the mean; without "
            f"{'it' if one else 'them'} the mean is {rest_mean}."
        )
    if fit.clipped:
        text += (
            f" The y axis stops at {format_time(fit.cap)}, a quarter above the tallest bar "
            "of the other steps; taller bars are cut there, marked with a break and their "
            "time."
        )
    return f'<p class="muted" id="steps-summary">{esc(text)}</p>'


def _cut_note(rows: Sequence[StepRow]) -> str:
    """The sentence naming the cut steps, left out of the numbers."""
    cut = [r for r in rows if r.cut]
    if not cut:
        return ""
    whys = sorted({r.cut.split(":")[0] for r in cut})
    names = ", ".join(str(r.step) for r in cut[:10]) + (", ..." if len(cut) > 10 else "")
    one = len(cut) == 1
    return (
        f" Step{'' if one else 's'} {names} ({'; '.join(whys)}: hatched, marked ~) "
        f"{'is' if one else 'are'} left out of these numbers and of the axis."
    )


def _legend(rows: Sequence[StepRow]) -> str:
    items = "".join(
        f'<span><i class="swatch {key}"></i>{esc(text)}</span>' for key, text, _ in _shown(rows)
    )
    if any(r.cut for r in rows):
        what = "Cut by the trace" if any(r.cut.startswith("cut") for r in rows) else "No step"
        items += f'<span><i class="swatch cutstep"></i>{what} (left out)</span>'
    return (
        f'<p class="legend">{items}</p><p class="muted">Per step, the left bar is the '
        "<b>wall time</b> (first op start to last op end over all devices, the time per step "
        "of <code>tfprof-lite overview</code>) split into input, compute and idle time; the "
        "right bar is the <b>summed op time</b> (every op's duration added up), which exceeds "
        "the wall time when ops run in parallel. x axis: step.</p>"
    )


def _cell(value: int) -> str:
    return f'<td data-v="{value}">{format_time(value)}</td>'


def _table(rows: Sequence[StepRow], fit: ChartScale) -> str:
    acc = any(r.accelerator for r in rows)
    head = ["Step", "Wall time", "Input", "Compute", "Idle", "Summed op time"]
    head += ["Accelerator", "CPU"] if acc else []
    heads = "".join(
        f'<th data-kind="{"count" if i == 0 else "time"}">{esc(h)}</th>' for i, h in enumerate(head)
    )
    heads += (
        '<th data-kind="count">Parallelism</th><th data-kind="count">Nodes run</th>'
        '<th data-kind="count" title="wall time / median wall time">vs. median</th>'
    )
    body = []
    for r in rows:
        outlier = r.step in fit.outliers
        cells = [f'<td data-v="{r.step}">{r.step}{_mark(r, outlier)}</td>']
        values = [r.wall, r.input, r.compute, r.idle, r.op_total]
        values += [r.accelerator, r.cpu] if acc else []
        cells += [_cell(v) for v in values]
        cells.append(f'<td data-v="{r.parallelism}">{r.parallelism:.2f}</td>')
        cells.append(f'<td data-v="{r.nodes}">{r.nodes}</td>')
        ratio = r.wall / fit.median if fit.median else 0.0
        note = " outlier" if outlier else " cut, left out" if r.cut else ""
        cells.append(f'<td data-v="{ratio:.4f}">{ratio:.2f}x{note}</td>')
        row_class = ' class="outlier"' if outlier else ' class="cutstep"' if r.cut else ""
        body.append(f"<tr{row_class}>" + "".join(cells) + "</tr>")
    return (
        '<div class="scroll"><table class="data sortable" id="t-steps"><thead><tr>'
        f"{heads}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


#: Beyond this many steps the chart and the table show a sample of them ...
MAX_SHOWN_STEPS = 300
#: ... that keeps the slowest whole steps and the cut ones, up to this many each.
SHOWN_SLOWEST = 30


def shown_rows(rows: Sequence[StepRow]) -> list[StepRow]:
    """The steps the chart and the table draw: all of them up to
    :data:`MAX_SHOWN_STEPS`, else that many: the :data:`SHOWN_SLOWEST` slowest
    whole steps, as many cut ones, and the others evenly spaced, in step order."""
    if len(rows) <= MAX_SHOWN_STEPS:
        return list(rows)
    whole = [i for i, r in enumerate(rows) if not r.cut]
    keep = set(sorted(whole, key=lambda i: -rows[i].wall)[:SHOWN_SLOWEST])
    keep.update([i for i, r in enumerate(rows) if r.cut][:SHOWN_SLOWEST])
    room = max(MAX_SHOWN_STEPS - len(keep), 2)
    stride = (len(rows) - 1) / (room - 1)
    keep.update(round(k * stride) for k in range(room))
    return [rows[i] for i in sorted(keep)]


def _sample_note(shown: Sequence[StepRow], rows: Sequence[StepRow]) -> str:
    """The line saying the chart and the table show a sample (empty when not)."""
    if len(shown) == len(rows):
        return ""
    return (
        f'<p class="muted" id="steps-sample">The chart and the table show {len(shown)} of the '
        f"{len(rows)} steps: the {SHOWN_SLOWEST} slowest, the cut ones and the others evenly "
        "spaced (the numbers above cover every step).</p>"
    )


def steps_section(model: ProfileModel) -> Section:
    """The per-step summary (median beside mean, outliers), chart, legend and a
    table of each step's times (of a sample of the steps when there are many:
    :func:`shown_rows`)."""
    rows = step_rows(model)
    if not rows:
        return Section("steps", "Time per step", step_chart_svg(rows))
    fit = chart_scale(rows)
    shown = shown_rows(rows)
    body = (
        _summary(rows, model.steps_source)
        + _sample_note(shown, rows)
        + step_chart_svg(shown, fit=fit)
        + _legend(rows)
        + _table(shown, fit)
    )
    return Section("steps", "Time per step", body)
