"""Vectorised code view queries, on the passes of :mod:`tfprof_lite.views.passes`.

The call-stack tree is a :class:`~tfprof_lite.views.passes.Structure` whose entries
carry their graph nodes (``members``). A query sums the picked graph nodes of every
entry at once (tfprof's snapshot: a node counts once per account regex it matches),
then accounts (ancestors of kept entries are kept), searches the start entries and
decides the display (trimmed or too deep entries vanish with their subtrees;
``account_displayed_op_only`` is ignored; ``order_by occurrence`` is allowed).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.options.options import Options
from tfprof_lite.options.regex import full_match_any
from tfprof_lite.views.node import ROOT_NAME, ShowNode, self_matrix, type_matches
from tfprof_lite.views.passes import (
    Members,
    Pass,
    Rows,
    Structure,
    TreeTable,
    account,
    covering,
    display_parents,
    display_sizes,
    make_table,
    report_order,
    search_root,
    show_mask,
)
from tfprof_lite.views.stats import DEFINITION, N_STATS, ORDER_BY_STAT

__all__ = ["code_table"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def _segment_sums(values: npt.NDArray[np.int64], offsets: IntArray) -> IntArray:
    """Sums of ``values`` (rows) over each ``offsets`` segment."""
    acc = np.zeros((len(values) + 1, *values.shape[1:]), dtype=np.int64)
    np.cumsum(values, axis=0, out=acc[1:])
    out: IntArray = acc[offsets[1:]] - acc[offsets[:-1]]
    return out


def _picks(model: ProfileModel, opts: Options, flat: IntArray) -> IntArray:
    """How many times tfprof picks each member (once per account regex it matches)."""
    patterns = list(opts.account_type_regexes)
    if patterns == [".*"]:
        return np.ones(len(flat), dtype=np.int64)
    weight = np.zeros(len(flat), dtype=np.int64)
    for pattern in patterns:
        weight += type_matches(model, (pattern,))[flat]
    return weight


def _values(struct: Structure, model: ProfileModel, opts: Options) -> tuple[Pass, BoolArray]:
    """Each entry's self values and account flag, and which members are picked."""
    members = struct.members
    assert members is not None
    flat, offsets = members.flat, members.offsets
    weight = _picks(model, opts, flat)
    values = _segment_sums(self_matrix(model, opts.step)[flat] * weight[:, None], offsets)
    values[:, DEFINITION] = 0
    picked = _segment_sums(weight, offsets)
    accounted = (picked > 0) | (list(opts.account_type_regexes) == [".*"])
    empty = np.zeros(0, dtype=np.int64)
    return Pass(values, accounted, accounted, empty, empty, accounted), weight > 0


def _displayed(struct: Structure, p: Pass, opts: Options) -> BoolArray | None:
    """The code view's display: trimmed or too deep entries vanish with their
    subtrees (None: the root itself vanishes)."""
    if opts.max_depth < 1 or full_match_any(opts.trim_name_regexes, ROOT_NAME):
        return None
    gone = p.depth > opts.max_depth
    if opts.trim_name_regexes:
        gone |= struct.matching(tuple(opts.trim_name_regexes))
    gone |= covering(p.forest & gone, struct.end) > 0
    return p.forest & ~gone & show_mask(struct, p, opts, code=True)


def _sibling_key(
    struct: Structure, shown: IntArray, totals: IntArray, occurrence: IntArray, order_by: str
) -> IntArray:
    """multi_sorted as a sort key: occurrence or a stat descending, else name."""
    if not order_by:
        return np.zeros(len(shown), dtype=np.int64)
    if order_by == "occurrence":
        return -occurrence[shown]
    stat = ORDER_BY_STAT.get(order_by)
    if stat is not None:
        key: IntArray = -totals[shown, stat]
        return key
    return struct.rank[shown]


def _row_members(members: Members, picked: BoolArray, entries: IntArray) -> Members:
    """The picked members of ``entries`` (row 0, the root, has none)."""
    kept = np.concatenate(([0], np.cumsum(picked)))[members.offsets]
    flat = members.flat[picked]
    starts = kept[entries]
    lengths = kept[entries + 1] - starts
    offsets = np.concatenate(([0, 0], np.cumsum(lengths)))
    index = np.repeat(starts - offsets[1:-1], lengths) + np.arange(offsets[-1])
    return Members(flat[index], offsets)


def code_table(struct: Structure, model: ProfileModel, opts: Options) -> TreeTable:
    """Run one code view query on ``struct`` (entries with ``members``)."""
    members = struct.members
    assert members is not None
    p, picked = _values(struct, model, opts)
    account(struct, p, closed=True)
    root = np.zeros((2, N_STATS), dtype=np.int64)
    root[1] = (p.values * p.kept[:, None]).sum(axis=0)
    if list(opts.start_name_regexes) != [".*"]:
        search_root(struct, p, tuple(opts.start_name_regexes))
    disp = _displayed(struct, p, opts)
    shown_mask = np.zeros(len(struct), dtype=bool) if disp is None else disp
    shown = np.flatnonzero(shown_mask)
    level = covering(shown_mask, struct.end)[shown] + 1
    parents = display_parents(shown, level, len(struct))
    occurrence = _segment_sums(picked.astype(np.int64), members.offsets)
    key = _sibling_key(struct, shown, p.totals, occurrence, opts.order_by)
    sizes = display_sizes(struct, shown)
    perm = report_order(struct, shown, parents, key, sizes)
    rows = Rows(shown[perm], level[perm], parents[perm], sizes[perm])
    table = make_table(struct, p, rows, p.totals, root)
    table.members = _row_members(members, picked, rows.nodes)
    table.empty = disp is None
    if table.source is not None:
        table.source.build = _NodeBuilder(picked, model).build
    return table


class _NodeBuilder:
    """Rebuilds the code view's ShowNode tree as the per-node passes leave it."""

    def __init__(self, picked: BoolArray, model: ProfileModel) -> None:
        self.picked = picked
        self.model = model

    def build(self, table: TreeTable) -> tuple[list[ShowNode], list[ShowNode]]:
        src = table.source
        assert src is not None
        struct, p = src.struct, src.p
        nodes = self._entry_nodes(struct, p)
        top = [nodes[i] for i, parent in enumerate(struct.parent) if parent < 0]
        for i, parent in enumerate(struct.parent):
            if parent >= 0:
                nodes[parent].kids.append(nodes[i])
                if p.kept[i]:
                    nodes[parent].children.append(nodes[i])
        rows = src.rows.nodes.tolist()
        shown = [nodes[i] for i in rows]
        for node, level in zip(shown, table.level[1:].tolist()):
            node.indent = 2 * level
            node.children = []
        displayed: list[ShowNode] = []
        for node, parent in zip(shown, table.parent[1:].tolist()):
            (displayed if parent == 0 else shown[parent - 1].children).append(node)
        if table.empty:  # the root vanished: its children stay the accounted ones
            heads = p.forest & (covering(p.forest, struct.end) == 0)
            displayed = [nodes[i] for i in np.flatnonzero(heads).tolist()]
        return displayed, top

    def _entry_nodes(self, struct: Structure, p: Pass) -> list[ShowNode]:
        members = struct.members
        assert members is not None and struct.frames is not None
        model = self.model
        flat, offsets = members.flat.tolist(), members.offsets.tolist()
        picked = self.picked.tolist()
        values, totals = p.values.tolist(), p.totals.tolist()
        accounted, kept = p.accounted.tolist(), p.kept.tolist()
        nodes = []
        for i, name in enumerate(struct.names):
            node = ShowNode(name, -1, values[i])
            node.frame = struct.frames[i]
            lo, hi = offsets[i], offsets[i + 1]
            nids = [n for n, hit in zip(flat[lo:hi], picked[lo:hi]) if hit]
            node.graph_nodes = nids
            node.devices = {model.canonical_device[n] for n in nids}
            node.op_types = set().union(*[model.op_types[n] for n in nids])
            node.account = accounted[i]
            if kept[i]:
                node.total = totals[i]
            nodes.append(node)
        return nodes
