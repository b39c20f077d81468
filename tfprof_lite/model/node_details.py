"""GraphDef node details decoded on first read.

The columns after a node's name and op (inputs, producer output indices,
attributes, ``shape``, output shapes, string attributes) are not needed to
build a model; the views and outputs that read them (the input shapes of the
returned messages, parameter counts, the advisor's checks, saved profiles)
decode them on their first read. A GraphDef the native decoder took is added
with names and ops only (:func:`tfprof_lite.proto.graphs.native_graph_names`
checks every field, so bad bytes still fail at construction): the detail lists
stop short of its nodes and :class:`PendingDetails` keeps its bytes until one of
the lists is first read, then decodes that list's group (:data:`GROUPS`: the
columns the views read, or the attributes) in one pass that builds only those
columns. Reads and writes go through :class:`DetailColumn`, so consumers see
plain, complete lists.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from tfprof_lite._native import active
from tfprof_lite.proto.graphs import DETAILS, GraphColumns

if TYPE_CHECKING:
    from tfprof_lite.model.profile import ProfileModel

__all__ = [
    "GROUPS",
    "DetailColumn",
    "OpTypesColumn",
    "PendingDetails",
    "graph_rows",
    "make_op_types",
    "op_type_sets",
]

_V = TypeVar("_V")


#: Detail columns decoded together: the first read of one decodes its group
#: (the views read the first four, for parameter counts and the input shapes of
#: the returned messages; the attributes are read by the advisor, the memory
#: analysis and saved profiles).
GROUPS = (("inputs", "src_output", "shapes", "output_shapes"), ("attrs", "str_attrs"))
_GROUP_OF = {name: group for group in GROUPS for name in group}


class PendingDetails:
    """Node ranges of a model whose detail columns (all or some) are not decoded yet."""

    def __init__(self) -> None:
        #: (first node id, rows the model kept or None for all, GraphDef bytes,
        #: the detail columns still pending for these nodes)
        self.segments: list[tuple[int, list[int] | None, bytes, frozenset[str]]] = []

    def __bool__(self) -> bool:
        return bool(self.segments)

    def add(self, base: int, keep: list[int] | None, raw: bytes) -> None:
        """Nodes ``base ..`` are the nodes ``keep`` (all when None) of GraphDef ``raw``."""
        self.segments.append((base, keep, raw, frozenset(DETAILS)))

    def waiting(self, name: str) -> bool:
        """Whether detail column ``name`` has nodes not decoded yet."""
        return any(name in segment[3] for segment in self.segments)

    def pad(self, model: ProfileModel, n: int) -> None:
        """Placeholders in ``model``'s detail lists up to node ``n`` (a list stops
        at the first node pending in it until then)."""
        if self.segments:
            for name in DETAILS:
                column = getattr(model, "_" + name)
                column.extend([None] * (n - len(column)))

    def decode(self, model: ProfileModel, name: str | None = None) -> None:
        """Decode the pending nodes' details of column ``name``'s group (every
        column when None) into ``model``'s detail lists (one thread at a time:
        readers in other threads wait for complete lists)."""
        columns = DETAILS if name is None else _GROUP_OF[name]
        with model.lazy_lock:
            if any(segment[3].intersection(columns) for segment in self.segments):
                self._decode(model, columns)

    def _decode(self, model: ProfileModel, columns: tuple[str, ...]) -> None:
        self.pad(model, len(model.names))
        left = []
        collecting = gc.isenabled()
        gc.disable()  # many small containers, none of them garbage
        try:
            for base, keep, raw, pending in self.segments:
                wanted = tuple(name for name in columns if name in pending)
                if wanted:
                    _fill(model, base, keep, GraphColumns(pending=raw).with_details(wanted), wanted)
                    pending = pending.difference(wanted)
                if pending:
                    left.append((base, keep, raw, pending))
            self.segments = left  # only now: readers that do not wait see these done
        finally:
            if collecting:
                gc.enable()


def _fill(
    model: ProfileModel,
    base: int,
    keep: list[int] | None,
    full: GraphColumns,
    columns: tuple[str, ...],
) -> None:
    """Columns ``columns`` of ``full`` (rows ``keep``) into ``model``'s lists from node ``base``."""
    for name in columns:
        values: list[Any] = getattr(full, name)
        if keep is not None:
            values = [values[i] for i in keep]
        getattr(model, "_" + name)[base : base + len(values)] = values


class DetailColumn(Generic[_V]):
    """A per-node detail list of :class:`ProfileModel`, decoded on first read
    (the list itself lives in the model's ``_<name>`` attribute)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name
        self._slot = "_" + name

    @overload
    def __get__(self, model: None, owner: type) -> DetailColumn[_V]: ...

    @overload
    def __get__(self, model: ProfileModel, owner: type) -> list[_V]: ...

    def __get__(self, model: ProfileModel | None, owner: type) -> Any:
        if model is None:
            return self
        pending = model.pending_details
        if pending and pending.waiting(self._name):
            pending.decode(model, self._name)
        return getattr(model, self._slot)

    def __set__(self, model: ProfileModel, value: list[_V]) -> None:
        pending = model.pending_details
        if pending and pending.waiting(self._name):
            pending.decode(model, self._name)
        setattr(model, self._slot, value)


def graph_rows(cols: GraphColumns, keep: list[int]) -> GraphColumns:
    """The rows ``keep`` of ``cols`` (names and ops only while details are pending)."""
    names = [cols.names[i] for i in keep]
    ops = [cols.ops[i] for i in keep]
    if cols.pending is not None:
        return GraphColumns(names, ops, pending=cols.pending)
    out = GraphColumns(names, ops)
    for name in DETAILS:
        setattr(out, name, [getattr(cols, name)[i] for i in keep])
    return out


class OpTypesColumn:
    """:attr:`ProfileModel.op_types`: per node ``{op}`` plus the types op logs and
    steps add. The sets of nodes added from GraphDef columns are made on first
    read, and the types op logs give such nodes wait in the model's
    ``pending_types`` (node id -> set) until then."""

    @overload
    def __get__(self, model: None, owner: type) -> OpTypesColumn: ...

    @overload
    def __get__(self, model: ProfileModel, owner: type) -> list[set[str]]: ...

    def __get__(self, model: ProfileModel | None, owner: type) -> Any:
        if model is None:
            return self
        return make_op_types(model)

    def __set__(self, model: ProfileModel, value: list[set[str]]) -> None:
        model.pending_types.clear()
        model._op_types = value


def make_op_types(model: ProfileModel) -> list[set[str]]:
    """``model``'s op type sets, those not made yet made now (with their pending types)."""
    sets: list[set[str]] = model._op_types
    if len(sets) < len(model.names):
        with model.lazy_lock:
            if len(sets) < len(model.names):
                sets.extend(op_type_sets(model.ops[len(sets) :]))
                for nid, types in model.pending_types.items():
                    sets[nid].update(types)
                model.pending_types.clear()
    return sets


def op_type_sets(ops: list[str]) -> list[set[str]]:
    """``{op}`` for each op; made by the native graph decoder when it is built,
    which keeps these sets out of the garbage collector's walks (they hold
    strings only)."""
    module = active("_graphdecode")
    if module is not None:
        sets: list[set[str]] = module.op_type_sets(ops)
        return sets
    return [{op} for op in ops]
