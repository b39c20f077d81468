"""Vectorised scope and graph queries: the passes of :mod:`~tfprof_lite.views.tree`
(which remains the per-node reference) run on NumPy arrays instead of a tree of
Python objects. :mod:`~tfprof_lite.views.code_table` runs the code view on the
same helpers.

A view's tree is built once per graph version as a :class:`Structure`: its nodes in
pre-order, so that a subtree is the index range ``[i, end[i])`` and "strict ancestor
of ``i``" means ``j < i < end[j]``. A query then computes, for all nodes at once:

* accounting (``account_kept`` / the graph view's ``_account``): kept nodes and
  their totals (sums of kept self values over the subtree);
* ``search_root`` (``start_name_regexes``): the top-most matching kept nodes;
* ``print_pass``: shown, expanded and reached nodes, each displayed node's parent,
  depth and indentation, ``account_displayed_op_only`` totals and the sibling
  order (``order_by``);

and returns a :class:`TreeTable`: the displayed rows in report order, root first.
The outputs read the table directly; :class:`TableRoot` turns it into the usual
:class:`~tfprof_lite.views.node.ShowNode` tree only when something asks for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.options.options import Options, full_match_any, full_match_many
from tfprof_lite.views.node import ROOT_NAME, ShowNode, accounted_nodes, self_matrix
from tfprof_lite.views.stats import (
    ACC,
    CPU,
    DEFINITION,
    EXEC,
    FLOPS,
    N_STATS,
    ORDER_BY_STAT,
    OUTPUT,
    PARAMS,
    PEAK,
    REQUESTED,
    RESIDUAL,
    RUN,
)

__all__ = [
    "Members",
    "Structure",
    "TableRoot",
    "TreeTable",
    "make_structure",
    "tree_table",
]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass
class Members:
    """Graph nodes per entry, packed: entry i holds ``flat[offsets[i]:offsets[i + 1]]``."""

    flat: IntArray
    offsets: IntArray


@dataclass
class Structure:
    """A view's tree in pre-order (top-level nodes have depth 0; the root is implicit).

    Attributes:
        nid: graph node id of each tree node, -1 for a placeholder (scope parent).
        names: display name of each tree node.
        end: one past the last index of each node's subtree.
        parent: index of each node's parent, -1 at the top level.
        rank: position of each name in name order (``order_by name``).
        edges: each node's ``kids`` as node indices when they are not its
            children in the tree (the graph view's inputs); None otherwise.
        members: the graph nodes of each entry (code view; name order).
        frames: the call-stack frame of each entry (code view).
    """

    nid: IntArray
    names: list[str]
    parent: list[int]
    end: IntArray
    rank: IntArray
    edges: list[list[int]] | None = None
    members: Members | None = None
    frames: list[Any] | None = None
    _matches: dict[tuple[str, ...], BoolArray] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.names)

    def matching(self, patterns: tuple[str, ...]) -> BoolArray:
        """Whether each name fully matches any of ``patterns`` (cached per pattern set)."""
        hit = self._matches.get(patterns)
        if hit is None:
            hit = np.asarray(full_match_many(patterns, self.names), dtype=bool)
            self._matches[patterns] = hit
        return hit


def make_structure(
    nids: list[int], parents: list[int], names: list[str], edges: list[list[int]] | None = None
) -> Structure:
    """A structure from pre-order node ids and parent indices (-1: top level)."""
    n = len(nids)
    size = [1] * n
    for i in range(n - 1, 0, -1):  # children come after their parent in pre-order
        p = parents[i]
        if p >= 0:
            size[p] += size[i]
    rank = np.empty(n, dtype=np.int64)
    rank[sorted(range(n), key=names.__getitem__)] = np.arange(n, dtype=np.int64)
    return Structure(
        nid=np.asarray(nids, dtype=np.int64),
        names=names,
        parent=parents,
        end=np.arange(n, dtype=np.int64) + np.asarray(size, dtype=np.int64),
        rank=rank,
        edges=edges,
    )


@dataclass
class TreeTable:
    """The displayed tree of one query, in report order; row 0 is the root.

    ``parent`` holds row indices (-1 for the root), ``size`` the number of rows of
    each displayed subtree (itself included), ``level`` the display depth (root 0;
    a row is indented by ``2 * level``). ``self_`` and ``total`` are
    ``rows x N_STATS`` stat matrices.
    """

    nid: IntArray
    names: list[str]
    level: IntArray
    parent: IntArray
    size: IntArray
    account: BoolArray
    self_: IntArray
    total: IntArray
    members: Members | None = None  # graph nodes of each row (code view)
    empty: bool = False  # nothing is displayed, not even the root (code view)
    source: _Source | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.names)


# ---------------------------------------------------------------- range helpers
def _covering(mask: BoolArray, end: IntArray) -> IntArray:
    """For each node, the number of strict ancestors where ``mask`` is set."""
    n = len(end)
    idx = np.flatnonzero(mask)
    diff = np.bincount(idx + 1, minlength=n + 1) - np.bincount(end[idx], minlength=n + 1)
    return np.cumsum(diff[:n])


def _subtree_sums(values: IntArray, end: IntArray) -> IntArray:
    """Row sums of ``values`` over each node's subtree (itself included)."""
    acc = np.zeros((len(end) + 1, *values.shape[1:]), dtype=np.int64)
    np.cumsum(values, axis=0, out=acc[1:])
    return acc[end] - acc[:-1]


def _spread(nodes: IntArray, weights: IntArray, end: IntArray) -> IntArray:
    """For each node, the sum of ``weights`` of the ``nodes`` whose subtree holds it."""
    n = len(end)
    diff = np.bincount(nodes, weights, minlength=n + 1) - np.bincount(
        end[nodes], weights, minlength=n + 1
    )
    return np.rint(np.cumsum(diff[:n])).astype(np.int64)


# ---------------------------------------------------------------- the query
@dataclass
class _Pass:
    """Per-query arrays over the structure."""

    values: IntArray  # self values
    accounted: BoolArray
    kept: BoolArray
    totals: IntArray  # account_kept totals
    depth: IntArray  # print_pass depth (root 1)
    forest: BoolArray  # kept nodes under the (searched) root


def _values(struct: Structure, model: ProfileModel, opts: Options, parent_type: str) -> _Pass:
    mat = self_matrix(model, opts.step)
    nid = struct.nid
    real = nid >= 0
    values = np.zeros((len(struct), N_STATS), dtype=np.int64)
    values[:, DEFINITION] = 1
    values[real] = mat[nid[real]]
    patterns = tuple(opts.account_type_regexes)
    placeholder = list(patterns) == [".*"] or full_match_any(patterns, parent_type)
    accounted = np.full(len(struct), placeholder, dtype=bool)
    accounted[real] = accounted_nodes(model, patterns)[nid[real]]
    empty = np.zeros(0, dtype=np.int64)
    return _Pass(values, accounted, accounted, empty, empty, accounted)


def _account(struct: Structure, p: _Pass, closed: bool) -> None:
    """Scope (``closed``: ancestors of kept nodes are kept) or graph accounting."""
    end = struct.end
    if closed:
        count = np.concatenate(([0], np.cumsum(p.accounted)))
        p.kept = (count[end] - count[:-1]) > 0
    p.totals = _subtree_sums(p.values * p.kept[:, None], end)
    p.depth = _covering(p.kept, end) + 2
    p.forest = p.kept


def _search_root(struct: Structure, p: _Pass, patterns: tuple[str, ...]) -> None:
    """Keep only the subtrees of the top-most kept nodes matching ``patterns``."""
    end = struct.end
    hit = p.kept & struct.matching(patterns)
    above = _covering(hit, end)
    found = np.flatnonzero(hit & (above == 0))
    p.forest = p.kept & ((above > 0) | (hit & (above == 0)))
    p.depth = p.depth - _spread(found, p.depth[found] - 2, end)


def _shown(struct: Structure, p: _Pass, opts: Options, code: bool = False) -> BoolArray:
    """tfprof's ShouldShow for every node: thresholds on totals; parameters and
    FLOPs on self values, and the run count, except in the ``code`` view."""
    t = p.totals
    s = t if code else p.values
    ok = (
        (t[:, REQUESTED] >= opts.min_bytes)
        & (t[:, PEAK] >= opts.min_peak_bytes)
        & (t[:, RESIDUAL] >= opts.min_residual_bytes)
        & (t[:, OUTPUT] >= opts.min_output_bytes)
        & (t[:, EXEC] >= opts.min_micros)
        & (t[:, ACC] >= opts.min_accelerator_micros)
        & (t[:, CPU] >= opts.min_cpu_micros)
        & (p.depth <= opts.max_depth)
        & (s[:, PARAMS] >= opts.min_params)
        & (s[:, FLOPS] >= opts.min_float_ops)
    )
    if not code:
        ok &= p.values[:, RUN] >= opts.min_occurrence
    if list(opts.show_name_regexes) != [".*"]:
        ok &= struct.matching(tuple(opts.show_name_regexes))
    if opts.hide_name_regexes:
        ok &= ~struct.matching(tuple(opts.hide_name_regexes))
    if ROOT_NAME in struct.names:  # ShouldShow always shows a node of that name
        ok |= np.asarray([name == ROOT_NAME for name in struct.names])
    return ok


def _displayed(struct: Structure, p: _Pass, opts: Options) -> BoolArray:
    if opts.max_depth < 1 or full_match_any(opts.trim_name_regexes, ROOT_NAME):
        return np.zeros(len(struct), dtype=bool)  # the root is not expanded
    expand = p.depth <= opts.max_depth
    if opts.trim_name_regexes:
        expand &= ~struct.matching(tuple(opts.trim_name_regexes))
    blocked = _covering(p.forest & ~expand, struct.end) > 0
    return p.forest & ~blocked & _shown(struct, p, opts)


def _display_parents(shown: IntArray, level: IntArray, n: int) -> IntArray:
    """Nearest displayed strict ancestor of each displayed node (-1: the root).

    In pre-order, it is the last displayed node one level up before the node.
    """
    key = level * (n + 1) + shown
    order = np.argsort(key, kind="stable")
    at = np.searchsorted(key[order], (level - 1) * (n + 1) + shown) - 1
    parents = shown[order[np.maximum(at, 0)]]
    return np.where(level > 1, parents, -1)


def _sibling_key(struct: Structure, shown: IntArray, totals: IntArray, order_by: str) -> IntArray:
    """tfprof's comparator as a sort key: stat descending, else name ascending."""
    if not order_by:
        return np.zeros(len(shown), dtype=np.int64)
    stat = ORDER_BY_STAT.get(order_by)
    if stat is not None:
        key: IntArray = ~totals[shown, stat]  # descending; unlike negation, no overflow
        return key
    return struct.rank[shown]


def _display_sizes(struct: Structure, shown: IntArray) -> IntArray:
    """Number of displayed nodes in each displayed node's subtree (itself included)."""
    counted = np.zeros(len(struct) + 1, dtype=np.int64)
    counted[shown + 1] = 1
    counted = np.cumsum(counted)
    return counted[struct.end[shown]] - counted[shown]


def _report_order(
    struct: Structure, shown: IntArray, parents: IntArray, key: IntArray, sizes: IntArray
) -> IntArray:
    """Permutation of ``shown`` into report order: depth-first, siblings by ``key``.

    A node's position is its parent's plus one plus the sizes of the siblings
    sorted before it, i.e. the sum of ``1 + before`` over its displayed ancestors.
    """
    order = np.lexsort((shown, key, parents))
    grouped, sorted_sizes = parents[order], sizes[order]
    csum = np.cumsum(sorted_sizes)
    first = np.ones(len(order), dtype=bool)
    first[1:] = grouped[1:] != grouped[:-1]
    base = np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))
    weights = np.empty(len(order), dtype=np.int64)
    weights[order] = csum - sorted_sizes - (csum[base] - sorted_sizes[base]) + 1
    position = _spread(shown, weights, struct.end)[shown]
    return np.argsort(position, kind="stable")


def tree_table(
    struct: Structure, model: ProfileModel, opts: Options, closed: bool, parent_type: str
) -> TreeTable:
    """Run one scope (``closed``) or graph query on ``struct``."""
    p = _values(struct, model, opts, parent_type)
    _account(struct, p, closed)
    root_total = (p.values * p.kept[:, None]).sum(axis=0)
    if list(opts.start_name_regexes) != [".*"]:
        _search_root(struct, p, tuple(opts.start_name_regexes))
    disp = _displayed(struct, p, opts)
    shown = np.flatnonzero(disp)
    level = _covering(disp, struct.end)[shown] + 1
    totals = p.totals
    if opts.account_displayed_op_only:
        totals = _subtree_sums(p.values * disp[:, None], struct.end)
        root_total = p.values[disp].sum(axis=0)
        root_total[DEFINITION] += 1
    parents = _display_parents(shown, level, len(struct))
    key = _sibling_key(struct, shown, totals, opts.order_by)
    sizes = _display_sizes(struct, shown)
    perm = _report_order(struct, shown, parents, key, sizes)
    rows = _Rows(shown[perm], level[perm], parents[perm], sizes[perm])
    root_self = np.zeros(N_STATS, dtype=np.int64)
    root_self[DEFINITION] = 1
    return _table(struct, p, rows, totals, np.vstack((root_self, root_total)))


@dataclass
class _Rows:
    """Displayed structure nodes in report order, their levels and display parents."""

    nodes: IntArray
    level: IntArray
    parents: IntArray  # structure index, -1 for the root
    sizes: IntArray


@dataclass
class _Source:
    """A query's arrays over its structure: what rebuilding its ShowNodes needs."""

    struct: Structure
    p: _Pass
    rows: _Rows
    build: Callable[[TreeTable], tuple[list[ShowNode], list[ShowNode]]] | None = None


def _table(struct: Structure, p: _Pass, rows: _Rows, totals: IntArray, root: IntArray) -> TreeTable:
    """The table of ``rows``; ``root`` holds the root's self and total values."""
    nodes = rows.nodes
    count = len(nodes)
    row_of = np.zeros(len(struct) + 1, dtype=np.int64)  # structure index + 1 -> row
    row_of[nodes + 1] = np.arange(1, count + 1)
    names = struct.names
    return TreeTable(
        nid=np.concatenate(([-1], struct.nid[nodes])),
        names=[ROOT_NAME, *[names[i] for i in nodes.tolist()]],
        level=np.concatenate(([0], rows.level)),
        parent=np.concatenate(([-1], row_of[rows.parents + 1])),
        size=np.concatenate(([count + 1], rows.sizes)),
        account=np.concatenate(([False], p.accounted[nodes])),
        self_=np.vstack((root[0], p.values[nodes])),
        total=np.vstack((root[1], totals[nodes])),
        source=_Source(struct, p, rows),
    )


# ---------------------------------------------------------------- ShowNode view
_CHILDREN: Any = ShowNode.__dict__["children"]  # the slots behind ShowNode.children
_KIDS: Any = ShowNode.__dict__["kids"]


class TableRoot(ShowNode):
    """The root of a table-backed query.

    Its own values are set at once; the ``ShowNode`` tree below it (every node of
    the view, as :mod:`~tfprof_lite.views.tree` leaves it: ``kids`` the view's
    structure, ``children`` the displayed tree) is built from :attr:`table` on
    first access to ``children`` or ``kids``. The text and message outputs read
    the table and never build it.
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
    levels = _covering(p.kept, struct.end)[kept] + 1
    for i, parent in zip(kept.tolist(), _display_parents(kept, levels, len(struct)).tolist()):
        if parent >= 0:  # accounting leaves kept descendants as children
            nodes[parent].children.append(nodes[i])
    return _displayed_nodes(table, src.rows.nodes.tolist(), nodes), root_kids


def _structure_nodes(struct: Structure, p: _Pass) -> list[ShowNode]:
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
    if struct.edges is None:
        for i, parent in enumerate(struct.parent):
            if parent >= 0:
                nodes[parent].kids.append(nodes[i])
    else:
        for node, edges in zip(nodes, struct.edges):
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
