"""The array passes shared by the table-backed views (scope, graph and code).

A view's tree is built once per graph version as a :class:`Structure`: its nodes in
pre-order, so that a subtree is the index range ``[i, end[i])`` and "strict ancestor
of ``i``" means ``j < i < end[j]``. A query computes, for all nodes at once, over a
:class:`Pass` (the per-query arrays):

* :func:`account`: kept nodes and their totals (sums of kept self values over the
  subtree); ``closed`` keeps the ancestors of kept nodes too (scope, code);
* :func:`search_root` (``start_name_regexes``): the top-most matching kept nodes;
* :func:`show_mask`: tfprof's display thresholds and name filters per node;
* :func:`display_parents`, :func:`display_sizes` and :func:`report_order`: each
  displayed node's parent, subtree size and position in the report;

and :func:`make_table` returns the displayed rows as a :class:`TreeTable`, root
first. :mod:`~tfprof_lite.views.table` (scope, graph) and
:mod:`~tfprof_lite.views.code_table` (code) assemble a query from these passes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from tfprof_lite.options.options import Options
from tfprof_lite.options.regex import full_match_many
from tfprof_lite.views.node import ROOT_NAME, ShowNode
from tfprof_lite.views.stats import (
    ACC,
    CPU,
    EXEC,
    FLOPS,
    OUTPUT,
    PARAMS,
    PEAK,
    REQUESTED,
    RESIDUAL,
    RUN,
)

__all__ = [
    "Members",
    "Pass",
    "Rows",
    "Source",
    "Structure",
    "TreeTable",
    "account",
    "covering",
    "kept_values",
    "display_parents",
    "display_sizes",
    "make_structure",
    "make_table",
    "preorder_structure",
    "report_order",
    "search_root",
    "show_mask",
    "spread",
    "subtree_sums",
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
        edges: each node's ``kids`` as node indices when they are not its
            children in the tree (the graph view's inputs); None otherwise (see
            :meth:`kid_edges`: ``edge_build`` makes them on first use).
        members: the graph nodes of each entry (code view; name order).
        frames: the call-stack frame of each entry (code view).
    """

    nid: IntArray
    names: list[str]
    parent: list[int]
    end: IntArray
    edges: list[list[int]] | None = None
    members: Members | None = None
    frames: list[Any] | None = None
    _matches: dict[tuple[str, ...], BoolArray] = field(default_factory=dict, repr=False)
    _rank: IntArray | None = field(default=None, repr=False)
    _parents: IntArray | None = field(default=None, repr=False)
    edge_build: Callable[[], list[list[int]]] | None = field(default=None, repr=False)
    cache: dict[Any, Any] = field(default_factory=dict, repr=False)  # per-query inputs

    def kid_edges(self) -> list[list[int]] | None:
        """:attr:`edges`, made by ``edge_build`` on first use."""
        if self.edges is None and self.edge_build is not None:
            self.edges = self.edge_build()
            self.edge_build = None
        return self.edges

    def __len__(self) -> int:
        return len(self.names)

    @property
    def rank(self) -> IntArray:
        """Position of each name in name order (``order_by name``), built on first use."""
        if self._rank is None:
            n = len(self.names)
            self._rank = np.empty(n, dtype=np.int64)
            self._rank[sorted(range(n), key=self.names.__getitem__)] = np.arange(n)
        return self._rank

    @property
    def parents(self) -> IntArray:
        """:attr:`parent` as an array."""
        if self._parents is None:
            self._parents = np.asarray(self.parent, dtype=np.int64)
        return self._parents

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
    return Structure(
        nid=np.asarray(nids, dtype=np.int64),
        names=names,
        parent=parents,
        end=np.arange(n, dtype=np.int64) + np.asarray(size, dtype=np.int64),
        edges=edges,
    )


def preorder_structure(nids: list[int], depth: IntArray, names: list[str]) -> Structure:
    """A structure from pre-order node ids and depths (0: top level).

    A node's parent is the last node one level up before it; subtree sizes are
    summed into parents level by level, deepest first.
    """
    n = len(nids)
    index = np.arange(n, dtype=np.int64)
    parent = display_parents(index, depth + 1, n)
    size = np.ones(n, dtype=np.int64)
    by_depth = np.argsort(depth, kind="stable")
    cuts = np.flatnonzero(np.diff(depth[by_depth])) + 1
    for level in reversed(np.split(by_depth, cuts)[1:] if n else []):
        np.add.at(size, parent[level], size[level])
    return Structure(
        nid=np.asarray(nids, dtype=np.int64),
        names=names,
        parent=parent.tolist(),
        end=index + size,
        _parents=parent,
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
    source: Source | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.names)


# ---------------------------------------------------------------- range helpers
def covering(mask: BoolArray, end: IntArray) -> IntArray:
    """For each node, the number of strict ancestors where ``mask`` is set."""
    n = len(end)
    idx = np.flatnonzero(mask)
    diff = np.bincount(idx + 1, minlength=n + 1) - np.bincount(end[idx], minlength=n + 1)
    return np.cumsum(diff[:n])


def subtree_sums(values: IntArray, end: IntArray) -> IntArray:
    """Row sums of ``values`` over each node's subtree (itself included)."""
    acc = np.zeros((len(end) + 1, *values.shape[1:]), dtype=np.int64)
    np.cumsum(values, axis=0, out=acc[1:])
    return acc[end] - acc[:-1]


def spread(nodes: IntArray, weights: IntArray, end: IntArray) -> IntArray:
    """For each node, the sum of ``weights`` of the ``nodes`` whose subtree holds it."""
    n = len(end)
    diff = np.bincount(nodes, weights, minlength=n + 1) - np.bincount(
        end[nodes], weights, minlength=n + 1
    )
    return np.rint(np.cumsum(diff[:n])).astype(np.int64)


# ---------------------------------------------------------------- the passes
@dataclass
class Pass:
    """Per-query arrays over the structure."""

    values: IntArray  # self values
    accounted: BoolArray
    kept: BoolArray
    totals: IntArray  # accounting totals
    depth: IntArray  # display depth (root 1)
    forest: BoolArray  # kept nodes under the (searched) root


def account(struct: Structure, p: Pass, closed: bool) -> None:
    """Scope (``closed``: ancestors of kept nodes are kept) or graph accounting."""
    end = struct.end
    if closed:
        count = np.concatenate(([0], np.cumsum(p.accounted)))
        p.kept = (count[end] - count[:-1]) > 0
    p.totals = subtree_sums(kept_values(p), end)
    p.depth = covering(p.kept, end) + 2
    p.forest = p.kept


def kept_values(p: Pass) -> IntArray:
    """The self values of kept nodes, zero elsewhere."""
    if bool(p.kept.all()):
        return p.values
    kept: IntArray = p.values * p.kept[:, None]
    return kept


def search_root(struct: Structure, p: Pass, patterns: tuple[str, ...]) -> None:
    """Keep only the subtrees of the top-most kept nodes matching ``patterns``."""
    end = struct.end
    hit = p.kept & struct.matching(patterns)
    above = covering(hit, end)
    found = np.flatnonzero(hit & (above == 0))
    p.forest = p.kept & ((above > 0) | (hit & (above == 0)))
    p.depth = p.depth - spread(found, p.depth[found] - 2, end)


def show_mask(struct: Structure, p: Pass, opts: Options, code: bool = False) -> BoolArray:
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


def display_parents(shown: IntArray, level: IntArray, n: int) -> IntArray:
    """Nearest displayed strict ancestor of each displayed node (-1: the root).

    In pre-order, it is the last displayed node one level up before the node.
    """
    key = level * (n + 1) + shown
    order = np.argsort(key, kind="stable")
    at = np.searchsorted(key[order], (level - 1) * (n + 1) + shown) - 1
    parents = shown[order[np.maximum(at, 0)]]
    return np.where(level > 1, parents, -1)


def display_sizes(struct: Structure, shown: IntArray) -> IntArray:
    """Number of displayed nodes in each displayed node's subtree (itself included)."""
    counted = np.zeros(len(struct) + 1, dtype=np.int64)
    counted[shown + 1] = 1
    counted = np.cumsum(counted)
    return counted[struct.end[shown]] - counted[shown]


def report_order(
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
    position = spread(shown, weights, struct.end)[shown]
    return np.argsort(position, kind="stable")


@dataclass
class Rows:
    """Displayed structure nodes in report order, their levels and display parents."""

    nodes: IntArray
    level: IntArray
    parents: IntArray  # structure index, -1 for the root
    sizes: IntArray


@dataclass
class Source:
    """A query's arrays over its structure: what rebuilding its ShowNodes needs."""

    struct: Structure
    p: Pass
    rows: Rows
    build: Callable[[TreeTable], tuple[list[ShowNode], list[ShowNode]]] | None = None


def make_table(
    struct: Structure, p: Pass, rows: Rows, totals: IntArray, root: IntArray
) -> TreeTable:
    """The table of ``rows``; ``root`` holds the root's self and total values."""
    nodes = rows.nodes
    count = len(nodes)
    row_of = np.zeros(len(struct) + 1, dtype=np.int64)  # structure index + 1 -> row
    row_of[nodes + 1] = np.arange(1, count + 1)
    names = struct.names
    every = count == len(names) and bool(np.all(nodes[1:] > nodes[:-1]))  # all, in order
    return TreeTable(
        nid=np.concatenate(([-1], struct.nid[nodes])),
        names=[ROOT_NAME, *(names if every else map(names.__getitem__, nodes.tolist()))],
        level=np.concatenate(([0], rows.level)),
        parent=np.concatenate(([-1], row_of[rows.parents + 1])),
        size=np.concatenate(([count + 1], rows.sizes)),
        account=np.concatenate(([False], p.accounted[nodes])),
        self_=np.vstack((root[0], p.values[nodes])),
        total=np.vstack((root[1], totals[nodes])),
        source=Source(struct, p, rows),
    )
