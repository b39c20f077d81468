"""tfprof's text report: Doc section, legend and one line per displayed node.

:func:`render_report` returns the text tfprof writes with ``-output file`` (the
report body); :func:`render_stdout` wraps it in the Options block and banners
that ``-output stdout`` prints. Both are byte-identical to TensorFlow 2.21.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import chain, repeat

import numpy as np
import numpy.typing as npt

from tfprof_lite.base.units import format_memory, format_number, format_shape, format_time
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.options.options import Options
from tfprof_lite.views.node import ShowNode
from tfprof_lite.views.result import ViewResult
from tfprof_lite.views.stats import (
    ACC,
    CPU,
    DEFINITION,
    EXEC,
    FLOPS,
    OUTPUT,
    PARAMS,
    PEAK,
    REQUESTED,
    RESIDUAL,
    RUN,
)
from tfprof_lite.views.table import TreeTable

__all__ = ["doc_section", "options_block", "render_report", "render_stdout"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

MISSING_STREAM_WARNING = (
    "\n\nFound accelerator operation but misses accelerator stream stats!\n\n"
    "It's likely a gpu tracing issue rather than tf-profiler issue.\n"
    "If you found your operation missing accelerator time, consider to post to "
    "discuss@tensorflow.org!\n\n"
)

_VIEW_HELP = {
    "scope": "scope: The nodes in the model graph are organized by their names, which is "
    "hierarchical like filesystem.",
    "code": "code: When python trace is available, the nodes are python lines and their are "
    "organized by the python call stack.",
    "op": "op: The nodes are operation kernel type, such as MatMul, Conv2D. Graph nodes "
    "belonging to the same type are aggregated together.",
}
_VIEW_HELP["graph"] = _VIEW_HELP["scope"]

_TOTAL_HELP = "total execution time: Sum of accelerator execution time and cpu execution time."
_CPU_HELP = (
    "cpu execution time: The time from the start to the end of the operation. It's the sum "
    "of actual cpu run time plus the time that it spends waiting if part of computation is "
    "launched asynchronously."
)
_ACC_HELP = (
    "accelerator execution time: Time spent executing on the accelerator. This is normally "
    "measured by the actual hardware library."
)
_SELECT_HELP = {
    "bytes": "requested bytes: The memory requested by the operation, accumulatively.",
    "micros": "\n".join((_TOTAL_HELP, _CPU_HELP, _ACC_HELP)),
    "accelerator_micros": _ACC_HELP,
    "cpu_micros": _CPU_HELP,
    "params": "param: Number of parameters (in the Variable).",
    "float_ops": "flops: Number of float operations. Note: Please read the implementation "
    "for the math behind it.",
    "tensor_value": "tensor_value: Not supported now.",
    "device": "device: which device is placed on.",
    "op_types": "op_types: The attributes of the operation, includes the Kernel name device "
    "placed on and user-defined strings.",
    "occurrence": "occurrence: The number of times it occurs",
    "input_shapes": "input shape: The shape of input tensors",
    "peak_bytes": "peak bytes: The peak amount of memory that the operation is holding at "
    "some point.",
    "residual_bytes": "residual bytes: The memory not de-allocated after the operation finishes.",
    "output_bytes": "output bytes: The memory that is output from the operation (not "
    "necessarily allocated by the operation)",
}

_OPTION_ORDER = (
    ("-max_depth", "max_depth"),
    ("-min_bytes", "min_bytes"),
    ("-min_peak_bytes", "min_peak_bytes"),
    ("-min_residual_bytes", "min_residual_bytes"),
    ("-min_output_bytes", "min_output_bytes"),
    ("-min_micros", "min_micros"),
    ("-min_accelerator_micros", "min_accelerator_micros"),
    ("-min_cpu_micros", "min_cpu_micros"),
    ("-min_params", "min_params"),
    ("-min_float_ops", "min_float_ops"),
    ("-min_occurrence", "min_occurrence"),
    ("-step", "step"),
    ("-order_by", "order_by"),
    ("-account_type_regexes", "account_type_regexes"),
    ("-start_name_regexes", "start_name_regexes"),
    ("-trim_name_regexes", "trim_name_regexes"),
    ("-show_name_regexes", "show_name_regexes"),
    ("-hide_name_regexes", "hide_name_regexes"),
    ("-account_displayed_op_only", "account_displayed_op_only"),
    ("-select", "select"),
)

BANNER_OPTIONS = "\n=========================Options=============================\n"
BANNER_REPORT = "\n==================Model Analysis Report======================\n"
BANNER_END = "\n======================End of Report==========================\n"


def options_block(opts: Options) -> str:
    """The 21-line ``-name value`` block printed before a stdout report."""
    lines = []
    for label, attr in _OPTION_ORDER:
        value = getattr(opts, attr)
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (tuple, list)):
            text = ",".join(value)
        else:
            text = str(value)
        lines.append(f"{label:<28}{text}\n")
    out = opts.output
    pairs = ",".join(f"{k}={v}" for k, v in out.options)
    lines.append(f"{'-output':<28}{out.type}:{pairs}\n")
    return "".join(lines)


def doc_section(view: str, opts: Options) -> str:
    """``\\nDoc:\\n`` + the view's help + one help entry per selected attribute."""
    helps = [_SELECT_HELP.get(s, f"Unknown select: {s}") for s in opts.select]
    return f"\nDoc:\n{_VIEW_HELP[view]}\n" + "\n".join(helps) + "\n\n"


def render_report(result: ViewResult) -> str:
    """The report body (what ``-output file`` writes); empty for an empty result."""
    if result.empty:
        return ""
    prefix = MISSING_STREAM_WARNING if result.model.miss_accelerator_stream else ""
    prefix += doc_section(result.view, result.opts) + "Profile:\n"
    if result.view == "op":
        return prefix + _render_op(result)
    return prefix + _render_tree(result)


def render_stdout(result: ViewResult) -> str:
    """Everything ``-output stdout`` prints: Options block, banners and the report."""
    return (
        BANNER_OPTIONS
        + options_block(result.opts)
        + BANNER_REPORT
        + render_report(result)
        + BANNER_END
    )


# ---------------------------------------------------------------- tree views
def _tree_legend(sel: frozenset[str], code: bool) -> str:
    legends: list[str] = []
    if not code:
        legends += _pick(sel, ("params", "# parameters"), ("float_ops", "# float_ops"))
    legends += _pick(
        sel,
        ("bytes", "requested bytes"),
        ("peak_bytes", "peak bytes"),
        ("residual_bytes", "residual bytes"),
        ("output_bytes", "output bytes"),
    )
    legends += _time_legends(sel)
    if code:
        legends += _pick(sel, ("params", "# parameters"), ("float_ops", "# float_ops"))
    occurrence = "op occurrence (run|defined)" if code else "op count (run|defined)"
    legends += _pick(
        sel,
        ("device", "assigned devices"),
        ("op_types", "op types"),
        ("occurrence", occurrence),
        ("input_shapes", "input shapes"),
    )
    return "node name | " + " | ".join(legends) + "\n"


def _pick(sel: frozenset[str], *pairs: tuple[str, str]) -> list[str]:
    return [text for key, text in pairs if key in sel]


def _time_legends(sel: frozenset[str]) -> list[str]:
    if "micros" in sel:
        return ["total execution time", "accelerator execution time", "cpu execution time"]
    return _pick(
        sel,
        ("accelerator_micros", "accelerator execution time"),
        ("cpu_micros", "cpu execution time"),
    )


def _pair(node: ShowNode, stat: int, fmt: Callable[[int], str]) -> str:
    total = fmt(node.total[stat])
    if node.account:
        return f"{fmt(node.self_[stat])}/{total}"
    return f"--/{total}"


def _time_fields(node: ShowNode, sel: frozenset[str]) -> list[str]:
    return [_pair(node, stat, format_time) for stat in _time_stats(sel)]


def _memory_fields(node: ShowNode, sel: frozenset[str]) -> list[str]:
    return [_pair(node, stat, format_memory) for key, stat in _MEMORY_KEYS if key in sel]


def _count_fields(node: ShowNode, sel: frozenset[str]) -> list[str]:
    out = []
    if "params" in sel:
        out.append(_pair(node, PARAMS, format_number) + " params")
    if "float_ops" in sel:
        out.append(_pair(node, FLOPS, format_number) + " flops")
    return out


def _graph_node_line(
    node: ShowNode, sel: frozenset[str], model: ProfileModel, root_type: str
) -> str:
    info: list[str] = []
    nid = node.nid
    if "params" in sel:
        shape = model.shapes[nid] if nid >= 0 else None
        if shape:
            info.append(format_shape(shape))
    info += _count_fields(node, sel)
    info += _memory_fields(node, sel)
    info += _time_fields(node, sel)
    if "device" in sel and nid >= 0 and model.canonical_device[nid]:
        info.append(model.canonical_device[nid])
    if "op_types" in sel:
        types = sorted(model.op_types[nid]) if nid >= 0 else [root_type]
        info.append("|".join(types))
    if "occurrence" in sel:
        if node.account:
            info.append(
                f"{format_number(node.self_[RUN])}/{format_number(node.total[RUN])}"
                f"|1/{format_number(node.total[DEFINITION])}"
            )
        else:
            info.append(
                f"--/{format_number(node.total[RUN])}|--/{format_number(node.total[DEFINITION])}"
            )
    if "input_shapes" in sel:
        shapes = model.input_shapes(nid) if nid >= 0 else {}
        info.append("|".join(_input_shape(pos, dims) for pos, dims in shapes.items()))
    return f"{node.name} ({', '.join(info)})"


def _input_shape(pos: int, dims: list[int]) -> str:
    return f"{pos}:{format_shape(dims)}" if dims else f"{pos}:unknown"


def _code_node_line(node: ShowNode, sel: frozenset[str]) -> str:
    info = _memory_fields(node, sel) + _time_fields(node, sel) + _count_fields(node, sel)
    if "device" in sel and node.devices:
        info.append("|".join(sorted(node.devices)))
    if "op_types" in sel:
        info.append("|".join(sorted(node.op_types)))
    if "occurrence" in sel:
        info.append("occurrence N/A in code view")
    if "input_shapes" in sel:
        info.append("input_shapes N/A in code view")
    return f"{node.name} ({', '.join(info)})"


def _render_tree(result: ViewResult) -> str:
    table: TreeTable | None = getattr(result.root, "table", None)
    if table is not None:
        return _render_table(result, table)
    sel = frozenset(result.opts.select)
    code = result.view == "code"
    root_type = "_TFGraphParent" if result.view == "graph" else "_kTFScopeParent"
    parts = [_tree_legend(sel, code)]
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


# ---------------------------------------------------------------- table-backed trees
# The same lines as _graph_node_line (scope, graph) or _code_node_line (code) for
# all rows of a TreeTable at once. Each field is a few per-row text pieces; every distinct number
# is formatted once and per-node texts (shape, device, op types, input shapes)
# once per model version; the report is one join over the pieces, row by row.
ObjArray = npt.NDArray[np.object_]


@dataclass
class _Field:
    """One info field of every row: text pieces, and which rows have the field."""

    pieces: list[ObjArray]
    present: BoolArray | None = None  # None: every row


def _render_table(result: ViewResult, table: TreeTable) -> str:
    sel = frozenset(result.opts.select)
    code = result.view == "code"
    if code:
        fields = _code_fields(table, sel, result.model)
    else:
        root_type = "_TFGraphParent" if result.view == "graph" else "_kTFScopeParent"
        fields = _table_fields(table, sel, result.model, root_type)
    n = len(table)
    pads = np.array([" " * (2 * lv) for lv in range(int(table.level.max(initial=0)) + 1)])
    streams: list[Iterable[str]] = [pads[table.level].tolist(), table.names, repeat(" (", n)]
    before = np.zeros(n, dtype=bool)  # rows with a field written already
    for fld in fields:
        present = np.ones(n, dtype=bool) if fld.present is None else fld.present
        separated = before & present
        if separated.all():
            streams.append(repeat(", ", n))
        elif separated.any():
            streams.append(np.where(separated, ", ", "").tolist())
        streams += [piece.tolist() for piece in fld.pieces]
        before |= present
    streams.append(repeat(")\n", n))
    return _tree_legend(sel, code) + "".join(chain.from_iterable(zip(*streams)))


def _table_fields(
    table: TreeTable, sel: frozenset[str], model: ProfileModel, root_type: str
) -> list[_Field]:
    fields: list[_Field] = []
    if "params" in sel:
        fields.append(_per_node(table, model, "shape", None))
        fields.append(_pair_field(table, PARAMS, format_number, " params"))
    if "float_ops" in sel:
        fields.append(_pair_field(table, FLOPS, format_number, " flops"))
    fields += [_pair_field(table, stat, format_memory) for key, stat in _MEMORY_KEYS if key in sel]
    fields += [_pair_field(table, stat, format_time) for stat in _time_stats(sel)]
    if "device" in sel:
        fields.append(_per_node(table, model, "device", None))
    if "op_types" in sel:
        fields.append(_per_node(table, model, "op_types", root_type))
    if "occurrence" in sel:
        fields.append(_occurrence_field(table))
    if "input_shapes" in sel:
        fields.append(_per_node(table, model, "input_shapes", ""))
    return fields


def _code_fields(table: TreeTable, sel: frozenset[str], model: ProfileModel) -> list[_Field]:
    """The fields of _code_node_line; devices and op types come from each row's
    graph nodes."""
    n = len(table)
    fields = [_pair_field(table, stat, format_memory) for key, stat in _MEMORY_KEYS if key in sel]
    fields += [_pair_field(table, stat, format_time) for stat in _time_stats(sel)]
    if "params" in sel:
        fields.append(_pair_field(table, PARAMS, format_number, " params"))
    if "float_ops" in sel:
        fields.append(_pair_field(table, FLOPS, format_number, " flops"))
    if "device" in sel:  # rows with graph nodes (tfprof's non-empty device set)
        devices = _member_sets(table, lambda nid: (model.canonical_device[nid],))
        fields.append(_Field([np.array(devices, dtype=object)], _has_members(table)))
    if "op_types" in sel:
        fields.append(
            _Field([np.array(_member_sets(table, model.op_types.__getitem__), dtype=object)])
        )
    if "occurrence" in sel:
        fields.append(_Field([_const("occurrence N/A in code view", n)]))
    if "input_shapes" in sel:
        fields.append(_Field([_const("input_shapes N/A in code view", n)]))
    return fields


def _has_members(table: TreeTable) -> BoolArray:
    if table.members is None:
        return np.zeros(len(table), dtype=bool)
    present: BoolArray = np.diff(table.members.offsets) > 0
    return present


def _member_sets(table: TreeTable, values: Callable[[int], Iterable[str]]) -> list[str]:
    """For each row, ``|``-joined sorted union of ``values`` over its graph nodes."""
    members = table.members
    if members is None:
        return [""] * len(table)
    flat, offsets = members.flat.tolist(), members.offsets.tolist()
    out = []
    for row in range(len(table)):
        texts: set[str] = set()
        for nid in flat[offsets[row] : offsets[row + 1]]:
            texts.update(values(nid))
        out.append("|".join(sorted(texts)))
    return out


def _formatted(values: IntArray, fmt: Callable[[int], str]) -> ObjArray:
    """``fmt`` of every value, calling it once per distinct value."""
    distinct, where = np.unique(values, return_inverse=True)
    texts = np.array([fmt(v) for v in distinct.tolist()], dtype=object)
    out: ObjArray = texts[where.ravel()]
    return out


def _const(text: str, n: int) -> ObjArray:
    return np.full(n, text, dtype=object)


def _pair_field(table: TreeTable, stat: int, fmt: Callable[[int], str], unit: str = "") -> _Field:
    """``self/total``, or ``--/total`` for unaccounted rows, then ``unit``."""
    n = len(table)
    selfs = np.where(table.account, _formatted(table.self_[:, stat], fmt), "--")
    pieces = [selfs, _const("/", n), _formatted(table.total[:, stat], fmt)]
    return _Field(pieces + ([_const(unit, n)] if unit else []))


def _occurrence_field(table: TreeTable) -> _Field:
    """``run/total_run|1/definitions``, or ``--/total_run|--/definitions``."""
    n = len(table)
    runs = np.where(table.account, _formatted(table.self_[:, RUN], format_number), "--")
    middle = np.where(table.account, "|1/", "|--/")
    total_runs = _formatted(table.total[:, RUN], format_number)
    defs = _formatted(table.total[:, DEFINITION], format_number)
    return _Field([runs, _const("/", n), total_runs, middle, defs])


def _per_node(table: TreeTable, model: ProfileModel, kind: str, other: str | None) -> _Field:
    """A per-graph-node text for each row; ``other`` for rows of no graph node
    (None: such rows, like nodes without the text, leave the field out)."""
    texts = model.derived(("text", kind), lambda: _node_texts(model, kind))
    picked = np.array([*texts, other], dtype=object)[table.nid]  # nid -1 picks ``other``
    present = np.array([text is not None for text in picked.tolist()], dtype=bool)
    if present.all():
        return _Field([picked])
    return _Field([np.where(present, picked, "")], present)


def _node_texts(model: ProfileModel, kind: str) -> list[str | None]:
    if kind == "shape":
        return [format_shape(shape) if shape else None for shape in model.shapes]
    if kind == "device":
        return [device or None for device in model.canonical_device]
    if kind == "op_types":
        return ["|".join(sorted(types)) for types in model.op_types]
    return [
        "|".join(_input_shape(pos, dims) for pos, dims in model.input_shapes(nid).items())
        for nid in range(len(model))
    ]


# ---------------------------------------------------------------- op view
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


def _op_row(node: ShowNode, root: ShowNode, sel: frozenset[str], result: ViewResult) -> str:
    attrs: list[str] = []
    for key, stat in _MEMORY_KEYS:
        if key in sel:
            text = format_memory(node.self_[stat])
            attrs.append(_pct_field(text, node, root, stat, node.self_[stat]))
    for stat in _time_stats(sel):
        text = format_time(node.self_[stat])
        attrs.append(_pct_field(text, node, root, stat, node.total[stat]))
    for key, stat, unit in (("params", PARAMS, "params"), ("float_ops", FLOPS, "float_ops")):
        if key in sel:
            text = f"{format_number(node.self_[stat])} {unit}"
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


_MEMORY_KEYS = (
    ("bytes", REQUESTED),
    ("peak_bytes", PEAK),
    ("residual_bytes", RESIDUAL),
    ("output_bytes", OUTPUT),
)


def _time_stats(sel: frozenset[str]) -> tuple[int, ...]:
    if "micros" in sel:
        return (EXEC, ACC, CPU)
    pairs = (("accelerator_micros", ACC), ("cpu_micros", CPU))
    return tuple(stat for key, stat in pairs if key in sel)


def _op_input_shapes(node: ShowNode, result: ViewResult) -> str:
    """Per input signature: definitions, runs and time, most-run first."""
    model = result.model
    stats = model.stats(result.opts.step)
    groups: dict[str, list[int]] = {}
    for nid in node.graph_nodes:
        shapes = model.input_shapes(nid)
        sig = "input_type: " + ",\t".join(_input_shape(p, d) for p, d in shapes.items())
        acc = groups.setdefault(sig, [0, 0, 0])
        acc[0] += 1
        acc[1] += int(stats.run_count[nid])
        acc[2] += int(stats.exec_micros[nid])
    ordered = sorted(sorted(groups.items()), key=lambda kv: -kv[1][1])
    return "\n".join(
        f"{sig}\t(run*{runs}|defined*{count})\texec_time: {format_time(micros)}"
        for sig, (count, runs, micros) in ordered
    )


def _render_op(result: ViewResult) -> str:
    sel = frozenset(result.opts.select)
    root = result.root
    if not result.has_entries:
        return _op_row(root, root, sel, result)
    rows = [_op_legend(sel)]
    rows += [_op_row(node, root, sel, result) for node in result.rows]
    return "".join(rows)


def _op_legend(sel: frozenset[str]) -> str:
    legends = _pick(
        sel,
        ("bytes", "requested bytes"),
        ("peak_bytes", "peak bytes"),
        ("residual_bytes", "residual bytes"),
        ("output_bytes", "output bytes"),
    )
    legends += _time_legends(sel)
    legends += _pick(
        sel,
        ("params", "# parameters"),
        ("float_ops", "# float_ops"),
        ("device", "assigned devices"),
        ("op_types", "op types"),
        ("occurrence", "op occurrence (run|defined)"),
        ("input_shapes", "input shapes"),
    )
    return "node name | " + " | ".join(legends) + "\n"
