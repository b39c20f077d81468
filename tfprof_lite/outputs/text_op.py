"""The text report's lines of the op view: one row per op type.

Contract of :func:`render_op`: the legend, then one row per displayed op type:
its name padded to 25 bytes, then for each selected statistic the op type's own
value with its share of the root's total and its own share (``value (total%,
self%)``, right-aligned to 30), then devices, op types, ``runs|definitions`` and,
with ``input_shapes``, a summary of the input signatures. Without rows, only the
root's row is printed, without the legend.
"""

from __future__ import annotations

from tfprof_lite.base.units import format_time
from tfprof_lite.outputs.text_layout import Selection, input_shape, legend, selection
from tfprof_lite.views.node import ShowNode
from tfprof_lite.views.result import ViewResult

__all__ = ["render_op"]


def _pct_field(text: str, node: ShowNode, root: ShowNode, stat: int, guard: int) -> str:
    accu = pct = 0.0
    if guard > 0:
        accu = _ratio(100.0 * node.total[stat], root.total[stat])
        pct = _ratio(100.0 * node.self_[stat], root.total[stat])
    return f"{text} ({accu:.2f}%, {pct:.2f}%)".rjust(30)


def _ratio(num: float, den: int) -> float:
    if den == 0:
        return float("nan") if num == 0 else float("inf") * (1 if num > 0 else -1)
    return num / den


def _op_row(node: ShowNode, root: ShowNode, sel: Selection, result: ViewResult) -> str:
    attrs: list[str] = []
    for metric in sel.memory:
        stat = metric.stat
        text = metric.format(node.self_[stat])
        attrs.append(_pct_field(text, node, root, stat, node.self_[stat]))
    for metric in sel.time:
        stat = metric.stat
        text = metric.format(node.self_[stat])
        attrs.append(_pct_field(text, node, root, stat, node.total[stat]))
    for metric in sel.counts:  # the op view names counts by their select name
        stat = metric.stat
        text = f"{metric.format(node.self_[stat])} {metric.select}"
        attrs.append(_pct_field(text, node, root, stat, node.total[stat]))
    if "device" in sel:
        attrs.append("|".join(sorted(node.devices)))
    if "op_types" in sel:
        attrs.append("|".join(sorted(node.op_types)))
    if "occurrence" in sel:
        runs = result.model.stats(result.opts.step).run_count
        total_runs = sum(int(runs[n]) for n in node.graph_nodes)
        attrs.append(f"{total_runs}|{len(node.graph_nodes)}".rjust(10))
    row = f"{_ljust_bytes(node.name, 25)}{', '.join(attrs)}\n"
    if "input_shapes" in sel:
        summary = _op_input_shapes(node, result)
        if summary:
            row = f"{row}\n{summary}\n\n"
    return row


def _ljust_bytes(text: str, width: int) -> str:
    """C's ``%-<width>s``: pad to ``width`` UTF-8 bytes, not characters."""
    return text + " " * max(0, width - len(text.encode("utf-8")))


def _op_input_shapes(node: ShowNode, result: ViewResult) -> str:
    """Per input signature: definitions, runs and time, most-run first."""
    model = result.model
    stats = model.stats(result.opts.step)
    groups: dict[str, list[int]] = {}
    for nid in node.graph_nodes:
        shapes = model.input_shapes(nid)
        sig = "input_type: " + ",\t".join(input_shape(p, d) for p, d in shapes.items())
        acc = groups.setdefault(sig, [0, 0, 0])
        acc[0] += 1
        acc[1] += int(stats.run_count[nid])
        acc[2] += int(stats.exec_micros[nid])
    ordered = sorted(sorted(groups.items()), key=lambda kv: -kv[1][1])
    return "\n".join(
        f"{sig}\t(run*{runs}|defined*{count})\texec_time: {format_time(micros)}"
        for sig, (count, runs, micros) in ordered
    )


def render_op(result: ViewResult) -> str:
    """The op view's rows, after the legend when there are any."""
    sel = selection(result.opts.select)
    root = result.root
    if not result.has_entries:
        return _op_row(root, root, sel, result)
    rows = [legend(sel, "op")]
    rows += [_op_row(node, root, sel, result) for node in result.rows]
    return "".join(rows)
