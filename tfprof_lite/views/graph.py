"""Graph view (``profile_graph``, cmd ``graph``): nodes organised by their inputs.

A node's children are its inputs (control inputs included) in input order; the
top level holds the nodes no other node consumes, in name order. Every node is
visited once per pass, so a node shared by several consumers is counted under
the first one reached (depth first). Unaccounted nodes are dropped and their
accounted inputs move up. Options read: all of them (the query runs vectorised in
:mod:`tfprof_lite.views.table`).
"""

from __future__ import annotations

import numpy as np

from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.options.options import Options
from tfprof_lite.views.inputs import input_table
from tfprof_lite.views.passes import Structure, make_structure
from tfprof_lite.views.result import ViewResult
from tfprof_lite.views.table import TableRoot, tree_table

__all__ = ["GRAPH_PARENT", "GraphView"]

GRAPH_PARENT = "_TFGraphParent"


class GraphView:
    """Builds the input tree (once per graph version) and answers queries on it."""

    name = "graph"

    def __init__(self, model: ProfileModel) -> None:
        self.model = model
        self._structure: Structure | None = None
        self._version = (-1, -1)

    def structure(self) -> Structure:
        """The depth-first visit-once tree of the current graph, in pre-order."""
        version = (self.model.graph_version, self.model.view_extent(self.name))
        if self._structure is None or self._version != version:
            self._structure = graph_structure(self.model, version[1])
            self._version = version
        return self._structure

    def query(self, opts: Options) -> ViewResult:
        """Run one query; returns the displayed tree."""
        table = tree_table(self.structure(), self.model, opts, False, GRAPH_PARENT)
        return ViewResult(view=self.name, root=TableRoot(table), opts=opts, model=self.model)


def graph_structure(model: ProfileModel, extent: int | None = None) -> Structure:
    """Depth-first from the unconsumed nodes (name order) through inputs, each node
    at its first visit; unreachable nodes (input cycles only) are left out. Only
    the first ``extent`` nodes (default: all) take part."""
    names = model.names
    extent = len(names) if extent is None else extent
    table = input_table(model)
    inner = int(table.offsets[extent])  # the inputs of the first ``extent`` nodes
    producer = table.producer[:inner]
    consumed = np.zeros(extent + 1, dtype=bool)
    consumed[np.where((producer >= 0) & (producer < extent), producer, extent)] = True
    roots = sorted(np.flatnonzero(~consumed[:extent]).tolist(), key=names.__getitem__)
    kept = (producer >= 0) & (producer < extent)  # inputs that are nodes of the view
    flat = producer[kept].tolist()
    starts = np.concatenate(([0], np.cumsum(kept)))[table.offsets[: extent + 1]].tolist()
    seen = bytearray(extent)
    nids: list[int] = []
    parents: list[int] = []
    stack = [(nid, -1) for nid in reversed(roots)]
    while stack:
        nid, parent = stack.pop()
        if seen[nid]:
            continue
        seen[nid] = 1
        index = len(nids)
        nids.append(nid)
        parents.append(parent)
        lo, hi = starts[nid], starts[nid + 1]
        if lo < hi:
            stack.extend((kid, index) for kid in reversed(flat[lo:hi]) if not seen[kid])

    def edges() -> list[list[int]]:  # inputs of reached nodes are reached
        position = dict(zip(nids, range(len(nids))))
        return [[position[kid] for kid in flat[starts[nid] : starts[nid + 1]]] for nid in nids]

    struct = make_structure(nids, parents, list(map(names.__getitem__, nids)))
    struct.edge_build = edges
    return struct
