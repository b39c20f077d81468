"""Machine-readable views: ``-output json:outfile=F`` and ``-output csv:outfile=F``.

One row per shown node (tree views: the root and every displayed node in report
order, with depth and parent; op view: the displayed rows). For each selected
numeric attribute a row has ``<stat>_self`` (empty/null when the node is not
accounted, where the text report prints ``--``), ``<stat>_total`` and the
percentages of the root's total. The schema is versioned (:data:`SCHEMA_VERSION`)
and documented in ``docs/outputs/table.md``.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from tfprof_lite.base.metrics import BY_SELECT, BY_STAT, DEFINITION, Metric
from tfprof_lite.views.node import ShowNode
from tfprof_lite.views.result import ViewResult

__all__ = ["SCHEMA_NAME", "SCHEMA_VERSION", "columns", "render_csv", "render_json", "rows"]

SCHEMA_NAME = "tfprof_lite.view"
SCHEMA_VERSION = 1

_TEXT = ("device", "op_types", "input_shapes")


def _stats(select: tuple[str, ...]) -> list[Metric]:
    """The statistics the selected names show, by select name, each once."""
    out: list[Metric] = []
    for name in sorted(set(select)):
        metric = BY_SELECT.get(name)
        if metric is None:
            continue
        for stat in (metric.stat, *metric.shows):
            if BY_STAT[stat] not in out:
                out.append(BY_STAT[stat])
    return out


def columns(result: ViewResult) -> list[str]:
    """The column names of ``result``'s rows, in order."""
    cols = ["name", "depth", "parent", "accounted"]
    for metric in _stats(result.opts.select):
        name = metric.name
        cols += [f"{name}_self", f"{name}_total", f"{name}_total_pct", f"{name}_self_pct"]
    if "occurrence" in result.opts.select:
        cols.append("graph_nodes" if result.view in ("op", "code") else "definition_count")
    cols += [key for key in _TEXT if key in result.opts.select]
    return cols


def _pct(value: int, whole: int) -> float:
    return round(100.0 * value / whole, 4) if whole else 0.0


def _text_fields(node: ShowNode, result: ViewResult) -> dict[str, str]:
    model = result.model
    nid = node.nid
    out: dict[str, str] = {}
    if result.view in ("op", "code"):
        out["device"] = "|".join(sorted(node.devices))
        out["op_types"] = "|".join(sorted(node.op_types))
        out["input_shapes"] = ""
    else:
        out["device"] = model.canonical_device[nid] if nid >= 0 else ""
        out["op_types"] = "|".join(sorted(model.op_types[nid])) if nid >= 0 else ""
        shapes = model.input_shapes(nid) if nid >= 0 else {}
        out["input_shapes"] = "|".join(
            f"{p}:{'x'.join(map(str, d))}" if d else f"{p}:unknown" for p, d in shapes.items()
        )
    return out


def _row(node: ShowNode, depth: int, parent: str, result: ViewResult) -> dict[str, Any]:
    root = result.root
    row: dict[str, Any] = {
        "name": node.name,
        "depth": depth,
        "parent": parent,
        "accounted": node.account,
    }
    for metric in _stats(result.opts.select):
        name, stat = metric.name, metric.stat
        row[f"{name}_self"] = node.self_[stat] if node.account else None
        row[f"{name}_total"] = node.total[stat]
        row[f"{name}_total_pct"] = _pct(node.total[stat], root.total[stat])
        row[f"{name}_self_pct"] = _pct(node.self_[stat], root.total[stat]) if node.account else None
    if "occurrence" in result.opts.select:
        if result.view in ("op", "code"):
            row["graph_nodes"] = node.occurrence
        else:
            row["definition_count"] = node.total[DEFINITION]
    text = _text_fields(node, result)
    row.update({key: text[key] for key in _TEXT if key in result.opts.select})
    return row


def rows(result: ViewResult) -> list[dict[str, Any]]:
    """One dict per shown node, in report order."""
    if result.empty:
        return []
    if result.view == "op":
        return [_row(node, 1, result.root.name, result) for node in result.rows]
    out: list[dict[str, Any]] = []
    stack: list[tuple[ShowNode, int, str]] = [(result.root, 0, "")]
    while stack:
        node, depth, parent = stack.pop()
        out.append(_row(node, depth, parent, result))
        stack.extend((kid, depth + 1, node.name) for kid in reversed(node.children))
    return out


def render_json(result: ViewResult) -> str:
    """The view as a JSON document (schema name and version, columns, rows)."""
    doc = {
        "schema": SCHEMA_NAME,
        "version": SCHEMA_VERSION,
        "view": result.view,
        "step": result.opts.step,
        "select": list(result.opts.select),
        "columns": columns(result),
        "rows": rows(result),
    }
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def render_csv(result: ViewResult) -> str:
    """The view as CSV: a header of :func:`columns`, then one line per row."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns(result), lineterminator="\n")
    writer.writeheader()
    for row in rows(result):
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return buf.getvalue()
