"""The text report's lines of a tree laid out as a table, all rows at once.

Contract of :func:`render_table`: the same lines as
:mod:`tfprof_lite.outputs.text_tree` renders node by node (scope and graph lines,
or code lines), for every row of a :class:`~tfprof_lite.views.passes.TreeTable`.
Each field is a few per-row text pieces; every distinct number is formatted once
and the per-node texts (shape, device, op types, input shapes) once per model
version; the report is one join over the pieces, row by row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import chain, repeat

import numpy as np
import numpy.typing as npt

from tfprof_lite.base.metrics import DEFINITION, RUN, Metric
from tfprof_lite.base.units import format_number, format_shape
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.outputs.text_layout import Selection, input_shape
from tfprof_lite.views.passes import TreeTable
from tfprof_lite.views.result import ViewResult

__all__ = ["render_table"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
ObjArray = npt.NDArray[np.object_]


@dataclass
class _Field:
    """One info field of every row: text pieces, and which rows have the field."""

    pieces: list[ObjArray]
    present: BoolArray | None = None  # None: every row


def render_table(result: ViewResult, table: TreeTable, sel: Selection) -> str:
    """One line per row of ``table`` (without the legend), in row order."""
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
    return "".join(chain.from_iterable(zip(*streams)))


def _table_fields(
    table: TreeTable, sel: Selection, model: ProfileModel, root_type: str
) -> list[_Field]:
    fields: list[_Field] = []
    if "params" in sel:
        fields.append(_per_node(table, model, "shape", None))
    fields += [_pair_field(table, m) for m in (*sel.counts, *sel.memory, *sel.time)]
    if "device" in sel:
        fields.append(_per_node(table, model, "device", None))
    if "op_types" in sel:
        fields.append(_per_node(table, model, "op_types", root_type))
    if "occurrence" in sel:
        fields.append(_occurrence_field(table))
    if "input_shapes" in sel:
        fields.append(_per_node(table, model, "input_shapes", ""))
    return fields


def _code_fields(table: TreeTable, sel: Selection, model: ProfileModel) -> list[_Field]:
    """The fields of _code_node_line; devices and op types come from each row's
    graph nodes."""
    n = len(table)
    fields = [_pair_field(table, m) for m in (*sel.memory, *sel.time, *sel.counts)]
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


def _pair_field(table: TreeTable, metric: Metric) -> _Field:
    """``self/total``, or ``--/total`` for unaccounted rows, then the metric's suffix."""
    n = len(table)
    stat, fmt, unit = metric.stat, metric.format, f" {metric.suffix}" if metric.suffix else ""
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
        "|".join(input_shape(pos, dims) for pos, dims in model.input_shapes(nid).items())
        for nid in range(len(model))
    ]
