"""Aggregated entries (op and code views): one display node over many graph nodes."""

from __future__ import annotations

from tfprof_lite.views.node import QueryContext, ShowNode
from tfprof_lite.views.stats import DEFINITION

__all__ = ["fill_multi"]


def fill_multi(node: ShowNode, nids: list[int], ctx: QueryContext) -> None:
    """Snapshot ``nids`` (name order) into ``node`` and set its account flag.

    Self values are sums over the picked graph nodes; ``graph_nodes`` keeps each
    picked node once, in name order. An entry with nothing picked is accounted
    only when ``account_type_regexes`` is exactly ``['.*']``.
    """
    picked = ctx.picked(nids)
    model = ctx.model
    total = ctx.matrix[picked].sum(axis=0)
    total[DEFINITION] = 0
    node.self_ = total.tolist()
    devices = model.canonical_device
    node.devices.update({devices[nid] for nid in picked})
    types = model.op_types
    node.op_types.update(*[types[nid] for nid in picked])
    if ctx.account_all:  # picked == nids: unique and in name order already
        node.graph_nodes = list(picked)
    else:
        node.graph_nodes = sorted(set(picked), key=model.names.__getitem__)
    node.account = bool(picked) or ctx.account_all
