"""Scope view (``profile_name_scope``, cmd ``scope``): nodes organised by name.

Every ``/``-separated prefix of a node name is a parent; prefixes that are not
graph nodes become placeholder parents (op type ``_kTFScopeParent``). Children
are kept in byte-wise name order. Options read: all of them (the query runs
vectorised in :mod:`tfprof_lite.views.table`).
"""

from __future__ import annotations

from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.options.options import Options
from tfprof_lite.views.passes import Structure, make_structure
from tfprof_lite.views.result import ViewResult
from tfprof_lite.views.table import TableRoot, tree_table

__all__ = ["SCOPE_PARENT", "ScopeView"]

SCOPE_PARENT = "_kTFScopeParent"


class ScopeView:
    """Builds the scope tree (once per graph version) and answers queries on it."""

    name = "scope"

    def __init__(self, model: ProfileModel) -> None:
        self.model = model
        self._structure: Structure | None = None
        self._version = (-1, -1)

    def structure(self) -> Structure:
        """The scope tree of the current graph, in pre-order."""
        version = (self.model.graph_version, self.model.view_extent(self.name))
        if self._structure is None or self._version != version:
            self._structure = scope_structure(self.model.names[: version[1]])
            self._version = version
        return self._structure

    def query(self, opts: Options) -> ViewResult:
        """Run one query; returns the displayed tree."""
        table = tree_table(self.structure(), self.model, opts, True, SCOPE_PARENT)
        return ViewResult(view=self.name, root=TableRoot(table), opts=opts, model=self.model)


def scope_structure(names: list[str]) -> Structure:
    """Graph nodes and placeholder prefixes, children in name order, in pre-order."""
    ids = {name: nid for nid, name in enumerate(names)}
    for name in names:
        cut = name.rfind("/")
        while cut >= 0:
            prefix = name[:cut]
            if prefix in ids:
                break
            ids[prefix] = -1
            cut = prefix.rfind("/")
    top: list[str] = []
    kids: dict[str, list[str]] = {}
    for name in sorted(ids):
        cut = name.rfind("/")
        (top if cut < 0 else kids.setdefault(name[:cut], [])).append(name)
    order: list[str] = []
    parents: list[int] = []
    stack = [(name, -1) for name in reversed(top)]
    while stack:
        name, parent = stack.pop()
        index = len(order)
        order.append(name)
        parents.append(parent)
        below = kids.get(name)
        if below:
            stack.extend((kid, index) for kid in reversed(below))
    return make_structure([ids[name] for name in order], parents, order)
