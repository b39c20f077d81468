"""Scope view (``profile_name_scope``, cmd ``scope``): nodes organised by name.

Every ``/``-separated prefix of a node name is a parent; prefixes that are not
graph nodes become placeholder parents (op type ``_kTFScopeParent``). Children
are kept in byte-wise name order. Options read: all of them (the query runs
vectorised in :mod:`tfprof_lite.views.table`).
"""

from __future__ import annotations

from itertools import repeat
from operator import itemgetter, methodcaller

import numpy as np
import numpy.typing as npt

from tfprof_lite._native import active
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.options.options import Options
from tfprof_lite.views.passes import Structure, preorder_structure
from tfprof_lite.views.result import ViewResult
from tfprof_lite.views.table import TableRoot, tree_table

__all__ = ["SCOPE_PARENT", "ScopeView"]

SCOPE_PARENT = "_kTFScopeParent"

IntArray = npt.NDArray[np.int64]

_HEAD = itemgetter(0)


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
            names = self.model.names
            if version[1] == len(names):
                self._structure = scope_structure(names, self.model.index)
            else:
                self._structure = scope_structure(names[: version[1]])
            self._version = version
        return self._structure

    def query(self, opts: Options) -> ViewResult:
        """Run one query; returns the displayed tree."""
        table = tree_table(self.structure(), self.model, opts, True, SCOPE_PARENT)
        return ViewResult(view=self.name, root=TableRoot(table), opts=opts, model=self.model)


def scope_structure(names: list[str], ids: dict[str, int] | None = None) -> Structure:
    """Graph nodes and placeholder prefixes, children in name order, in pre-order.

    Pre-order with children in name order is the order of the names with every
    ``/`` read as a character below all others (a node's descendants then sort
    right after it, before any sibling that merely extends its name). ``ids``
    maps each of ``names`` to its position (built when not given). The native
    builder (``_scopetree``) makes the same tree when it is available.
    """
    module = active("_scopetree")
    built = None if module is None else module.scope_tree(names)
    if built is not None:
        return _native_structure(*built)
    return scope_structure_pure(names, ids)


def _native_structure(order: list[str], nid: bytes, parent: bytes, end: bytes) -> Structure:
    parents = np.frombuffer(parent, dtype=np.int64).copy()
    return Structure(
        nid=np.frombuffer(nid, dtype=np.int64).copy(),
        names=order,
        parent=parents.tolist(),
        end=np.frombuffer(end, dtype=np.int64).copy(),
        _parents=parents,
    )


def scope_structure_pure(names: list[str], ids: dict[str, int] | None = None) -> Structure:
    """:func:`scope_structure` without the native builder."""
    if ids is None:
        ids = dict(zip(names, range(len(names))))
    every = names + _placeholders(names, ids)
    joined = "\n".join(every)
    if "\0" in joined or joined.count("\n") != len(every) - 1:
        # the separator trick needs a free lowest character, and the lines a free newline
        order = sorted(every, key=lambda name: name.split("/"))
        nids = [ids.get(name, -1) for name in order]
        depth = np.fromiter(map(str.count, order, repeat("/")), dtype=np.int64, count=len(order))
        return preorder_structure(nids, depth, order)
    keys = joined.replace("/", "\0").split("\n")
    keys.sort()
    text = "\n".join(keys).replace("\0", "/")
    order = text.split("\n")
    nids = list(map(ids.get, order, repeat(-1)))  # placeholders are not in ids
    return preorder_structure(nids, _line_depths(text), order)


def _line_depths(text: str) -> IntArray:
    """The number of ``/`` in each line of ``text`` (lines end at ``\\n``)."""
    data = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    slashes = np.flatnonzero(data == ord("/"))
    ends = np.append(np.flatnonzero(data == ord("\n")), len(data))
    depth: IntArray = np.diff(np.searchsorted(slashes, ends), prepend=0)
    return depth


def _placeholders(names: list[str], ids: dict[str, int]) -> list[str]:
    """The ``/``-prefixes of ``names`` that are not names themselves."""
    missing: set[str] = set()
    frontier = set(map(_HEAD, map(str.rpartition, names, repeat("/"))))
    while frontier:
        new = frontier.difference(ids).difference(missing)
        missing |= new
        frontier = set(map(_HEAD, map(str.rpartition, new, repeat("/"))))
    # rpartition gives "" for a name without "/" too: "" is a prefix only of a
    # name that starts with "/".
    joined = "\n" + "\n".join(names)
    if joined.count("\n") == len(names):  # no name holds a newline: search the join
        lead = "\n/" in joined
    else:
        lead = any(map(methodcaller("startswith", "/"), names))
    if not lead:
        missing.discard("")
    return list(missing)
