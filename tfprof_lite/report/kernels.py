"""The report's GPU kernel table (only for profiles with kernel records).

Contract of :func:`kernel_section`: None when
:func:`tfprof_lite.analysis.kernels.kernel_stats` finds no GPU stream or
memcpy records (a CPU-only run: the page then has no such section); otherwise
a section with the analysis' source and notes and a sortable, filterable table
of the ``max_rows`` rows with the most time (kernel, launching op, op type,
kind, count, total, average, min, max, bytes copied, then the launch
configuration: registers per thread, shared memory (static + dynamic, the split
in the cell's title), grid, block, theoretical occupancy, and whether the op is
tensor-core eligible and the kernel uses tensor cores; ``--`` where the record
does not say). All profile text is HTML-escaped.
"""

from __future__ import annotations

from tfprof_lite.analysis.kernels import KIND_KERNEL, NOT_KEPT, KernelStat, kernel_stats
from tfprof_lite.base.units import format_memory, format_time
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.report.markup import Section, esc

__all__ = ["kernel_section"]

_HEAD = (
    ("Kernel", "text", "c-text"),
    ("Op", "text", "c-text"),
    ("Op type", "text", "c-short"),
    ("Kind", "text", "c-short"),
    ("Count", "count", "c-num"),
    ("Total time", "time", "c-num"),
    ("Avg.", "time", "c-num"),
    ("Min.", "time", "c-num"),
    ("Max.", "time", "c-num"),
    ("Bytes", "bytes", "c-num"),
    ("Regs", "count", "c-num"),
    ("Shared mem", "bytes", "c-num"),
    ("Grid", "text", "c-short"),
    ("Block", "text", "c-short"),
    ("Occupancy %", "count", "c-num"),
    ("TC eligible", "text", "c-num"),
    ("Uses TC", "text", "c-num"),
)


_LEGEND = (
    '<p class="muted">Regs: registers per thread; Shared mem: static + dynamic shared '
    "memory per block; Grid, Block: the launch dimensions (x,y,z); Occupancy %: the "
    "theoretical occupancy the GPU tracer computed; TC eligible: the launching op could "
    "run on tensor cores; Uses TC: the kernel's name says it runs on them.</p>"
)


def _row(k: KernelStat) -> str:
    texts = [esc(t) for t in (k.op or "--", k.op_type or "--", k.kind)]
    cells = [f'<td class="name">{esc(k.kernel)}</td>']
    cells += [f'<td class="text" title="{t}">{t}</td>' for t in texts]
    numbers = [
        (k.count, str(k.count)),
        (k.total_micros, format_time(round(k.total_micros))),
        (k.avg_micros, format_time(round(k.avg_micros))),
        (k.min_micros, format_time(round(k.min_micros))),
        (k.max_micros, format_time(round(k.max_micros))),
        (k.bytes, format_memory(k.bytes) if k.bytes else "--"),
    ]
    cells += [f'<td data-v="{v}">{esc(t)}</td>' for v, t in numbers]
    return "<tr>" + "".join(cells) + _launch_cells(k) + "</tr>"


def _launch_cells(k: KernelStat) -> str:
    """The launch configuration and tensor-core cells of a row."""
    if k.kind != KIND_KERNEL or k.kernel == NOT_KEPT:
        return '<td data-v="-1">--</td>' * 7
    regs = k.registers_per_thread
    parts = [b for b in (k.static_shared_bytes, k.dynamic_shared_bytes) if b is not None]
    shared = sum(parts) if parts else None
    split = f"static {k.static_shared_bytes} B, dynamic {k.dynamic_shared_bytes} B"
    occ = k.occupancy_pct
    cells = [
        f'<td data-v="{-1 if regs is None else regs}">{"--" if regs is None else regs}</td>',
        f'<td data-v="{-1 if shared is None else shared}" title="{esc(split)}">'
        f"{'--' if shared is None else esc(format_memory(shared))}</td>",
        f'<td class="text">{esc(k.grid or "--")}</td>',
        f'<td class="text">{esc(k.block or "--")}</td>',
        f'<td data-v="{-1 if occ is None else occ}">{"--" if occ is None else f"{occ:g}"}</td>',
        f'<td class="text">{"yes" if k.tensor_core_eligible else "no"}</td>',
        f'<td class="text">{"yes" if k.uses_tensor_core else "no"}</td>',
    ]
    return "".join(cells)


def kernel_section(model: ProfileModel, max_rows: int) -> Section | None:
    """The GPU kernel section, or None without kernel records."""
    report = kernel_stats(model)
    if report.source == "none" or not report.kernels:
        return None
    rows = report.kernels[:max_rows]
    shown = f"{len(rows)} rows" + (
        f" (the {len(rows)} slowest of {len(report.kernels)})"
        if len(report.kernels) > len(rows)
        else ""
    )
    notes = "".join(f"<li>{esc(n)}</li>" for n in report.notes)
    intro = (
        f'<p class="muted">GPU kernels and copies over {report.steps} step'
        f"{'s' if report.steps != 1 else ''} (source: {esc(report.source)}), most total "
        f"time first; total of every row: {esc(format_time(round(report.total_micros)))}.</p>"
        + (f'<ul class="muted">{notes}</ul>' if notes else "")
        + (_LEGEND if any(k.launch.known for k in rows) else "")
    )
    cols = "".join(f'<col class="{c}">' for _, _, c in _HEAD)
    head = "".join(
        f'<th data-kind="{kind}"{" class=l" if kind == "text" else ""}>{esc(title)}</th>'
        for title, kind, _ in _HEAD
    )
    table = (
        '<div class="tools"><input type="search" class="filter" data-table="t-kernels" '
        'data-count="t-kernels-count" placeholder="Filter by kernel (text or /regex/)" '
        'aria-label="Filter kernels by name">'
        f'<span class="muted" id="t-kernels-count">{esc(shown)}</span></div>'
        '<div class="scroll"><table class="data sortable fixed" id="t-kernels">'
        f"<colgroup>{cols}</colgroup><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(_row(k) for k in rows)}</tbody></table></div>"
    )
    return Section("kernels", "GPU kernels", intro + table)
