"""The message a view query returns: GraphNodeProto or MultiGraphNodeProto.

Field for field what tfprof returns: the displayed tree (scope, graph, code) or
the displayed rows chained through ``children[0]`` (op view), each node with its
self values and totals; op and code entries list their graph nodes.

The message is written in wire format and parsed once (setting fields one by one
from Python costs more than everything else in a query): stat fields are encoded
for all nodes at once with NumPy, each graph node's name, device and input shapes
once per model version, and a tree is laid out in pre-order with its nested
lengths computed from subtree sizes (by the native encoder's ``frame_tree``
when it is built, else with NumPy here; both give the same bytes). Trees deeper
than the parser's nesting limit are parsed in slices.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import add
from typing import Any

import numpy as np
import numpy.typing as npt

from tfprof_lite._native import active
from tfprof_lite.base.metrics import METRICS
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.outputs.message_nodes import (
    TotalsCache,
    encode_fields,
    encode_sized,
    framings,
    node_heads,
    string_fields,
    varint_lengths,
)
from tfprof_lite.outputs.text_table import interleave
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto.wire import str_field, varint
from tfprof_lite.views.node import ShowNode, self_matrix
from tfprof_lite.views.passes import TreeTable
from tfprof_lite.views.result import ViewResult
from tfprof_lite.views.stats import N_STATS

__all__ = ["empty_message", "encode_fields", "view_message"]

IntArray = npt.NDArray[np.int64]


def _stat_fields(message: Any, prefix: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The statistics ``message`` holds as ``prefix + name`` fields (metric table
    order) and their field numbers."""
    by_name = message.DESCRIPTOR.fields_by_name
    names = [(m.stat, prefix + m.name) for m in METRICS]
    found = [(stat, by_name[name].number) for stat, name in names if name in by_name]
    return tuple(stat for stat, _ in found), tuple(number for _, number in found)


# Statistic columns and their field numbers: self values, then totals.
_GRAPH_SELF_COLS, _GRAPH_SELF = _stat_fields(pb.GraphNodeProto, "")
_GRAPH_TOTAL_COLS, _GRAPH_TOTAL = _stat_fields(pb.GraphNodeProto, "total_")
_MULTI_SELF_COLS, _MULTI_SELF = _stat_fields(pb.MultiGraphNodeProto, "")
_MULTI_TOTAL_COLS, _MULTI_TOTAL = _stat_fields(pb.MultiGraphNodeProto, "total_")

_GRAPH_CHILD = b"\x62"  # GraphNodeProto.children (12)
_MULTI_CHILD = b"\x5a"  # MultiGraphNodeProto.children (11)
_MULTI_GRAPH_NODE = b"\x52"  # MultiGraphNodeProto.graph_nodes (10)
_MAX_NESTING = 64  # levels parsed in one go (upb refuses more than 100)


def empty_message(view: str) -> Any:
    """The empty message tfprof returns when a query cannot run."""
    return pb.MultiGraphNodeProto() if view in ("op", "code") else pb.GraphNodeProto()


def view_message(result: ViewResult) -> Any:
    """Build the returned message of a finished query."""
    if result.empty:
        message = empty_message(result.view)
        if result.root_only:
            message.name = result.root.name
        return message
    if result.view in ("scope", "graph"):
        table: TreeTable | None = getattr(result.root, "table", None)
        if table is not None:
            return _table_message(result.model, result.view, result.opts.step, table)
        return _tree_message(result)
    if result.view == "op":
        return _op_message(result)
    return _code_message(result)


def _graph_self(self_: IntArray) -> list[bytes]:
    """GraphNodeProto self-value fields of each row of a stat matrix."""
    return encode_fields(self_[:, _GRAPH_SELF_COLS], _GRAPH_SELF)


def _graph_total(total: IntArray) -> list[bytes]:
    """GraphNodeProto ``total_*`` fields of each row of a stat matrix."""
    return encode_fields(total[:, _GRAPH_TOTAL_COLS], _GRAPH_TOTAL)


def _multi_stats(self_: IntArray, total: IntArray) -> list[bytes]:
    values = np.hstack((self_[:, _MULTI_SELF_COLS], total[:, _MULTI_TOTAL_COLS]))
    return encode_fields(values, _MULTI_SELF + _MULTI_TOTAL)


# ---------------------------------------------------------------- graph nodes
class _NodeFields:
    """Encoded fields of every graph node for one step (cached per model version).

    ``own``: name, device, input shapes and self values (``picks``: the same as an
    object array with a trailing None, ``own_len``: their lengths with a trailing
    0, for gathering rows by node id, -1 picking the extras); ``framed``: the node
    as an op/code view ``graph_nodes`` entry (with its totals equal to its self
    values).
    """

    def __init__(self, model: ProfileModel, step: int) -> None:
        self._mat = self_matrix(model, step)
        heads = node_heads(model)
        self.own, own_len = encode_sized(self._mat[:, _GRAPH_SELF_COLS], _GRAPH_SELF, heads)
        self.own_len = np.concatenate((own_len, [0]))
        self._picks: npt.NDArray[np.object_] | None = None
        self._framed: list[bytes] | None = None

    @property
    def picks(self) -> npt.NDArray[np.object_]:
        if self._picks is None:
            self._picks = np.array([*self.own, None], dtype=object)
        return self._picks

    @property
    def framed(self) -> list[bytes]:
        if self._framed is None:
            tails = _graph_total(self._mat)
            self._framed = [
                _MULTI_GRAPH_NODE + varint(len(h) + len(t)) + h + t for h, t in zip(self.own, tails)
            ]
        return self._framed


def _node_fields(model: ProfileModel, step: int) -> _NodeFields:
    key = step if step >= 0 else -1
    return model.derived(("message_node_fields", key), lambda: _NodeFields(model, key))


def _graph_rows(
    model: ProfileModel,
    step: int,
    nids: IntArray,
    names: list[str],
    self_: IntArray,
    total: IntArray,
    totals: TotalsCache | None = None,
) -> tuple[list[list[bytes]], IntArray]:
    """GraphNodeProto fields (children excluded) of tree rows, as two streams (the
    row's own fields, its totals) and the length of each row's fields.

    Rows of graph nodes reuse the node's cached fields; the totals of every row
    are encoded here (through ``totals``, which keeps the last rows it encoded).
    """
    fields = _node_fields(model, step)
    own = fields.picks[nids]  # nid -1 -> None
    own_len = fields.own_len[nids]
    other = np.flatnonzero(nids < 0)  # the root and scope placeholders
    if other.size:
        heads = _name_fields(model, [names[r] for r in other.tolist()])
        rows = self_[other]
        if bool((rows == rows[0]).all()):
            selfs = _graph_self(rows[:1]) * len(other)
        else:
            selfs = _graph_self(rows)
        placed = list(map(add, heads, selfs))
        own[other] = placed
        own_len[other] = np.fromiter(map(len, placed), dtype=np.int64, count=len(placed))
    if totals is not None:
        tails = totals.encode(total[:, _GRAPH_TOTAL_COLS])
        tail_len = totals.lengths
    else:
        tails, tail_len = encode_sized(total[:, _GRAPH_TOTAL_COLS], _GRAPH_TOTAL)
    lengths = own_len + tail_len
    return [own.tolist(), tails], lengths


# ---------------------------------------------------------------- trees
def _parse_tree(
    cls: Any,
    own: list[bytes] | tuple[list[list[bytes]], IntArray],
    level: IntArray,
    sizes: IntArray,
    parent: IntArray,
    tag: bytes,
) -> Any:
    """Parse a tree given in pre-order (row 0 the root) as nested ``children``.

    ``own[r]`` holds row r's fields except its children (or ``own`` is a pair:
    streams whose pieces of row r, in order, make those fields, and the length of
    each row's fields), ``sizes[r]`` the rows of its subtree (itself included),
    ``parent[r]`` its parent row.
    """
    if isinstance(own, tuple):
        streams, own_len = own
    else:
        streams = [own]
        own_len = np.fromiter(map(len, own), dtype=np.int64, count=len(own))
    deepest = int(level.max(initial=0))
    if deepest < _MAX_NESTING:
        framed_native = _frame_native(streams, parent, tag)
        if framed_native is not None:
            return cls.FromString(framed_native)
    content = _content_lengths(own_len, sizes)
    heads = framings(tag, content[1:])
    framed = interleave([[b"", *heads], *streams], len(own_len))
    data = b"".join(framed[1:])
    if deepest < _MAX_NESTING:
        return cls.FromString(data)
    head_len = np.array([0, *map(len, heads)], dtype=np.int64)
    start = np.cumsum(head_len + own_len) - own_len  # where each row's fields start
    return _parse_in_slices(cls, data, level, parent, start, own_len, content)


def _frame_native(streams: list[list[bytes]], parent: IntArray, tag: bytes) -> bytes | None:
    """The tree's message bytes by the native encoder; None without it (or when
    it declines), and :func:`_parse_tree` frames the rows itself."""
    module = active("_profileencode")
    if module is None:
        return None
    data: bytes | None = module.frame_tree(
        streams, np.ascontiguousarray(parent, dtype=np.int64).tobytes(), tag
    )
    return data


def _content_lengths(own_len: IntArray, sizes: IntArray) -> IntArray:
    """Encoded length of each row's message (fields plus framed descendants).

    A framed child costs its tag, a varint length and its content; the lengths
    depend on the contents, so iterate from the smallest varints until stable.
    """
    n = len(own_len)
    heads = np.full(n, 2, dtype=np.int64)
    heads[0] = 0
    while True:
        acc = np.concatenate(([0], np.cumsum(own_len + heads)))
        idx = np.arange(n)
        content: IntArray = acc[idx + sizes] - acc[idx] - heads
        new = 1 + varint_lengths(content.astype(np.uint64))
        new[0] = 0
        if np.array_equal(new, heads):
            return content
        heads = new


def _parse_in_slices(
    cls: Any,
    data: bytes,
    level: IntArray,
    parent: IntArray,
    start: IntArray,
    own_len: IntArray,
    content: IntArray,
) -> Any:
    """Rows above the cut are added one by one; subtrees below it are parsed whole."""
    cut = int(level.max()) - _MAX_NESTING + 1
    starts, ends = start.tolist(), (start + own_len).tolist()
    root = cls.FromString(data[starts[0] : ends[0]])
    msgs: dict[int, Any] = {0: root}
    levels, parents = level.tolist(), parent.tolist()
    stops = (start + content).tolist()
    for r in range(1, len(levels)):
        if levels[r] <= cut:
            msg = msgs[parents[r]].children.add()
            msg.MergeFromString(data[starts[r] : ends[r]])
            msgs[r] = msg
        elif levels[r] == cut + 1:
            msgs[parents[r]].children.add().MergeFromString(data[starts[r] : stops[r]])
    return root


def _name_fields(model: ProfileModel, names: list[str]) -> list[bytes]:
    """The ``name`` field of each of ``names`` (encoded once per graph version)."""
    known: dict[str, bytes] = model.per_graph("message_names", dict)
    new = [name for name in dict.fromkeys(names) if name not in known]
    known.update(zip(new, string_fields(1, new)))
    return list(map(known.__getitem__, names))


def _table_message(model: ProfileModel, view: str, step: int, table: TreeTable) -> Any:
    """GraphNodeProto of a table-backed scope or graph query."""
    totals = model.per_graph(("message_totals", view), lambda: TotalsCache(_GRAPH_TOTAL))
    own = _graph_rows(model, step, table.nid, table.names, table.self_, table.total, totals)
    return _parse_tree(pb.GraphNodeProto, own, table.level, table.size, table.parent, _GRAPH_CHILD)


def _preorder(root: ShowNode) -> tuple[list[ShowNode], IntArray, IntArray, IntArray]:
    """Displayed nodes in pre-order with levels, subtree sizes and parent rows."""
    nodes: list[ShowNode] = []
    levels: list[int] = []
    parents: list[int] = []
    stack: list[tuple[ShowNode, int, int]] = [(root, 0, -1)]
    while stack:
        node, lv, parent = stack.pop()
        row = len(nodes)
        nodes.append(node)
        levels.append(lv)
        parents.append(parent)
        stack.extend((kid, lv + 1, row) for kid in reversed(node.children))
    parent_arr = np.asarray(parents, dtype=np.int64)
    sizes = np.ones(len(nodes), dtype=np.int64)
    for r in range(len(nodes) - 1, 0, -1):
        sizes[parent_arr[r]] += sizes[r]
    return nodes, np.asarray(levels, dtype=np.int64), sizes, parent_arr


def _stat_matrix(rows: Sequence[list[int]]) -> IntArray:
    return np.asarray(rows, dtype=np.int64).reshape(len(rows), N_STATS)


def _tree_message(result: ViewResult) -> Any:
    """GraphNodeProto of a scope or graph query given as a ShowNode tree."""
    nodes, level, sizes, parent = _preorder(result.root)
    own = _graph_rows(
        result.model,
        result.opts.step,
        np.asarray([n.nid for n in nodes], dtype=np.int64),
        [n.name for n in nodes],
        _stat_matrix([n.self_ for n in nodes]),
        _stat_matrix([n.total for n in nodes]),
    )
    return _parse_tree(pb.GraphNodeProto, own, level, sizes, parent, _GRAPH_CHILD)


def _multi_own(nodes: Sequence[ShowNode], result: ViewResult) -> list[bytes]:
    """MultiGraphNodeProto fields of each op/code entry, children excluded."""
    framed = _node_fields(result.model, result.opts.step).framed
    stats = _multi_stats(
        _stat_matrix([n.self_ for n in nodes]), _stat_matrix([n.total for n in nodes])
    )
    return [
        b"".join([str_field(1, n.name), tail, *[framed[nid] for nid in n.graph_nodes]])
        for n, tail in zip(nodes, stats)
    ]


def _op_message(result: ViewResult) -> Any:
    """The op view's rows, chained through ``children[0]`` below the root."""
    own = _multi_own([result.root, *result.rows], result)
    root = pb.MultiGraphNodeProto.FromString(own[0])
    msg = root
    for fields in own[1:]:
        msg = msg.children.add()
        msg.MergeFromString(fields)
    return root


def _code_message(result: ViewResult) -> Any:
    table: TreeTable | None = getattr(result.root, "table", None)
    if table is not None and table.members is not None:
        own = _code_rows(result, table)
        level, sizes, parent = table.level, table.size, table.parent
    else:
        nodes, level, sizes, parent = _preorder(result.root)
        own = _multi_own(nodes, result)
    return _parse_tree(pb.MultiGraphNodeProto, own, level, sizes, parent, _MULTI_CHILD)


def _code_rows(result: ViewResult, table: TreeTable) -> list[bytes]:
    """MultiGraphNodeProto fields of each row of a code view table."""
    members = table.members
    assert members is not None
    framed = _node_fields(result.model, result.opts.step).framed
    nodes = np.array([*framed, b""], dtype=object)[members.flat].tolist()
    bounds = members.offsets.tolist()
    stats = _multi_stats(table.self_, table.total)
    heads = _name_fields(result.model, table.names)
    return [
        head + tail + b"".join(nodes[bounds[r] : bounds[r + 1]])
        for r, (head, tail) in enumerate(zip(heads, stats))
    ]
