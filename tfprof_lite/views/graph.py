"""Graph view (``profile_graph``, cmd ``graph``): nodes organised by their inputs.

A node's children are its inputs (control inputs included) in input order; the
top level holds the nodes no other node consumes, in name order. Every node is
visited once per pass, so a node shared by several consumers is counted under
the first one reached (depth first). Unaccounted nodes are dropped and their
accounted inputs move up. Options read: all of them (the query runs vectorised in
:mod:`tfprof_lite.views.table`).
"""

from __future__ import annotations

from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.options.options import Options
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


def _inputs(
    model: ProfileModel, order: list[int], extent: int
) -> tuple[list[list[int]], list[int]]:
    """Each node's producers in input order, and the nodes nothing consumes (among
    the first ``extent`` nodes)."""
    consumed: set[str] = set()
    kids: list[list[int]] = [[] for _ in range(extent)]
    index = model.index
    for nid, inputs in enumerate(model.inputs[:extent]):
        for pos in sorted(inputs):
            src = inputs[pos]
            consumed.add(src)
            producer = index.get(src)
            if producer is not None and producer < extent:
                kids[nid].append(producer)
    names = model.names
    return kids, [nid for nid in order if names[nid] not in consumed]


def graph_structure(model: ProfileModel, extent: int | None = None) -> Structure:
    """Depth-first from the unconsumed nodes (name order) through inputs, each node
    at its first visit; unreachable nodes (input cycles only) are left out. Only
    the first ``extent`` nodes (default: all) take part."""
    names = model.names
    extent = len(names) if extent is None else extent
    kids, roots = _inputs(model, sorted(range(extent), key=names.__getitem__), extent)
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
        below = kids[nid]
        if below:
            stack.extend((kid, index) for kid in reversed(below) if not seen[kid])
    position = {nid: i for i, nid in enumerate(nids)}  # inputs of reached nodes are reached
    edges = [[position[kid] for kid in kids[nid]] for nid in nids]
    return make_structure(nids, parents, [names[nid] for nid in nids], edges)
