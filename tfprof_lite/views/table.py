"""Vectorised scope and graph queries on the passes of :mod:`~tfprof_lite.views.passes`.

A query accounts (scope: ancestors of kept nodes are kept; graph: only accounted
nodes), searches the start nodes, decides which nodes are displayed (thresholds,
depth, trimming) and orders siblings (``order_by``), all on NumPy arrays over the
view's :class:`~tfprof_lite.views.passes.Structure`; ``account_displayed_op_only``
re-totals over displayed nodes. It returns a
:class:`~tfprof_lite.views.passes.TreeTable`: the displayed rows in report order,
root first. The outputs read the table directly; :class:`TableRoot` turns it into
the usual :class:`~tfprof_lite.views.node.ShowNode` tree only when something asks
for it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.options.options import Options
from tfprof_lite.options.regex import full_match_any
from tfprof_lite.views.node import ROOT_NAME, ShowNode, accounted_nodes, self_matrix
from tfprof_lite.views.passes import (
    Pass,
    Rows,
    Structure,
    TreeTable,
    account,
    covering,
    display_parents,
    display_sizes,
    kept_values,
    make_table,
    report_order,
    search_root,
    show_mask,
    subtree_sums,
)
from tfprof_lite.views.stats import DEFINITION, N_STATS, ORDER_BY_STAT

__all__ = ["TableRoot", "tree_table"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


# ---------------------------------------------------------------- the query
def _values(struct: Structure, model: ProfileModel, opts: Options, parent_type: str) -> Pass:
    """Self values and account flags of the structure's nodes (kept on the structure
    for the model version, step and account patterns; passes never write them)."""
    patterns = tuple(opts.account_type_regexes)
    key = (model.graph_version, model.data_version, max(opts.step, -1), patterns, parent_type)
    cached = struct.cache.get(key)
    if cached is None:
        struct.cache.clear()
        cached = struct.cache[key] = _node_values(struct, model, opts.step, patterns, parent_type)
    values, accounted = cached
    empty = np.zeros(0, dtype=np.int64)
    return Pass(values, accounted, accounted, empty, empty, accounted)


def _node_values(
    struct: Structure, model: ProfileModel, step: int, patterns: tuple[str, ...], parent_type: str
) -> tuple[IntArray, BoolArray]:
    mat = self_matrix(model, step)
    nid = struct.nid
    real = nid >= 0
    values = np.zeros((len(struct), N_STATS), dtype=np.int64)
    values[:, DEFINITION] = 1
    values[real] = mat[nid[real]]
    placeholder = list(patterns) == [".*"] or full_match_any(patterns, parent_type)
    accounted = np.full(len(struct), placeholder, dtype=bool)
    accounted[real] = accounted_nodes(model, patterns)[nid[real]]
    return values, accounted


def _displayed(struct: Structure, p: Pass, opts: Options) -> BoolArray:
    if opts.max_depth < 1 or full_match_any(opts.trim_name_regexes, ROOT_NAME):
        return np.zeros(len(struct), dtype=bool)  # the root is not expanded
    expand = p.depth <= opts.max_depth
    if opts.trim_name_regexes:
        expand &= ~struct.matching(tuple(opts.trim_name_regexes))
    blocked = covering(p.forest & ~expand, struct.end) > 0
    return p.forest & ~blocked & show_mask(struct, p, opts)


def _sibling_key(struct: Structure, shown: IntArray, totals: IntArray, order_by: str) -> IntArray:
    """tfprof's comparator as a sort key: stat descending, else name ascending."""
    if not order_by:
        return np.zeros(len(shown), dtype=np.int64)
    stat = ORDER_BY_STAT.get(order_by)
    if stat is not None:
        key: IntArray = ~totals[shown, stat]  # descending; unlike negation, no overflow
        return key
    return struct.rank[shown]


def _structure_parents(struct: Structure, shown: IntArray, disp: BoolArray) -> IntArray | None:
    """The structure parents of ``shown`` when they are its display parents (every
    displayed node's parent is displayed or the root), else None."""
    parents = struct.parents[shown]
    if bool(np.all((parents < 0) | disp[np.maximum(parents, 0)])):
        return parents
    return None


def tree_table(
    struct: Structure, model: ProfileModel, opts: Options, closed: bool, parent_type: str
) -> TreeTable:
    """Run one scope (``closed``) or graph query on ``struct``."""
    p = _values(struct, model, opts, parent_type)
    account(struct, p, closed)
    root_total = kept_values(p).sum(axis=0)
    if list(opts.start_name_regexes) != [".*"]:
        search_root(struct, p, tuple(opts.start_name_regexes))
    disp = _displayed(struct, p, opts)
    shown = np.flatnonzero(disp)
    level = covering(disp, struct.end)[shown] + 1
    totals = p.totals
    if opts.account_displayed_op_only:
        totals = subtree_sums(p.values * disp[:, None], struct.end)
        root_total = p.values[disp].sum(axis=0)
        root_total[DEFINITION] += 1
    sizes = display_sizes(struct, shown)
    parents = _structure_parents(struct, shown, disp)
    if parents is not None and (not opts.order_by or (closed and opts.order_by == "name")):
        # Displayed siblings are siblings in the structure, already in name order
        # (scope) or in pre-order (no order): the report is in pre-order.
        rows = Rows(shown, level, parents, sizes)
    else:
        if parents is None:
            parents = display_parents(shown, level, len(struct))
        key = _sibling_key(struct, shown, totals, opts.order_by)
        perm = report_order(struct, shown, parents, key, sizes)
        rows = Rows(shown[perm], level[perm], parents[perm], sizes[perm])
    root_self = np.zeros(N_STATS, dtype=np.int64)
    root_self[DEFINITION] = 1
    return make_table(struct, p, rows, totals, np.vstack((root_self, root_total)))


# ---------------------------------------------------------------- ShowNode view
_CHILDREN: Any = ShowNode.__dict__["children"]  # the slots behind ShowNode.children
_KIDS: Any = ShowNode.__dict__["kids"]


class TableRoot(ShowNode):
    """The root of a table-backed query.

    Its own values are set at once; the ``ShowNode`` tree below it (every node of
    the view after accounting: ``kids`` the view's structure, ``children`` the
    displayed tree) is built from :attr:`table` on first access to ``children``
    or ``kids``. The text and message outputs read the table and never build it.
    """

    __slots__ = ("_pending", "table")

    def __init__(self, table: TreeTable) -> None:
        self._pending = False  # ShowNode.__init__ sets children and kids
        super().__init__(ROOT_NAME, -1, table.self_[0].tolist())
        self.total = table.total[0].tolist()
        self.table = table
        self._pending = True

    def _build(self) -> None:
        if self._pending:
            self._pending = False
            src = self.table.source
            build = src.build if src is not None and src.build is not None else _build_nodes
            children, kids = build(self.table)
            _CHILDREN.__set__(self, children)
            _KIDS.__set__(self, kids)

    @property
    def children(self) -> list[ShowNode]:
        self._build()
        value: list[ShowNode] = _CHILDREN.__get__(self, ShowNode)
        return value

    @children.setter
    def children(self, value: list[ShowNode]) -> None:
        self._build()
        _CHILDREN.__set__(self, value)

    @property
    def kids(self) -> list[ShowNode]:
        self._build()
        value: list[ShowNode] = _KIDS.__get__(self, ShowNode)
        return value

    @kids.setter
    def kids(self, value: list[ShowNode]) -> None:
        self._build()
        _KIDS.__set__(self, value)


def _build_nodes(table: TreeTable) -> tuple[list[ShowNode], list[ShowNode]]:
    """The ShowNode tree of a query: the root's displayed children and its kids."""
    src = table.source
    if src is None:
        return [], []
    struct, p = src.struct, src.p
    nodes = _structure_nodes(struct, p)
    root_kids = [nodes[i] for i, parent in enumerate(struct.parent) if parent < 0]
    kept = np.flatnonzero(p.kept)
    levels = covering(p.kept, struct.end)[kept] + 1
    for i, parent in zip(kept.tolist(), display_parents(kept, levels, len(struct)).tolist()):
        if parent >= 0:  # accounting leaves kept descendants as children
            nodes[parent].children.append(nodes[i])
    return _displayed_nodes(table, src.rows.nodes.tolist(), nodes), root_kids


def _structure_nodes(struct: Structure, p: Pass) -> list[ShowNode]:
    """One ShowNode per structure node, as accounting leaves it (no children yet)."""
    values = p.values.tolist()
    accounted = p.accounted.tolist()
    kept = p.kept.tolist()
    totals = p.totals.tolist()
    nodes = []
    for i, (name, nid) in enumerate(zip(struct.names, struct.nid.tolist())):
        node = ShowNode(name, nid, values[i])
        node.account = accounted[i]
        if kept[i]:
            node.total = totals[i]
        nodes.append(node)
    edge_lists = struct.kid_edges()
    if edge_lists is None:
        for i, parent in enumerate(struct.parent):
            if parent >= 0:
                nodes[parent].kids.append(nodes[i])
    else:
        for node, edges in zip(nodes, edge_lists):
            node.kids = [nodes[k] for k in edges]
    return nodes


def _displayed_nodes(table: TreeTable, rows: list[int], nodes: list[ShowNode]) -> list[ShowNode]:
    """Give displayed nodes their report totals, indentation and displayed children."""
    shown = [nodes[i] for i in rows]
    for node, total, level in zip(shown, table.total[1:].tolist(), table.level[1:].tolist()):
        node.total = total
        node.indent = 2 * level
        node.children = []
    top: list[ShowNode] = []
    for node, parent in zip(shown, table.parent[1:].tolist()):
        (top if parent == 0 else shown[parent - 1].children).append(node)
    return top
