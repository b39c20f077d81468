"""A self-contained HTML report of a profile (``tfprof-lite report``).

Contract of :func:`render_html`:

* One HTML document with its stylesheet and script inline
  (:mod:`tfprof_lite.outputs.html_assets`) and nothing loaded from anywhere else
  (no CDN, no web fonts; a Content-Security-Policy forbids it), so it opens
  offline and can be mailed around.
* Sections: overview numbers (steps, devices, graph nodes, op types, time per
  step, parameters, FLOPs); a per-step time chart (inline SVG, CPU and
  accelerator time stacked); a flame graph of the scope view (and the code view
  when the profile has code traces) drawn by the script from embedded JSON; the
  op, scope and code tables (sortable by any column, filterable by name); the
  memory timeline (:mod:`tfprof_lite.outputs.html_memory`) and advisor slots
  (:data:`SLOTS`); a glossary of every column.
* Numbers are those of the tfprof views for the given options (default: every
  node accounted, ``-step -1`` = per-node average over the steps); tables keep the
  ``max_rows`` rows with the most time (keeping their order) and say so.
* All profile text is HTML-escaped; JSON inside ``<script type="application/json">``
  has ``<``, ``>``, ``&``, U+2028 and U+2029 written as ``\\uXXXX``, so no node name
  can close the element or inject markup.
* The output depends only on the profile and the arguments (no timestamps).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from tfprof_lite.base.units import format_memory, format_number, format_time
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.options.builder import ProfileOptionBuilder
from tfprof_lite.options.options import Options
from tfprof_lite.outputs.html_assets import CSS, JS
from tfprof_lite.outputs.html_svg import esc, y_grid
from tfprof_lite.views.node import ShowNode
from tfprof_lite.views.query import run_view
from tfprof_lite.views.result import ViewResult
from tfprof_lite.views.stats import (
    ACC,
    CPU,
    EXEC,
    FLOPS,
    OUTPUT,
    PARAMS,
    PEAK,
    REQUESTED,
    RESIDUAL,
    RUN,
)

__all__ = [
    "SLOTS",
    "Column",
    "StepTime",
    "advisor_section",
    "memory_timeline_section",
    "render_html",
    "report_options",
    "script_json",
    "step_times",
]

_ALL_SELECT = [
    "micros",
    "accelerator_micros",
    "cpu_micros",
    "bytes",
    "peak_bytes",
    "residual_bytes",
    "output_bytes",
    "params",
    "float_ops",
    "occurrence",
]
#: Frames narrower than this share of the root are left out of the flame graph.
FLAME_MIN_SHARE = 0.001
_ADVICE_CHECKERS = (
    "AcceleratorUtilizationChecker",
    "OperationChecker",
    "ExpensiveOperationChecker",
    "JobChecker",
)


def script_json(data: Any) -> str:
    """JSON safe inside ``<script type="application/json">`` (no ``</``, ``<!--``)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    for char, code in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, code)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


# --------------------------------------------------------------------------- data


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


def report_options(overrides: Options | None = None) -> Options:
    """The options the report's queries use: ``overrides`` (or every node accounted,
    all steps averaged) with the depth, selection, order and output the report needs."""
    base = overrides or Options.from_dict(ProfileOptionBuilder().build())
    return base.updated(
        {"max_depth": 1_000_000, "select": _ALL_SELECT, "order_by": "micros", "output": "none"}
    )


def _query(model: ProfileModel, view: str, opts: Options) -> ViewResult:
    return run_view(model, view, opts)


def _tree_nodes(result: ViewResult) -> list[tuple[ShowNode, int]]:
    """The displayed nodes below the root with their depth, in report order."""
    out: list[tuple[ShowNode, int]] = []
    stack = [(kid, 1) for kid in reversed(result.root.children)]
    while stack:
        node, depth = stack.pop()
        out.append((node, depth))
        stack.extend((kid, depth + 1) for kid in reversed(node.children))
    return out


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


# --------------------------------------------------------------------------- tables


@dataclasses.dataclass(frozen=True)
class Column:
    """A table column: title, glossary term, cell kind and value getter."""

    title: str
    term: str
    kind: str  # text | time | bytes | count | pct
    get: Callable[[ShowNode, int], int | str | float | None]


def _fmt(kind: str, value: int | str | float | None) -> tuple[str, str]:
    """The (sort value, display text) of a cell."""
    if value is None:
        return "-1", "--"
    if kind == "text":
        return "", str(value)
    number = float(value) if kind == "pct" else int(value)
    shown = {
        "time": lambda: format_time(int(number)),
        "bytes": lambda: format_memory(int(number)),
        "count": lambda: format_number(int(number)),
        "pct": lambda: f"{number:.2f}%",
    }[kind]()
    return str(number), shown


def _self(stat: int) -> Callable[[ShowNode, int], int | None]:
    return lambda node, depth: node.self_[stat] if node.account else None


def _total(stat: int) -> Callable[[ShowNode, int], int]:
    return lambda node, depth: node.total[stat]


def _memory_columns(get: Callable[[int], Callable[[ShowNode, int], Any]]) -> list[Column]:
    return [
        Column("Requested", "Requested bytes", "bytes", get(REQUESTED)),
        Column("Peak", "Peak bytes", "bytes", get(PEAK)),
        Column("Residual", "Residual bytes", "bytes", get(RESIDUAL)),
        Column("Output", "Output bytes", "bytes", get(OUTPUT)),
        Column("Params", "Params", "count", get(PARAMS)),
        Column("FLOPs", "FLOPs", "count", get(FLOPS)),
    ]


def op_columns(root_time: int) -> list[Column]:
    """Columns of the op table (values of the op type itself)."""

    def share(node: ShowNode, depth: int) -> float:
        """The op type's share of all execution time, in percent."""
        return 100.0 * node.self_[EXEC] / root_time if root_time else 0.0

    return [
        Column("Op type", "Name", "text", lambda n, d: n.name),
        Column("Nodes", "Nodes", "count", lambda n, d: n.occurrence),
        Column("Runs", "Runs", "count", _self(RUN)),
        Column("Time", "Total execution time", "time", _self(EXEC)),
        Column("% time", "% time", "pct", share),
        Column("Accelerator", "Accelerator time", "time", _self(ACC)),
        Column("CPU", "CPU time", "time", _self(CPU)),
        *_memory_columns(_self),
    ]


def tree_columns(first: str) -> list[Column]:
    """Columns of the scope and code tables (self and total time, then totals)."""
    return [
        Column(first, "Name", "text", lambda n, d: n.name),
        Column("Depth", "Depth", "count", lambda n, d: d),
        Column("Self time", "Self", "time", _self(EXEC)),
        Column("Total time", "Total", "time", _total(EXEC)),
        Column("Accelerator", "Accelerator time", "time", _total(ACC)),
        Column("CPU", "CPU time", "time", _total(CPU)),
        Column("Runs", "Runs", "count", _total(RUN)),
        *_memory_columns(_total),
    ]


Row = tuple[ShowNode, int]


def _cap(rows: list[Row], max_rows: int) -> list[Row]:
    """The ``max_rows`` rows with the most total time, in their original order."""
    if len(rows) <= max_rows:
        return rows
    keep = sorted(range(len(rows)), key=lambda i: -rows[i][0].total[EXEC])[:max_rows]
    return [rows[i] for i in sorted(keep)]


def _table(table_id: str, columns: list[Column], rows: list[Row], total: int) -> str:
    head = "".join(
        f'<th data-kind="{c.kind}" title="{esc(c.term)}: see the glossary">{esc(c.title)}</th>'
        for c in columns
    )
    body: list[str] = []
    for node, depth in rows:
        cells = []
        for i, column in enumerate(columns):
            sort, text = _fmt(column.kind, column.get(node, depth))
            attrs = ' class="name"' if i == 0 else f' data-v="{sort}"'
            cells.append(f"<td{attrs}>{esc(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    count = len(rows)
    shown = f"{count} rows" + (f" (the {count} slowest of {total})" if total > count else "")
    return (
        f'<div class="tools"><input type="search" class="filter" data-table="{table_id}" '
        f'data-count="{table_id}-count" placeholder="Filter by name (text or /regex/)" '
        f'aria-label="Filter rows by name">'
        f'<span class="muted" id="{table_id}-count">{esc(shown)}</span></div>'
        f'<div class="scroll"><table class="data sortable" id="{table_id}">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


# --------------------------------------------------------------------------- sections


@dataclasses.dataclass(frozen=True)
class Section:
    """One part of the page: anchor id, heading and HTML body."""

    anchor: str
    title: str
    body: str


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


def memory_timeline_section(model: ProfileModel) -> str | None:
    """SLOT for the memory timeline: bytes in use over time per allocator for the
    step with the highest peak, and what is live at the peak.

    Returns the fragment of :func:`tfprof_lite.outputs.html_memory.memory_fragment`
    (inline SVG and tables, all profile text escaped, no external resources), or
    None when the profile has no steps.
    """
    from tfprof_lite.outputs.html_memory import memory_fragment

    return memory_fragment(model)


class _LogCollector(logging.Handler):
    """Collects the ``tfprof_lite`` logger's messages instead of printing them."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        """Keeps the formatted message."""
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def _collect_logs() -> Iterator[_LogCollector]:
    logger = logging.getLogger("tfprof_lite")
    collector = _LogCollector()
    propagate = logger.propagate
    logger.addHandler(collector)
    logger.propagate = False
    try:
        yield collector
    finally:
        logger.removeHandler(collector)
        logger.propagate = propagate


def advisor_section(model: ProfileModel) -> str | None:
    """SLOT for the advisor's findings: every checker of TF's ``ALL_ADVICE``.

    Runs :func:`tfprof_lite.advisor.run_advisor` (its printed text and log
    messages are captured; the messages are listed as notes) and renders each
    checker's reports. Any failure of the advisor becomes a one-line note in the
    report instead of an error.
    """
    try:
        from tfprof_lite.advisor import run_advisor

        with contextlib.redirect_stdout(io.StringIO()), _collect_logs() as logs:
            advice = run_advisor(model, {name: {} for name in _ADVICE_CHECKERS})
    except Exception as err:  # noqa: BLE001 - the report must not fail with the advisor
        reason = " ".join(str(err).split()) or type(err).__name__
        return f'<p class="muted">The advisor could not run on this profile: {esc(reason)}</p>'
    notes = "".join(f"<li>{esc(m)}</li>" for m in dict.fromkeys(logs.messages))
    parts = [f'<p class="muted">Advisor notes:</p><ul class="muted">{notes}</ul>'] if notes else []
    for name in sorted(advice.checkers):
        reports = list(advice.checkers[name].reports)
        items = "".join(f"<li>{esc(r)}</li>" for r in reports) or "<li>no findings</li>"
        parts.append(f'<h3>{esc(name)}</h3><ul class="advice">{items}</ul>')
    return "".join(parts) or None


#: The report's pluggable sections: slot name -> (title, provider). A provider
#: returns an HTML fragment or None ("not available").
SLOTS: dict[str, tuple[str, Callable[[ProfileModel], str | None]]] = {
    "memory": ("Memory timeline", memory_timeline_section),
    "advisor": ("Advisor findings", advisor_section),
}


def _slot_section(key: str, model: ProfileModel) -> Section:
    title, provider = SLOTS[key]
    try:
        fragment = provider(model)
    except Exception as err:  # noqa: BLE001 - a broken slot must not break the report
        fragment = f'<p class="muted">This section failed: {esc(" ".join(str(err).split()))}</p>'
    if fragment is None:
        fragment = '<p class="muted">Not available for this profile in this version.</p>'
    return Section(key, title, f'<div class="slot" data-slot="{esc(key)}">{fragment}</div>')


def op_table_section(op: ViewResult, max_rows: int) -> Section:
    """The op table: one row per op type, its own time and memory."""
    rows = [(node, 1) for node in op.rows]
    table = _table("t-op", op_columns(op.root.total[EXEC]), _cap(rows, max_rows), len(rows))
    intro = "<p class=muted>One row per op type; values are the op type's own (self).</p>"
    return Section("ops", "Ops", intro + table)


def tree_table_section(result: ViewResult | None, max_rows: int) -> Section:
    """The scope or code table: one row per node, self and total time."""
    view = "code" if result is None else result.view
    anchor, title = ("scopes", "Scopes") if view == "scope" else ("code", "Code")
    if result is None:
        note = "This profile has no code traces (run with an op log holding them)."
        return Section(anchor, title, f'<p class="muted">{note}</p>')
    rows = _tree_nodes(result)
    first = "Scope" if view == "scope" else "Code (file:line:function)"
    table = _table(f"t-{view}", tree_columns(first), _cap(rows, max_rows), len(rows))
    intro = "<p class=muted>Every node of the view; the memory and count columns are totals.</p>"
    return Section(anchor, title, intro + table)


#: Glossary: term -> definition (every column title maps to one of these terms).
GLOSSARY: dict[str, str] = {
    "Name": "Scope view: the node's full name (its name scopes joined by /). Code view: "
    "a Python frame, file:line:function. Op view: the op type (MatMul, Conv2D...).",
    "Self": "The node's own value, without the nodes below it. Shown as -- when the node "
    "is not accounted (the root, and scope parents when -account_type_regexes filters).",
    "Total": "The node's own value plus every node below it in the tree.",
    "Total execution time": "Accelerator time plus CPU time.",
    "Accelerator time": "Time spent executing on an accelerator (GPU/TPU), as measured by "
    "the device library (the stream:all records). 0 on CPU-only machines.",
    "CPU time": "Time from the start to the end of the op on its host-side device, "
    "including time spent waiting for work it launched asynchronously. On a GPU this is "
    "the launch cost, so it can exceed the accelerator time.",
    "Requested bytes": "Memory the op requested (allocations, temporary and persistent "
    "memory), added up over its run.",
    "Peak bytes": "The most memory the op held at one time.",
    "Residual bytes": "Memory the op still held when it finished (not freed), such as "
    "outputs still in use and persistent memory.",
    "Output bytes": "Size of the op's outputs (not necessarily allocated by the op).",
    "Params": "Number of parameters: the product of a variable's shape.",
    "FLOPs": "Floating-point operations, from the op log's static counts times the runs.",
    "Runs": "How many times the nodes ran in the query step (per-node average for -step -1).",
    "Nodes": "How many graph nodes have this op type.",
    "Depth": "Level in the tree: 1 is the top level below the root.",
    "% time": "The op type's execution time as a share of all execution time.",
    "Step": "One traced run (one RunMetadata). The tables average each node over the steps "
    "it ran in (-step -1) unless the report was made with -step N.",
}


def glossary_section() -> Section:
    """Definitions of every column (self vs total, CPU vs accelerator, the four bytes)."""
    items = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in GLOSSARY.items())
    return Section("glossary", "Glossary", f'<dl class="glossary">{items}</dl>')


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("tfprof-lite")
    except Exception:  # noqa: BLE001 - not installed as a distribution
        return "unknown"


def _page(title: str, subtitle: str, sections: Sequence[Section]) -> str:
    nav = "".join(f'<a href="#{s.anchor}">{esc(s.title)}</a>' for s in sections)
    body = "".join(
        f'<section id="{s.anchor}"><h2>{esc(s.title)}</h2>{s.body}</section>' for s in sections
    )
    csp = (
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f'<header><h1>{esc(title)}</h1><p class="muted">{esc(subtitle)}</p>'
        f"<nav>{nav}</nav></header>"
        f"<main>{body}</main><footer>Made by tfprof-lite {esc(_version())}; "
        "works offline, loads nothing.</footer>"
        f"<script>{JS}</script></body></html>\n"
    )


def _subtitle(model: ProfileModel, opts: Options, source: str) -> str:
    steps = model.sorted_steps()
    if opts.step >= 0:
        which = f"step {opts.step}"
    else:
        which = f"per-node average over {len(steps)} step{'s' if len(steps) != 1 else ''}"
    return f"{source + ': ' if source else ''}tables show {which}"


def render_html(
    model: ProfileModel,
    opts: Options | None = None,
    *,
    title: str = "tfprof-lite report",
    source: str = "",
    max_rows: int = 2000,
) -> str:
    """The whole report as one HTML document (see the module docstring).

    Args:
        model: the profile.
        opts: query options (filters, ``step``); the report sets depth, selection,
            order and output itself. None: every node accounted, steps averaged.
        title: the page title.
        source: where the profile came from (shown under the title).
        max_rows: the most rows per table.
    """
    query = report_options(opts)
    scope = _query(model, "scope", query)
    op = _query(model, "op", query)
    code = _query(model, "code", query) if model.has_trace else None
    sections = [
        overview_section(model, scope, op),
        steps_section(model),
        flame_section([r for r in (scope, code) if r is not None]),
        op_table_section(op, max_rows),
        tree_table_section(scope, max_rows),
        tree_table_section(code, max_rows),
        _slot_section("memory", model),
        _slot_section("advisor", model),
        glossary_section(),
    ]
    return _page(title, _subtitle(model, query, source), sections)
