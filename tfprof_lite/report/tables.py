"""The report's op, scope and code tables and the glossary of their columns.

Contract: a :class:`Column` has a title, a glossary term, a cell kind (``text``,
``time``, ``bytes``, ``count``, ``pct``) and a value getter; the statistics'
titles, terms and kinds come from the metric table
(:mod:`tfprof_lite.base.metrics`). Tables are sortable and filterable by the
page's script (numbers sort by the cell's ``data-v``); a table keeps the
``max_rows`` rows with the most time, in their order, and says so. Every column
term is defined in :data:`GLOSSARY`. Counts are written with SI prefixes
(``85.03 M``), never tfprof's ``85.03m``; a name's `` (gradient)`` suffix stays
visible when the name is cut (:func:`name_markup`).

On an XSpace profile (``xspace=True``) numbers it cannot have are not shown as
0: the Params and FLOPs columns are left out (an XSpace records neither), and a
Runs cell of a node that took time but has no run count (GPU ops, whose runs
the XSpace does not count) reads :data:`NOT_RECORDED`. A true 0 stays 0.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from tfprof_lite.base.metrics import (
    ACC,
    BY_STAT,
    CPU,
    EXEC,
    FLOPS,
    METRICS,
    OUTPUT,
    PARAMS,
    PEAK,
    REQUESTED,
    RESIDUAL,
    RUN,
)
from tfprof_lite.base.units import format_count, format_memory, format_time
from tfprof_lite.report.markup import Section, esc
from tfprof_lite.views.code import GRADIENT_SUFFIX
from tfprof_lite.views.node import ShowNode
from tfprof_lite.views.result import ViewResult

__all__ = [
    "GLOSSARY",
    "NOT_RECORDED",
    "NO_CODE_NOTES",
    "Column",
    "glossary_section",
    "name_markup",
    "op_columns",
    "op_table_section",
    "tree_columns",
    "tree_table_section",
]


def _tree_nodes(result: ViewResult) -> list[tuple[ShowNode, int, int]]:
    """The displayed nodes below the root with their depth and the position of
    their parent in the list (-1 for the top level), in report order."""
    out: list[tuple[ShowNode, int, int]] = []
    stack = [(kid, 1, -1) for kid in reversed(result.root.children)]
    while stack:
        node, depth, parent = stack.pop()
        here = len(out)
        out.append((node, depth, parent))
        stack.extend((kid, depth + 1, here) for kid in reversed(node.children))
    return out


@dataclasses.dataclass(frozen=True)
class Column:
    """A table column: title, glossary term, cell kind and value getter."""

    title: str
    term: str
    kind: str  # text | time | bytes | count | pct
    get: Callable[[ShowNode, int], int | str | float | None]


_FORMATS: dict[str, Callable[[int], str]] = {
    "time": format_time,
    "bytes": format_memory,
    "count": format_count,
}


#: The text of a cell whose number the profile cannot have.
NOT_RECORDED = "not recorded"


def _fmt(kind: str, value: int | str | float | None) -> tuple[str, str]:
    """The (sort value, display text) of a cell."""
    if value is None:
        return "-1", "--"
    if value == NOT_RECORDED and kind != "text":
        return "-1", NOT_RECORDED
    if kind == "text":
        return "", str(value)
    if kind == "pct":
        number = float(value)
        return str(number), f"{number:.2f}%"
    count = int(value)
    return str(count), _FORMATS[kind](count)


def _self(stat: int) -> Callable[[ShowNode, int], int | None]:
    return lambda node, depth: node.self_[stat] if node.account else None


def _total(stat: int) -> Callable[[ShowNode, int], int]:
    return lambda node, depth: node.total[stat]


Getter = Callable[[ShowNode, int], Any]


def _stat_column(stat: int, get: Callable[[int], Getter]) -> Column:
    """The column of a statistic: the metric table's title, term and kind."""
    metric = BY_STAT[stat]
    return Column(metric.title, metric.term, metric.kind, get(stat))


def _memory_columns(get: Callable[[int], Getter], xspace: bool = False) -> list[Column]:
    graph = () if xspace else (PARAMS, FLOPS)
    stats = (REQUESTED, PEAK, RESIDUAL, OUTPUT, *graph)
    return [_stat_column(stat, get) for stat in stats]


def _runs_column(get: Callable[[int], Getter], xspace: bool) -> Column:
    """The Runs column; on an XSpace a node with time and no run count is not recorded."""
    column = _stat_column(RUN, get)
    if not xspace:
        return column
    runs, time = column.get, get(EXEC)

    def value(node: ShowNode, depth: int) -> Any:
        count = runs(node, depth)
        return NOT_RECORDED if count == 0 and (time(node, depth) or 0) > 0 else count

    return dataclasses.replace(column, get=value)


def op_columns(root_time: int, accelerator: bool = True, xspace: bool = False) -> list[Column]:
    """Columns of the op table (values of the op type itself); without
    ``accelerator`` the accelerator time column is left out; ``xspace``: see
    the module docstring."""

    def share(node: ShowNode, depth: int) -> float:
        """The op type's share of all execution time, in percent."""
        return 100.0 * node.self_[EXEC] / root_time if root_time else 0.0

    return [
        Column("Op type", "Name", "text", lambda n, d: n.name),
        Column("Nodes", "Nodes", "count", lambda n, d: n.occurrence),
        _runs_column(_self, xspace),
        _stat_column(EXEC, _self),
        Column("% time", "% time", "pct", share),
        *([_stat_column(ACC, _self)] if accelerator else []),
        _stat_column(CPU, _self),
        *_memory_columns(_self, xspace),
    ]


def tree_columns(first: str, accelerator: bool = True, xspace: bool = False) -> list[Column]:
    """Columns of the scope and code tables (self and total time, then totals);
    without ``accelerator`` the accelerator time column is left out; ``xspace``:
    see the module docstring."""
    return [
        Column(first, "Name", "text", lambda n, d: n.name),
        Column("Self time", "Self", "time", _self(EXEC)),
        Column("Total time", "Total", "time", _total(EXEC)),
        *([_stat_column(ACC, _total)] if accelerator else []),
        _stat_column(CPU, _total),
        _runs_column(_total, xspace),
        *_memory_columns(_total, xspace),
    ]


Row = tuple[ShowNode, int]


def _cap(rows: list[Row], max_rows: int) -> list[int]:
    """Positions of the ``max_rows`` rows with the most total time, in order."""
    if len(rows) <= max_rows:
        return list(range(len(rows)))
    keep = sorted(range(len(rows)), key=lambda i: -rows[i][0].total[EXEC])[:max_rows]
    return sorted(keep)


def _kept_parents(parents: list[int], kept: list[int]) -> list[int]:
    """Each kept row's nearest kept ancestor, as a position in ``kept`` (-1: none)."""
    where = {old: new for new, old in enumerate(kept)}
    out = []
    for old in kept:
        parent = parents[old]
        while parent != -1 and parent not in where:
            parent = parents[parent]
        out.append(where.get(parent, -1))
    return out


def name_markup(name: str) -> str:
    """A name cell's escaped content; a code-view name ending in `` (gradient)``
    keeps that suffix in its own span, which the stylesheet never cuts (the
    rest of the name ends in an ellipsis instead), so a forward row and its
    gradient stay apart however narrow the column."""
    if name.endswith(GRADIENT_SUFFIX) and len(name) > len(GRADIENT_SUFFIX):
        stem = name[: -len(GRADIENT_SUFFIX)]
        return (
            f'<span class="stem">{esc(stem)}</span><span class="sfx">{esc(GRADIENT_SUFFIX)}</span>'
        )
    return esc(name)


def _colgroup(columns: list[Column]) -> str:
    cols = "".join(
        '<col class="c-name">' if i == 0 else '<col class="c-num">' for i in range(len(columns))
    )
    return f"<colgroup>{cols}</colgroup>"


#: The narrowest the name column of a table gets (px); a narrower window
#: scrolls the table sideways in its box instead of squeezing the names.
NAME_MIN_WIDTH = 240
#: The width of a number column (px), as the stylesheet's ``col.c-num``.
NUMBER_WIDTH = 86


def _min_width(columns: list[Column]) -> int:
    return NAME_MIN_WIDTH + NUMBER_WIDTH * (len(columns) - 1)


def _table(
    table_id: str,
    columns: list[Column],
    rows: list[Row],
    total: int,
    parents: list[int] | None = None,
) -> str:
    head = "".join(
        f'<th data-kind="{c.kind}" title="{esc(c.term)}: see the glossary">{esc(c.title)}</th>'
        for c in columns
    )
    body: list[str] = []
    first, rest = columns[0], [(c.kind, c.get) for c in columns[1:]]
    # The markup of a time, bytes or count cell depends on its kind and integer
    # value only (equal values format alike; many repeat, such as 0 B).
    made: dict[tuple[str, Any], str] = {}
    for r, (node, depth) in enumerate(rows):
        _, name = _fmt(first.kind, first.get(node, depth))
        cells = [f'<td class="name">{name_markup(name)}</td>']
        for kind, get in rest:
            value = get(node, depth)
            cell = made.get((kind, value))
            if cell is None:
                sort, text = _fmt(kind, value)
                cell = f'<td data-v="{sort}">{esc(text)}</td>'
                if kind in _FORMATS:
                    made[(kind, value)] = cell
            cells.append(cell)
        tree = "" if parents is None else f' data-p="{parents[r]}"'
        body.append(f"<tr{tree}>" + "".join(cells) + "</tr>")
    count = len(rows)
    shown = f"{count} rows" + (f" (the {count} slowest of {total})" if total > count else "")
    kind = "data sortable fixed" + (" tree" if parents is not None else "")
    return (
        f'<div class="tools"><input type="search" class="filter" data-table="{table_id}" '
        f'data-count="{table_id}-count" placeholder="Filter by name (text or /regex/)" '
        f'aria-label="Filter rows by name">'
        f'<span class="muted" id="{table_id}-count">{esc(shown)}</span>'
        + (
            f'<button type="button" class="tree-all" data-table="{table_id}" data-open="1">'
            f'Expand all</button><button type="button" class="tree-all" data-table="{table_id}"'
            ' data-open="0">Collapse all</button>'
            if parents is not None
            else ""
        )
        + f'</div><div class="scroll"><table class="{kind}" id="{table_id}" '
        f'style="min-width: {_min_width(columns)}px">'
        f"{_colgroup(columns)}<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody>"
        "</table></div>"
    )


def op_table_section(
    op: ViewResult, max_rows: int, accelerator: bool = True, xspace: bool = False
) -> Section:
    """The op table: one row per op type, its own time and memory."""
    rows = [(node, 1) for node in op.rows]
    kept = [rows[i] for i in _cap(rows, max_rows)]
    columns = op_columns(op.root.total[EXEC], accelerator, xspace)
    table = _table("t-op", columns, kept, len(rows))
    intro = "<p class=muted>One row per op type; values are the op type's own (self).</p>"
    return Section("ops", "Ops", intro + table)


#: What the code section says when the profile has no code traces, per profile kind
#: (:func:`tfprof_lite.analysis.profile_kind.profile_kind`).
NO_CODE_NOTES = {
    "tf1": "This profile has no code traces (run with an op log holding them).",
    "tf2": "This profile has no code traces (profile with "
    "tf.profiler.experimental.ProfilerOptions(python_tracer_level=1) to record them).",
    "jax": "This profile has no code traces (its XLA programs carry no source locations).",
}


def tree_table_section(
    result: ViewResult | None,
    max_rows: int,
    accelerator: bool = True,
    xspace: bool = False,
    kind: str = "tf1",
) -> Section:
    """The scope or code table: a collapsible tree, one row per node, self and
    total time (rows carry ``data-p``, the position of their parent row);
    ``kind`` picks the note of a profile without code traces."""
    view = "code" if result is None else result.view
    anchor, title = ("scopes", "Scopes") if view == "scope" else ("code", "Code")
    if result is None:
        note = NO_CODE_NOTES.get(kind, NO_CODE_NOTES["tf1"])
        return Section(anchor, title, f'<p class="muted">{note}</p>')
    nodes = _tree_nodes(result)
    rows = [(node, depth) for node, depth, _ in nodes]
    kept = _cap(rows, max_rows)
    parents = _kept_parents([p for _, _, p in nodes], kept)
    first = "Scope" if view == "scope" else "Code (file:line:function)"
    columns = tree_columns(first, accelerator, xspace)
    table = _table(f"t-{view}", columns, [rows[i] for i in kept], len(rows), parents)
    intro = (
        "<p class=muted>Every node of the view as a tree: click the triangle (or press "
        "Enter on it) to open or close a node; sorting orders the children of each node. "
        "The memory and count columns are totals.</p>"
    )
    return Section(anchor, title, intro + table)


#: Glossary: term -> definition (every column title maps to one of these terms).
GLOSSARY: dict[str, str] = {
    "Name": "Scope view: the node's full name (its name scopes joined by /). Code view: "
    "a Python frame, file:line:function. Op view: the op type (MatMul, Conv2D...).",
    "Self": "The node's own value, without the nodes below it. Shown as -- when the node "
    "is not accounted (the root, and scope parents when -account_type_regexes filters).",
    "Total": "The node's own value plus every node below it in the tree.",
    **{m.term: m.glossary for m in METRICS if m.term},
    "Nodes": "How many graph nodes have this op type.",
    "% time": "The op type's execution time as a share of all execution time.",
    "Step": "One traced run (one RunMetadata). The tables average each node over the steps "
    "it ran in (-step -1) unless the report was made with -step N.",
}


def glossary_section() -> Section:
    """Definitions of every column (self vs total, CPU vs accelerator, the four bytes)."""
    items = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in GLOSSARY.items())
    return Section("glossary", "Glossary", f'<dl class="glossary">{items}</dl>')
