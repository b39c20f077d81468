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
  entry without input ops), and a sortable table repeats the numbers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from tfprof_lite.analysis.input_pipeline import input_pipeline
from tfprof_lite.analysis.steptime import step_times as wall_times
from tfprof_lite.base.units import format_time
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.report.markup import Section, esc, y_grid
from tfprof_lite.report.sections import step_times as op_times

__all__ = ["StepRow", "step_chart_svg", "step_rows", "steps_section"]


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


def _bars(row: StepRow, x: float, w: float, scale: float, base: float, shown: list[str]) -> str:
    parts = []
    for bar, label in ((0, "wall"), (1, "op")):
        y = base
        bx = x + bar * (w + 2)
        for key, _, which in _SERIES:
            if which != bar or key not in shown:
                continue
            h = _value(row, key) * scale
            y -= h
            parts.append(
                f'<rect class="{key}" data-bar="{label}" x="{bx:.1f}" y="{y:.1f}" '
                f'width="{w:.1f}" height="{h:.1f}"/>'
            )
    tip = (
        f"step {row.step}: wall {format_time(row.wall)} (input {format_time(row.input)}, "
        f"compute {format_time(row.compute)}, idle {format_time(row.idle)}); summed op time "
        f"{format_time(row.op_total)} (cpu {format_time(row.cpu)}, accelerator "
        f"{format_time(row.accelerator)})"
    )
    return f'<g class="bar"><title>{esc(tip)}</title>{"".join(parts)}</g>'


def step_chart_svg(rows: Sequence[StepRow], width: int = 960, height: int = 240) -> str:
    """Two bars per step on one scale: wall time (split) and summed op time."""
    if not rows:
        return '<p class="muted">No steps were recorded (a graph without RunMetadata).</p>'
    left, bottom, top = 70, 30, 10
    plot_w, base = width - left - 10, height - bottom
    peak = max(max(max(r.wall, r.op_total) for r in rows), 1)
    scale = (base - top) / peak
    slot = plot_w / len(rows)
    bar_w = max(min(slot * 0.38, 40), 0.5)
    shown = [s[0] for s in _shown(rows)]
    parts = [
        f'<svg class="chart steps" role="img" aria-label="time per step" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}">'
    ]
    parts += y_grid(left, width - 10, base, top, peak, format_time)
    every = max(1, len(rows) // 20)
    for i, row in enumerate(rows):
        x = left + i * slot
        parts.append(_bars(row, x + slot / 2 - bar_w - 1, bar_w, scale, base, shown))
        if i % every == 0:
            parts.append(
                f'<text x="{x + slot / 2:.1f}" y="{base + 16}" text-anchor="middle">'
                f"{row.step}</text>"
            )
    parts.append("</svg>")
    return "".join(parts)


def _legend(rows: Sequence[StepRow]) -> str:
    items = "".join(
        f'<span><i class="swatch {key}"></i>{esc(text)}</span>' for key, text, _ in _shown(rows)
    )
    return (
        f'<p class="legend">{items}</p><p class="muted">Per step, the left bar is the '
        "<b>wall time</b> (first op start to last op end over all devices, the time per step "
        "of <code>tfprof-lite overview</code>) split into input, compute and idle time; the "
        "right bar is the <b>summed op time</b> (every op's duration added up), which exceeds "
        "the wall time when ops run in parallel. x axis: step.</p>"
    )


def _cell(value: int) -> str:
    return f'<td data-v="{value}">{format_time(value)}</td>'


def _table(rows: Sequence[StepRow]) -> str:
    acc = any(r.accelerator for r in rows)
    head = ["Step", "Wall time", "Input", "Compute", "Idle", "Summed op time"]
    head += ["Accelerator", "CPU"] if acc else []
    heads = "".join(
        f'<th data-kind="{"count" if i == 0 else "time"}">{esc(h)}</th>' for i, h in enumerate(head)
    )
    heads += '<th data-kind="count">Parallelism</th><th data-kind="count">Nodes run</th>'
    body = []
    for r in rows:
        cells = [f'<td data-v="{r.step}">{r.step}</td>']
        values = [r.wall, r.input, r.compute, r.idle, r.op_total]
        values += [r.accelerator, r.cpu] if acc else []
        cells += [_cell(v) for v in values]
        cells.append(f'<td data-v="{r.parallelism}">{r.parallelism:.2f}</td>')
        cells.append(f'<td data-v="{r.nodes}">{r.nodes}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        '<div class="scroll"><table class="data sortable" id="t-steps"><thead><tr>'
        f"{heads}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def steps_section(model: ProfileModel) -> Section:
    """The per-step chart, its legend and a table of each step's times."""
    rows = step_rows(model)
    body = step_chart_svg(rows)
    if rows:
        body += _legend(rows) + _table(rows)
    return Section("steps", "Time per step", body)
