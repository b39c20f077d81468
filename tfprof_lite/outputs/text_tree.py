"""The text report's lines of the tree views (scope, graph, code), node by node.

Contract of :func:`render_tree`: the legend, then one line per displayed node in
report order, indented by the node's depth: ``name (field, field, ...)`` with the
fields of :mod:`tfprof_lite.outputs.text_layout`; ``self/total`` pairs, or
``--/total`` for a node that is not accounted. A tree laid out as a
:class:`~tfprof_lite.views.passes.TreeTable` is rendered by
:func:`tfprof_lite.outputs.text_table.render_table`, with the same bytes.
"""

from __future__ import annotations

from tfprof_lite.base.metrics import DEFINITION, RUN, Metric
from tfprof_lite.base.units import format_number, format_shape
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.outputs.text_layout import Selection, input_shape, legend, selection
from tfprof_lite.outputs.text_table import render_table
from tfprof_lite.views.node import ShowNode
from tfprof_lite.views.passes import TreeTable
from tfprof_lite.views.result import ViewResult

__all__ = ["render_tree"]


def _pair(node: ShowNode, metric: Metric) -> str:
    stat = metric.stat
    total = metric.format(node.total[stat])
    if node.account:
        return f"{metric.format(node.self_[stat])}/{total}"
    return f"--/{total}"


def _stat_fields(node: ShowNode, metrics: tuple[Metric, ...]) -> list[str]:
    return [_pair(node, m) + (f" {m.suffix}" if m.suffix else "") for m in metrics]


def _occurrence(node: ShowNode) -> str:
    runs, defs = format_number(node.total[RUN]), format_number(node.total[DEFINITION])
    if node.account:
        return f"{format_number(node.self_[RUN])}/{runs}|1/{defs}"
    return f"--/{runs}|--/{defs}"


def _graph_node_line(node: ShowNode, sel: Selection, model: ProfileModel, root_type: str) -> str:
    info: list[str] = []
    nid = node.nid
    if "params" in sel:
        shape = model.shapes[nid] if nid >= 0 else None
        if shape:
            info.append(format_shape(shape))
    info += _stat_fields(node, sel.counts)
    info += _stat_fields(node, sel.memory)
    info += _stat_fields(node, sel.time)
    if "device" in sel and nid >= 0 and model.canonical_device[nid]:
        info.append(model.canonical_device[nid])
    if "op_types" in sel:
        types = sorted(model.op_types[nid]) if nid >= 0 else [root_type]
        info.append("|".join(types))
    if "occurrence" in sel:
        info.append(_occurrence(node))
    if "input_shapes" in sel:
        shapes = model.input_shapes(nid) if nid >= 0 else {}
        info.append("|".join(input_shape(pos, dims) for pos, dims in shapes.items()))
    return f"{node.name} ({', '.join(info)})"


def _code_node_line(node: ShowNode, sel: Selection) -> str:
    info = _stat_fields(node, sel.memory) + _stat_fields(node, sel.time)
    info += _stat_fields(node, sel.counts)
    if "device" in sel and node.devices:
        info.append("|".join(sorted(node.devices)))
    if "op_types" in sel:
        info.append("|".join(sorted(node.op_types)))
    if "occurrence" in sel:
        info.append("occurrence N/A in code view")
    if "input_shapes" in sel:
        info.append("input_shapes N/A in code view")
    return f"{node.name} ({', '.join(info)})"


def render_tree(result: ViewResult) -> str:
    """The legend and one line per displayed node of a scope, graph or code view."""
    sel = selection(result.opts.select)
    table: TreeTable | None = getattr(result.root, "table", None)
    if table is not None:
        return legend(sel, result.view) + render_table(result, table, sel)
    code = result.view == "code"
    root_type = "_TFGraphParent" if result.view == "graph" else "_kTFScopeParent"
    parts = [legend(sel, result.view)]
    stack = [result.root]
    while stack:
        node = stack.pop()
        if code:
            line = _code_node_line(node, sel)
        else:
            line = _graph_node_line(node, sel, result.model, root_type)
        parts.append(" " * node.indent + line + "\n")
        stack.extend(reversed(node.children))
    return "".join(parts)
