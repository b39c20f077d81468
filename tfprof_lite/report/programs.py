"""The report's XLA program sections: op profile, roofline and memory viewer.

Contract of :func:`program_sections`: no section for a profile without compiled
XLA programs (:func:`tfprof_lite.model.xla_programs.programs_of` is None);
otherwise

* ``op-profile``: the device's peaks and a sortable, filterable table of the
  ``max_rows`` ops with the most self time (op, scope, category,
  occurrences, self time, FLOPs, bytes, FLOP/s, FLOPs/byte, bound, % of peak
  and headroom; the program and the time at the bound in the op cell's title,
  the bandwidth in the % of peak cell's; ``--`` where unknown), from
  :func:`tfprof_lite.programs.op_profile.op_profile`;
* ``roofline``: :func:`tfprof_lite.programs.roofline.roofline_svg` inline;
* ``memory-viewer``: per program that ran (at most four, most op time
  first), its total and peak bytes, the heap over program order
  (:func:`tfprof_lite.programs.memory_chart.heap_svg`) and the largest buffers
  live at the peak; after the first, a program without temporaries (a heap of
  fewer than three points) gets a line, not a chart.

All profile text is HTML-escaped; nothing is fetched (the charts are inline SVG).
"""

from __future__ import annotations

from typing import Any

from tfprof_lite.base.units import format_count, format_memory, format_size
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.xla_programs import XlaPrograms, programs_of
from tfprof_lite.programs.op_profile import OpProfile, OpRow, op_profile, program_label
from tfprof_lite.programs.op_profile_text import format_rate
from tfprof_lite.report.markup import Section, esc

__all__ = ["program_sections"]

#: Programs (most op time first) the memory viewer section looks at.
_MEMORY_PROGRAMS = 4

_HEAD = (
    ("Op", "text", "c-text"),
    ("Scope", "text", "c-text"),
    ("Category", "text", "c-short"),
    ("Occ.", "count", "c-num"),
    ("Self time (us)", "count", "c-num"),
    ("FLOPs", "count", "c-num"),
    ("Bytes", "bytes", "c-num"),
    ("FLOP/s", "count", "c-num"),
    ("FLOPs/byte", "count", "c-num"),
    ("Bound", "text", "c-short"),
    ("% of peak", "count", "c-num"),
    ("Headroom (us)", "count", "c-num"),
)


def _num(value: float | None, text: str) -> str:
    return f'<td data-v="{-1 if value is None else value}">{esc(text)}</td>'


def _row(op: OpRow) -> str:
    peak = op.peak_fraction
    roof, headroom = op.roofline_ps, op.headroom_ps
    intensity = op.intensity
    where = f"{program_label(op.program, op.program_id)}; at its bound: " + (
        "--" if roof is None else f"{roof / 1e6:.1f} us"
    )
    cells = [
        f'<td class="name" title="{esc(where)}">{esc(op.name)}</td>',
        f'<td class="text" title="{esc(op.scope + (" " + op.source if op.source else ""))}">'
        f"{esc(op.scope)}</td>",
        f'<td class="text">{esc(op.category)}</td>',
        _num(op.occurrences, str(op.occurrences)),
        _num(op.self_ps / 1e6, f"{op.self_ps / 1e6:.1f}"),
        _num(op.flops, format_count(round(op.flops))),
        _num(op.bytes_accessed, format_memory(round(op.bytes_accessed))),
        _num(op.flop_rate, format_rate(op.flop_rate, "F")),
        _num(intensity, "--" if intensity is None else f"{intensity:.2f}"),
        f'<td class="text">{esc(op.bound_by)}</td>',
        f'<td data-v="{-1 if peak is None else peak}" title="'
        f'{esc(format_rate(op.bandwidth, "B") + " of memory bandwidth")}">'
        f'{"--" if peak is None else f"{100 * peak:.1f}%"}</td>',
        _num(None if headroom is None else headroom / 1e6,
             "--" if headroom is None else f"{headroom / 1e6:.1f}"),
    ]  # fmt: skip
    return "<tr>" + "".join(cells) + "</tr>"


def _peaks_text(profile: OpProfile) -> str:
    peaks = profile.peaks
    if not peaks.flops and not peaks.bytes_per_sec:
        return f"{peaks.name}: peaks not recorded (give --peak-flops / --peak-bandwidth)"
    rates = ", ".join(f"{format_rate(v, 'FLOP')} {k}" for k, v in peaks.listed())
    return f"{peaks.name}: {rates}; {format_rate(peaks.bytes_per_sec, 'B')} ({peaks.source})"


def _op_section(profile: OpProfile, max_rows: int) -> Section:
    rows = profile.ops[:max_rows]
    cols = "".join(f'<col class="{c}">' for _, _, c in _HEAD)
    head = "".join(
        f'<th data-kind="{kind}"{" class=l" if kind == "text" else ""}>{esc(title)}</th>'
        for title, kind, _ in _HEAD
    )
    best = profile.by_headroom()[:3]
    gains = "; ".join(
        f"{esc(op.name)} would save {(op.headroom_ps or 0) / 1e6:.1f} us at its {op.bound_by} bound"
        for op in best
    )
    intro = (
        f'<p class="muted">Every XLA op that ran ({len(profile.ops)} rows, '
        f"{profile.total_ps / 1e6:.1f} us of self time over the whole profile, steps or not); "
        f"device: {esc(_peaks_text(profile))}.</p>"
        + (f'<p class="muted">Most headroom: {gains}.</p>' if gains else "")
        + "".join(f'<p class="muted">{esc(e)}</p>' for e in profile.errors)
    )
    table = (
        '<div class="tools"><input type="search" class="filter" data-table="t-xla-ops" '
        'data-count="t-xla-ops-count" placeholder="Filter by op (text or /regex/)" '
        'aria-label="Filter XLA ops by name">'
        f'<span class="muted" id="t-xla-ops-count">{len(rows)} rows</span></div>'
        '<div class="scroll"><table class="data sortable fixed" id="t-xla-ops">'
        f"<colgroup>{cols}</colgroup><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(_row(op) for op in rows)}</tbody></table></div>"
    )
    return Section("op-profile", "XLA op profile", intro + table)


def _roofline_section(profile: OpProfile) -> Section:
    from tfprof_lite.programs.roofline import roofline, roofline_svg

    chart = roofline(profile)
    body = (
        '<p class="muted">Squares: programs; circles: the ops with the most self time '
        "(blue: compute-bound, red: memory-bound). Hover a point for its numbers.</p>"
        f'<div class="scroll">{roofline_svg(chart)}</div>'
    )
    return Section("roofline", "Roofline", body)


def _memory_section(xla: XlaPrograms) -> Section | None:
    from tfprof_lite.programs.buffers import program_memory
    from tfprof_lite.programs.hlo import parsed
    from tfprof_lite.programs.memory_chart import heap_svg

    times = xla.program_time_ps()
    ran = [int(r) for r in sorted(set(xla.ops.program.tolist()), key=lambda r: -int(times[r]))]
    parts: list[str] = []
    small: list[str] = []
    for row in ran[:_MEMORY_PROGRAMS]:
        record = xla.programs[row]
        try:
            memory = program_memory(parsed(record), record.program_id, record.module)
        except Exception:  # noqa: BLE001 - the op profile already notes a bad program
            continue
        if parts and len(memory.heap) < 3:  # nothing over program order to draw
            small.append(f"{program_label(memory.program, memory.program_id)} "
                         f"({format_size(memory.total_bytes)})")  # fmt: skip
            continue
        parts.append(_memory_part(memory, heap_svg(memory)))
    if not parts:
        return None
    if small:
        listed = esc(", ".join(small))
        parts.append(f'<p class="muted">Also run, without temporaries: {listed}.</p>')
    return Section("memory-viewer", "XLA memory viewer", "".join(parts))


def _memory_part(memory: Any, chart: str) -> str:
    rows = "".join(
        f"<tr><td>{esc(format_size(b.bytes))}</td><td>{esc(b.shape)}</td>"
        f'<td class="wrap">{esc(b.instruction)}</td><td class="wrap">{esc(b.scope)}</td></tr>'
        for b in memory.buffers_at_peak[:12]
    )
    label = program_label(memory.program, memory.program_id)
    return (
        f"<h3>{esc(label)}</h3>"
        f'<p class="muted">Allocated {esc(format_size(memory.total_bytes))} in all (XLA\'s '
        f"buffer assignment); heap peak {esc(format_size(memory.peak_bytes))}; the largest "
        "buffers live at the peak below.</p>"
        f'<div class="scroll">{chart}</div>'
        '<div class="scroll"><table class="data"><thead><tr><th>Bytes</th><th>Shape</th>'
        '<th class="l">Instruction</th><th class="l">Scope</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></div>"
    )


def program_sections(model: ProfileModel, max_rows: int) -> list[Section]:
    """The XLA program sections (see the module docstring); [] without programs."""
    xla = programs_of(model)
    if xla is None or not len(xla.ops):
        return []
    profile = op_profile(xla, len(model.steps))
    sections = [_op_section(profile, max_rows), _roofline_section(profile)]
    memory = _memory_section(xla)
    return sections + ([memory] if memory is not None else [])
