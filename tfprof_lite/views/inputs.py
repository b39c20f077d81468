"""Every graph node's inputs as flat arrays, built once per graph version.

Contract: :func:`input_table` lists the inputs of all nodes in node order and,
within a node, by input position: the consuming node, the position, the
producer's node id (-1 when the input names no node) and the producer's name.
The graph view walks it and the returned messages read the input shapes from
it; both keep it across ``add_step`` (``ProfileModel.per_graph``). The native
encoder's ``input_edges`` reads the model's per-node dicts when it is built;
:func:`build_pure` reads them with C-level loops (``map`` and ``chain``) and
gives the same table.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain, repeat

import numpy as np
import numpy.typing as npt

from tfprof_lite._native import active
from tfprof_lite.model.profile import ProfileModel

__all__ = ["InputTable", "build_pure", "input_table"]

IntArray = npt.NDArray[np.int64]


@dataclass
class InputTable:
    """The inputs of every node; a node's inputs are ``offsets[i]:offsets[i + 1]``."""

    offsets: IntArray
    node: IntArray
    pos: IntArray
    producer: IntArray
    srcs: list[str]

    def __len__(self) -> int:
        return len(self.srcs)


def input_table(model: ProfileModel) -> InputTable:
    """The :class:`InputTable` of ``model``'s nodes (cached per graph version)."""
    table: InputTable = model.per_graph("input_table", lambda: _build(model))
    return table


def _build(model: ProfileModel) -> InputTable:
    module = active("_profileencode")
    if module is not None:
        got = module.input_edges(model.inputs, model.index)
        if got is not None:
            counts_raw, pos_raw, producer_raw, srcs = got
            counts = np.frombuffer(counts_raw, dtype=np.int64)
            offsets = np.zeros(len(counts) + 1, dtype=np.int64)
            np.cumsum(counts, out=offsets[1:])
            node = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
            pos = np.frombuffer(pos_raw, dtype=np.int64)
            producer = np.frombuffer(producer_raw, dtype=np.int64)
            return InputTable(offsets, node, pos, producer, srcs)
    return build_pure(model)


def build_pure(model: ProfileModel) -> InputTable:
    """The :class:`InputTable` built in Python (the path without the native encoder)."""
    inputs = model.inputs
    n = len(inputs)
    counts = np.fromiter(map(len, inputs), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    total = int(offsets[-1])
    node = np.repeat(np.arange(n, dtype=np.int64), counts)
    pos = np.fromiter(chain.from_iterable(inputs), dtype=np.int64, count=total)
    srcs: list[str] = list(chain.from_iterable(map(dict.values, inputs)))
    if total > 1 and not bool(np.all((np.diff(pos) > 0) | (np.diff(node) != 0))):
        order = np.lexsort((pos, node))  # by position within each node
        pos = pos[order]
        srcs = [srcs[i] for i in order.tolist()]
    producer = np.fromiter(map(model.index.get, srcs, repeat(-1)), dtype=np.int64, count=total)
    return InputTable(offsets, node, pos, producer, srcs)
