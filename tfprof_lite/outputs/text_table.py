"""The text report's lines of a tree laid out as a table, all rows at once.

Contract of :func:`render_table`: the same lines as
:mod:`tfprof_lite.outputs.text_tree` renders node by node (scope and graph lines,
or code lines), for every row of a :class:`~tfprof_lite.views.passes.TreeTable`.
Each field is a few per-row text pieces; every distinct number is formatted once
and the per-node texts (shape, device, op types, input shapes) once per model
version; the report is one join over the pieces, row by row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from tfprof_lite.base.metrics import DEFINITION, RUN, Metric
from tfprof_lite.base.units import format_number, format_shape
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.outputs.text_layout import Selection, input_shape
from tfprof_lite.views.passes import TreeTable
from tfprof_lite.views.result import ViewResult

__all__ = ["interleave", "render_table"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
ObjArray = npt.NDArray[np.object_]


@dataclass
class _Field:
    """One info field of every row: text pieces, and which rows have the field.

    ``pieces(prefix, suffix)`` gives the per-row text streams with ``prefix`` and
    ``suffix`` folded into the first and last piece (constants every row writes
    around the field); ``present`` is None when every row has the field.
    """

    make: Callable[[str, str], list[Iterable[str]]]
    present: BoolArray | None = None  # None: every row

    def pieces(self, prefix: str = "", suffix: str = "") -> list[Iterable[str]]:
        return self.make(prefix, suffix)


def _fixed(streams: list[Iterable[str]], n: int) -> Callable[[str, str], list[Iterable[str]]]:
    """A field made of ready streams; prefix and suffix become streams of their own."""

    def make(prefix: str, suffix: str) -> list[Iterable[str]]:
        return ([[prefix] * n] if prefix else []) + streams + ([[suffix] * n] if suffix else [])

    return make


def render_table(result: ViewResult, table: TreeTable, sel: Selection) -> str:
    """One line per row of ``table`` (without the legend), in row order."""
    code = result.view == "code"
    if code:
        fields = _code_fields(table, sel, result.model)
    else:
        root_type = "_TFGraphParent" if result.view == "graph" else "_kTFScopeParent"
        fields = _table_fields(table, sel, result.model, root_type)
    n = len(table)
    levels = table.level.tolist()
    pads = [" " * (2 * lv) for lv in range(max(levels, default=0) + 1)]
    streams: list[Iterable[str]] = [map(pads.__getitem__, levels), table.names]
    opened = False  # " (" written
    before = np.zeros(n, dtype=bool)  # rows with a field written already
    for k, fld in enumerate(fields):
        last = k == len(fields) - 1
        if fld.present is None and (before.all() or not before.any()):
            prefix = (", " if before.all() and opened else "") if opened else " ("
            opened = True
            suffix = ")\n" if last else ""
            streams += fld.pieces(prefix, suffix)
            before[:] = True
            continue
        if not opened:
            streams.append([" ("] * n)
            opened = True
        present = np.ones(n, dtype=bool) if fld.present is None else fld.present
        separated = before & present
        if separated.all():
            streams.append([", "] * n)
        elif separated.any():
            streams.append(np.where(separated, ", ", "").tolist())
        streams += fld.pieces()
        before |= present
        if last:
            streams.append([")\n"] * n)
    if not fields:
        streams.append([" ()\n"] * n)
    return "".join(interleave(streams, n))


def interleave(streams: Sequence[Iterable[Any]], n: int) -> list[Any]:
    """Row 0 of every stream in order, then row 1 of each, and so on (``n`` rows);
    filled by extended-slice assignment, without a tuple per row."""
    out: list[Any] = [None] * (n * len(streams))
    for k, stream in enumerate(streams):
        out[k :: len(streams)] = stream if isinstance(stream, list) else list(stream)
    return out


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
        fields.append(_Field(_fixed([devices], n), _has_members(table)))
    if "op_types" in sel:
        fields.append(_Field(_fixed([_member_sets(table, model.op_types.__getitem__)], n)))
    if "occurrence" in sel:
        fields.append(_Field(_fixed([["occurrence N/A in code view"] * n], n)))
    if "input_shapes" in sel:
        fields.append(_Field(_fixed([["input_shapes N/A in code view"] * n], n)))
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


def _texts(values: IntArray, fmt: Callable[[int], str], prefix: str, suffix: str) -> list[str]:
    """``prefix + fmt(v) + suffix`` for every value, formatting each distinct one once."""
    listed = values.tolist()
    table = {v: prefix + fmt(v) + suffix for v in set(listed)}
    return list(map(table.__getitem__, listed))


def _selfs(table: TreeTable, stat: int, fmt: Callable[[int], str], prefix: str) -> list[str]:
    """The self value of every row, ``--`` for unaccounted rows, after ``prefix``."""
    texts = _texts(table.self_[:, stat], fmt, prefix, "")
    if not bool(table.account.all()):
        hidden = prefix + "--"
        for row in np.flatnonzero(~table.account).tolist():
            texts[row] = hidden
    return texts


def _pair_field(table: TreeTable, metric: Metric) -> _Field:
    """``self/total``, or ``--/total`` for unaccounted rows, then the metric's suffix."""
    stat, fmt, unit = metric.stat, metric.format, f" {metric.suffix}" if metric.suffix else ""

    def make(prefix: str, suffix: str) -> list[Iterable[str]]:
        selfs = _selfs(table, stat, fmt, prefix)
        return [selfs, _texts(table.total[:, stat], fmt, "/", unit + suffix)]

    return _Field(make)


def _occurrence_field(table: TreeTable) -> _Field:
    """``run/total_run|1/definitions``, or ``--/total_run|--/definitions``."""

    def make(prefix: str, suffix: str) -> list[Iterable[str]]:
        runs = _selfs(table, RUN, format_number, prefix)
        middle = np.where(table.account, "|1/", "|--/").tolist()
        total_runs = _texts(table.total[:, RUN], format_number, "/", "")
        defs = _texts(table.total[:, DEFINITION], format_number, "", suffix)
        return [runs, total_runs, middle, defs]

    return _Field(make)


def _per_node(table: TreeTable, model: ProfileModel, kind: str, other: str | None) -> _Field:
    """A per-graph-node text for each row; ``other`` for rows of no graph node
    (None: such rows, like nodes without the text, leave the field out)."""
    texts = model.derived(("text", kind), lambda: _node_texts(model, kind))
    picked = np.array([*texts, other], dtype=object)[table.nid].tolist()  # -1: ``other``
    present = np.array([text is not None for text in picked], dtype=bool)
    n = len(picked)
    if present.all():
        return _Field(_fixed([picked], n))
    return _Field(_fixed([[text or "" for text in picked]], n), present)


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
