"""The HTML report's memory section: timeline charts and what is live at the peak.

Contract of :func:`memory_fragment`: an HTML fragment (inline SVG, no script,
nothing loaded) built from :func:`tfprof_lite.analysis.memory.memory_profile`:

* the step with the highest peak of any allocator is drawn: one step chart per
  allocator (bytes in use over time since the step's first record, at most
  :data:`MAX_POINTS` points; a bucket keeps its highest value so the peak
  survives), the peak marked;
* under each chart, a table of the ops live at the peak (bytes, op type,
  output tensors with shapes) and a table of the name scopes;
* a table of every step's peak per allocator (one row per step, each
  allocator named once in its column header), and the profile's notes (steps
  written as ranges: ``steps 0-49``);
* the section covers the whole profile: the report's query options (step,
  name filters) do not apply to it (its name cells carry the class ``mem``);
* an XSpace's whole window (:func:`tfprof_lite.analysis.memory_window.window_memory`,
  ``MemoryReport.window``: allocator events outside the steps too) comes first,
  one chart per allocator over the window (bytes the allocator reported in
  use, since the window's start), its peak marked and said where it is;
* all profile text is HTML-escaped; None when the profile has no steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from tfprof_lite.analysis.memory import AllocatorMemory, MemoryReport, StepMemory, memory_profile
from tfprof_lite.analysis.memory_window import WindowAllocator, WindowMemory
from tfprof_lite.base.units import format_memory, format_time
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.report.markup import data_table, esc, y_grid

__all__ = ["MAX_POINTS", "downsample", "memory_fragment", "timeline_svg"]

#: The most points a chart draws.
MAX_POINTS = 400


def downsample(points: Sequence[tuple[int, int]], limit: int = MAX_POINTS) -> list[tuple[int, int]]:
    """At most ``limit`` points of a step curve; each bucket keeps its highest point
    (first on ties), so the peak is always kept. The last point is kept too."""
    if len(points) <= limit:
        return list(points)
    size = -(-len(points) // (limit - 1))
    kept = [max(points[i : i + size], key=lambda p: p[1]) for i in range(0, len(points), size)]
    if kept[-1] != points[-1]:
        kept.append(points[-1])
    return kept


def _step_path(points: Sequence[tuple[int, int]], x: float, y: float, sx: float, sy: float) -> str:
    parts: list[str] = []
    prev_y = None
    for micros, nbytes in points:
        px, py = x + micros * sx, y - nbytes * sy
        if prev_y is None:
            parts.append(f"M{px:.1f},{py:.1f}")
        else:
            parts.append(f"H{px:.1f}V{py:.1f}")
        prev_y = py
    return "".join(parts)


class Curve(Protocol):
    """What a memory chart draws: an allocator's ``(µs, bytes)`` points and its peak."""

    @property
    def allocator(self) -> str: ...
    @property
    def timeline(self) -> list[tuple[int, int]]: ...
    @property
    def peak_bytes(self) -> int: ...
    @property
    def peak_micros(self) -> int: ...


@dataclass
class _WindowCurve:
    """A window allocator's curve in µs since the window's start."""

    allocator: str
    timeline: list[tuple[int, int]]
    peak_bytes: int
    peak_micros: int


def _window_section(window: WindowMemory) -> str:
    """The whole window's charts (see the module docstring)."""
    intro = (
        '<p class="muted">The whole window ('
        f"{esc(format_time(window.window_ns // 1000))}, {window.steps} steps), allocator "
        "events outside the steps too. x axis: time since the window's start; y axis: "
        "bytes the allocator reported in use.</p>"
    )
    return "<h3>Whole window</h3>" + intro + "".join(_window_block(a) for a in window.allocators)


def _window_block(alloc: WindowAllocator) -> str:
    points = [(ns // 1000, nbytes) for ns, nbytes in alloc.timeline]
    curve = _WindowCurve(alloc.allocator, points, alloc.peak_bytes, alloc.peak_ns // 1000)
    return f'<h4>{esc(alloc.allocator)}</h4><p class="muted">{esc(alloc.line())}</p>' + (
        timeline_svg(curve) if points else ""
    )


def timeline_svg(alloc: Curve, width: int = 760, height: int = 200) -> str:
    """An inline SVG step chart of one allocator's bytes in use, peak marked."""
    points = downsample(alloc.timeline)
    left, bottom, top, right = 80, 28, 12, 12
    base, plot_w = height - bottom, width - left - right
    span = max(points[-1][0], 1)
    peak = max(alloc.peak_bytes, 1)
    sx, sy = plot_w / span, (base - top) / peak
    parts = [
        f'<svg class="chart memory" role="img" aria-label="{esc(alloc.allocator)} bytes in use" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
    ]
    parts += y_grid(left, width - right, base, top, peak, format_memory)
    for i in range(5):
        x = left + plot_w * i / 4
        anchor = "end" if i == 4 else "middle"  # the last label stays inside the chart
        parts.append(
            f'<text x="{x:.1f}" y="{base + 16}" text-anchor="{anchor}">'
            f"+{esc(format_time(round(span * i / 4)))}</text>"
        )
    path = _step_path(points, left, base, sx, sy)
    parts.append(f'<path class="mem" fill="none" stroke="currentColor" d="{path}"/>')
    px, py = left + alloc.peak_micros * sx, base - alloc.peak_bytes * sy
    tip = f"peak {format_memory(alloc.peak_bytes)} at +{format_time(alloc.peak_micros)}"
    parts.append(
        f'<circle class="peak" cx="{px:.1f}" cy="{py:.1f}" r="4" fill="currentColor">'
        f"<title>{esc(tip)}</title></circle></svg>"
    )
    return "".join(parts)


def _ops_table(alloc: AllocatorMemory) -> str:
    rows = "".join(
        f'<tr><td class="name mem">{esc(op.name)}</td><td>{esc(op.op)}</td>'
        f'<td data-v="{op.bytes}">{esc(format_memory(op.bytes))}</td>'
        f'<td class="wrap">{esc(", ".join(t.label() for t in op.tensors) or "--")}</td></tr>'
        for op in alloc.by_op
    )
    head = (
        "<th>Op live at the peak</th><th>Op type</th><th>Bytes</th>"
        "<th class=wrap>Output tensors</th>"
    )
    return data_table(head, rows, scroll=True)


def _scopes_table(alloc: AllocatorMemory) -> str:
    rows = "".join(
        f'<tr><td class="name mem">{esc(sc.scope)}</td><td data-v="{sc.ops}">{sc.ops}</td>'
        f'<td data-v="{sc.bytes}">{esc(format_memory(sc.bytes))}</td>'
        f'<td class="wrap">{esc(", ".join(t.label() for t in sc.tensors) or "--")}</td></tr>'
        for sc in alloc.by_scope
    )
    head = "<th>Name scope</th><th>Ops</th><th>Bytes</th><th class=wrap>Largest tensors</th>"
    return data_table(head, rows, scroll=True)


def _allocator_block(alloc: AllocatorMemory) -> str:
    how = "" if alloc.exact else " (approximate)"
    summary = (
        f"peak {format_memory(alloc.peak_bytes)} at +{format_time(alloc.peak_micros)}; "
        f"{alloc.allocations} allocations, {alloc.frees} frees"
    )
    if alloc.before_step_bytes:
        summary += f"; {format_memory(alloc.before_step_bytes)} held from before the step"
    parts = [
        f"<h3>{esc(alloc.allocator + how)}</h3>",
        f'<p class="muted">{esc(summary)}</p>',
        timeline_svg(alloc),
    ]
    if alloc.by_op:
        parts += [_ops_table(alloc), _scopes_table(alloc)]
    return "".join(parts)


def _peak_cells(alloc: AllocatorMemory | None) -> str:
    if alloc is None:
        return '<td data-v="-1">--</td><td data-v="-1">--</td>'
    return (
        f'<td data-v="{alloc.peak_bytes}">{esc(format_memory(alloc.peak_bytes))}</td>'
        f'<td data-v="{alloc.peak_micros}">+{esc(format_time(alloc.peak_micros))}</td>'
    )


def _peaks_table(report: MemoryReport) -> str:
    """One row per step, one pair of columns (peak, when) per allocator: each
    allocator's name is written once, in its column's header."""
    names = list(dict.fromkeys(a.allocator for step in report.steps for a in step.allocators))
    head = "<th>Step</th>" + "".join(
        f'<th class="alloc"><span class="mono">{esc(name)}</span>: peak</th><th>at</th>'
        for name in names
    )
    rows = []
    for step in report.steps:
        if not step.allocators:
            continue
        found = {a.allocator: a for a in step.allocators}
        cells = "".join(_peak_cells(found.get(name)) for name in names)
        rows.append(f'<tr><td data-v="{step.step}">{step.step}</td>{cells}</tr>')
    return data_table(head, "".join(rows), scroll=True)


def _highest(report: MemoryReport) -> StepMemory | None:
    best: StepMemory | None = None
    for step in report.steps:
        if step.allocators and (
            best is None or step.allocators[0].peak_bytes > best.allocators[0].peak_bytes
        ):
            best = step
    return best


def memory_fragment(model: ProfileModel) -> str | None:
    """The memory section's HTML (see the module docstring)."""
    if not model.steps:
        return None
    report = memory_profile(model)
    notes = "".join(f"<li>{esc(text)}</li>" for text in report.notes)
    notes_html = f'<ul class="muted">{notes}</ul>' if notes else ""
    shown = _highest(report)
    window = _window_section(report.window) if report.window is not None else ""
    if shown is None:
        none = '<p class="muted">No memory records in the traced steps.</p>'
        return f"{window}{none}{notes_html}"
    intro = (
        f'<p class="muted">Step {shown.step} (the highest peak; source: {esc(shown.source)}). '
        "x axis: time since the step's first record; y axis: bytes in use that the "
        "step's records explain.</p>"
    )
    blocks = "".join(_allocator_block(a) for a in shown.allocators)
    steps = intro + blocks + "<h3>Peak per step</h3>" + _peaks_table(report) + notes_html
    return window + (f"<h3>Step {shown.step}</h3>" if window else "") + steps
