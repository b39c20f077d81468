"""The report's overview, per-step chart and flame graph sections.

Contract: :func:`step_times` sums each step's execution time (total, accelerator,
CPU) and counts the nodes that ran; :func:`overview_section` shows the profile's
headline numbers; :func:`steps_section` draws the time of every step as an inline
SVG bar chart (CPU and accelerator stacked) with a table of the same numbers;
:func:`flame_section` embeds the scope (and code) view as JSON that the page's
script draws as a flame graph, leaving out frames under :data:`FLAME_MIN_SHARE`
of the root.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from tfprof_lite.base.metrics import EXEC, FLOPS, PARAMS
from tfprof_lite.base.units import format_number, format_time
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.report.markup import Section, esc, script_json, y_grid
from tfprof_lite.views.node import ShowNode
from tfprof_lite.views.result import ViewResult

__all__ = [
    "FLAME_MIN_SHARE",
    "StepTime",
    "devices",
    "flame_data",
    "flame_section",
    "overview_section",
    "step_chart_svg",
    "step_times",
    "steps_section",
]

#: Frames narrower than this share of the root are left out of the flame graph.
FLAME_MIN_SHARE = 0.001


@dataclasses.dataclass(frozen=True)
class StepTime:
    """Summed execution time of one step (microseconds) and the nodes that ran."""

    step: int
    total: int
    accelerator: int
    cpu: int
    nodes: int


def step_times(model: ProfileModel) -> list[StepTime]:
    """Total, accelerator and CPU time of every step, in step order."""
    out: list[StepTime] = []
    for step in model.sorted_steps():
        stats = model.stats(step)
        out.append(
            StepTime(
                step=step,
                total=int(stats.exec_micros.sum()),
                accelerator=int(stats.accelerator_exec_micros.sum()),
                cpu=int(stats.cpu_exec_micros.sum()),
                nodes=int((stats.run_count > 0).sum()),
            )
        )
    return out


def devices(model: ProfileModel) -> list[str]:
    """Every device named in the profile (canonical devices and step records)."""
    found = {dev for dev in model.canonical_device if dev}
    for execs in model.steps.values():
        for devs in execs.devices.values():
            found.update(devs)
    return sorted(found)


def _flame_tree(node: ShowNode, floor: float) -> dict[str, Any]:
    kids = [_flame_tree(k, floor) for k in node.children if k.total[EXEC] >= floor]
    out: dict[str, Any] = {"n": node.name, "v": node.total[EXEC]}
    if kids:
        out["c"] = [k for k in kids if k["v"] > 0]
    return out


def flame_data(results: Sequence[ViewResult]) -> dict[str, Any]:
    """The flame graph JSON: ``{"views": {view: {"n", "v", "c"}}}`` (time in us)."""
    views: dict[str, Any] = {}
    for result in results:
        if result.empty or result.view == "op":
            continue
        floor = max(1.0, result.root.total[EXEC] * FLAME_MIN_SHARE)
        views[result.view] = _flame_tree(result.root, floor)
    return {"unit": "us", "views": views}


def _card(key: str, value: str) -> str:
    return (
        f'<div class="card"><div class="k">{esc(key)}</div><div class="v">{esc(value)}</div></div>'
    )


def overview_section(model: ProfileModel, scope: ViewResult, op: ViewResult) -> Section:
    """Overview numbers: steps, devices, nodes, op types, time per step, params, FLOPs."""
    steps = step_times(model)
    avg = sum(s.total for s in steps) // len(steps) if steps else 0
    devs = devices(model)
    cards = [
        _card("Steps", str(len(steps))),
        _card("Devices", str(len(devs))),
        _card("Graph nodes", format_number(len(model))),
        _card("Op types", str(len(op.rows))),
        _card("Avg. time per step", format_time(avg)),
        _card("Max. time per step", format_time(max((s.total for s in steps), default=0))),
        _card("Parameters", format_number(scope.root.total[PARAMS])),
        _card("FLOPs (per query step)", format_number(scope.root.total[FLOPS])),
        _card("Code traces", "yes" if model.has_trace else "no"),
    ]
    dev_list = "".join(f"<li><code>{esc(d)}</code></li>" for d in devs) or "<li>none</li>"
    body = (
        f'<div class="cards">{"".join(cards)}</div><p class="muted">Devices:</p><ul>{dev_list}</ul>'
    )
    return Section("overview", "Overview", body)


def _bar(x: float, w: float, step: StepTime, scale: float, base: float) -> str:
    cpu_h, acc_h = step.cpu * scale, step.accelerator * scale
    tip = (
        f"step {step.step}: total {format_time(step.total)}, accelerator "
        f"{format_time(step.accelerator)}, cpu {format_time(step.cpu)}"
    )
    return (
        f'<g class="bar"><title>{esc(tip)}</title>'
        f'<rect class="cpu" x="{x:.1f}" y="{base - cpu_h:.1f}" width="{w:.1f}" '
        f'height="{cpu_h:.1f}"/><rect class="acc" x="{x:.1f}" y="{base - cpu_h - acc_h:.1f}" '
        f'width="{w:.1f}" height="{acc_h:.1f}"/></g>'
    )


def step_chart_svg(steps: Sequence[StepTime], width: int = 760, height: int = 220) -> str:
    """An inline SVG bar chart of the time of each step (CPU and accelerator stacked)."""
    if not steps:
        return '<p class="muted">No steps were recorded (a graph without RunMetadata).</p>'
    left, bottom, top = 70, 30, 10
    plot_w, base = width - left - 10, height - bottom
    peak = max(max(s.total for s in steps), 1)
    scale = (base - top) / peak
    slot = plot_w / len(steps)
    parts = [
        f'<svg class="chart" role="img" aria-label="time per step" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}">'
    ]
    parts += y_grid(left, width - 10, base, top, peak, format_time)
    every = max(1, len(steps) // 20)
    for i, step in enumerate(steps):
        x = left + i * slot
        parts.append(_bar(x + slot * 0.1, max(slot * 0.8, 0.5), step, scale, base))
        if i % every == 0:
            parts.append(
                f'<text x="{x + slot / 2:.1f}" y="{base + 16}" text-anchor="middle">'
                f"{step.step}</text>"
            )
    parts.append("</svg>")
    return "".join(parts)


def steps_section(model: ProfileModel) -> Section:
    """The per-step chart and a table of each step's times."""
    steps = step_times(model)
    legend = (
        '<p class="legend"><span><i class="swatch cpu"></i>CPU time'
        '</span><span><i class="swatch acc"></i>Accelerator time'
        "</span> <span class=muted>x axis: step; y axis: summed execution time</span></p>"
    )
    rows = "".join(
        f'<tr><td>{s.step}</td><td data-v="{s.total}">{format_time(s.total)}</td>'
        f'<td data-v="{s.accelerator}">{format_time(s.accelerator)}</td>'
        f'<td data-v="{s.cpu}">{format_time(s.cpu)}</td><td data-v="{s.nodes}">{s.nodes}</td></tr>'
        for s in steps
    )
    table = (
        '<div class="scroll"><table class="data sortable" id="t-steps"><thead><tr>'
        '<th data-kind="count">Step</th><th data-kind="time">Total time</th>'
        '<th data-kind="time">Accelerator</th><th data-kind="time">CPU</th>'
        f'<th data-kind="count">Nodes run</th></tr></thead><tbody>{rows}</tbody></table></div>'
    )
    body = step_chart_svg(steps) + legend + (table if steps else "")
    return Section("steps", "Time per step", body)


def flame_section(results: Sequence[ViewResult]) -> Section:
    """The flame graph (drawn by the script from the embedded JSON)."""
    data = flame_data(results)
    options = "".join(f'<option value="{esc(v)}">{esc(v)} view</option>' for v in data["views"])
    body = (
        '<div class="tools"><label>View <select id="flame-view">'
        f'{options}</select></label><button type="button" id="flame-reset">Reset zoom</button>'
        '<span class="muted" id="flame-info"></span></div>'
        '<p class="muted">Root on top; each frame is as wide as its total execution time. '
        "Click a frame to zoom in; hover for its time. Frames under "
        f"{FLAME_MIN_SHARE * 100:g}% of the root are left out.</p>"
        '<svg id="flame" role="img" aria-label="flame graph" height="40"></svg>'
        f'<script type="application/json" id="flame-data">{script_json(data)}</script>'
    )
    return Section("flamegraph", "Flame graph", body)
