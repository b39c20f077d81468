"""The display node shared by every view, and the per-query context.

A :class:`ShowNode` is built fresh for each query: ``kids`` is the view's
structure (scope children, graph inputs, call-stack children), ``children`` the
displayed children once filters ran. ``self_`` and ``total`` are stat vectors
(see :mod:`tfprof_lite.views.stats`). Op and code view nodes aggregate several
graph nodes; they also carry ``graph_nodes``, ``devices`` and ``op_types``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.options.options import Options
from tfprof_lite.options.regex import full_match_many
from tfprof_lite.views.stats import N_STATS

__all__ = [
    "ROOT_NAME",
    "Frame",
    "QueryContext",
    "ShowNode",
    "accounted_nodes",
    "self_matrix",
    "type_matches",
]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

ROOT_NAME = "_TFProfRoot"


class Frame(NamedTuple):
    """The call-stack frame of a code-view node (function includes any suffix)."""

    file: str
    lineno: int
    function: str
    func_start_line: int


class ShowNode:
    """A node of a view's tree during one query."""

    __slots__ = (
        "account",
        "children",
        "devices",
        "frame",
        "graph_nodes",
        "indent",
        "kids",
        "name",
        "nid",
        "op_types",
        "self_",
        "total",
    )

    def __init__(self, name: str, nid: int, self_: list[int] | None = None) -> None:
        self.name = name
        self.nid = nid
        self.kids: list[ShowNode] = []
        self.children: list[ShowNode] = []
        self.account = False
        self.self_ = self_ if self_ is not None else [1] + [0] * (N_STATS - 1)
        self.total = [0] * N_STATS
        self.indent = 0
        self.graph_nodes: list[int] = []
        self.devices: set[str] = set()
        self.op_types: set[str] = set()
        self.frame: Frame | None = None

    @property
    def occurrence(self) -> int:
        """Number of graph nodes aggregated in this entry."""
        return len(self.graph_nodes)

    def reset_to_self(self) -> None:
        """Total := self (tfprof's ResetTotalStats + AddSelfToTotalStats)."""
        self.total = list(self.self_)


class QueryContext:
    """Options plus the model's per-node values for the query step."""

    def __init__(self, model: ProfileModel, opts: Options) -> None:
        self.model = model
        self.opts = opts
        self.account_all = list(opts.account_type_regexes) == [".*"]
        self._cols: list[list[int]] | None = None

    @property
    def matrix(self) -> IntArray:
        """``nodes x N_STATS`` self values of every graph node (definition count 1)."""
        return self_matrix(self.model, self.opts.step)

    def node_self(self, nid: int) -> list[int]:
        """Self stat vector of graph node ``nid`` (definition count 1)."""
        if self._cols is None:
            self._cols = self.matrix.T.tolist()
        return [col[nid] for col in self._cols]

    def accounted(self, nid: int) -> bool:
        """Whether graph node ``nid`` matches ``account_type_regexes``."""
        return self.account_all or bool(
            accounted_nodes(self.model, tuple(self.opts.account_type_regexes))[nid]
        )

    def picked(self, nids: list[int]) -> list[int]:
        """tfprof's snapshot pick for op/code entries (``nids`` in name order).

        With several account regexes a node is listed once per regex it matches,
        which makes tfprof count it several times; this keeps that behaviour.
        """
        patterns = list(self.opts.account_type_regexes)
        if patterns == [".*"]:
            return list(nids)
        out: list[int] = []
        for pattern in patterns:
            hit = type_matches(self.model, (pattern,))
            out.extend(nid for nid in nids if hit[nid])
        return out


def self_matrix(model: ProfileModel, step: int) -> IntArray:
    """``nodes x N_STATS`` self values for ``step`` (definition count 1), cached."""
    key = step if step >= 0 else -1

    def build() -> IntArray:
        st = model.stats(key)
        cols = [
            np.ones(len(model), dtype=np.int64),
            st.run_count,
            st.exec_micros,
            st.accelerator_exec_micros,
            st.cpu_exec_micros,
            st.requested_bytes,
            st.peak_bytes,
            st.residual_bytes,
            st.output_bytes,
            st.parameters,
            st.float_ops,
        ]
        return np.column_stack(cols).astype(np.int64, copy=False)

    return model.derived(("self_matrix", key), build)


def accounted_nodes(model: ProfileModel, patterns: tuple[str, ...]) -> BoolArray:
    """Whether each graph node is accounted: everything for ``['.*']``, else
    :func:`type_matches`."""
    if list(patterns) == [".*"]:
        return np.ones(len(model), dtype=bool)
    return type_matches(model, patterns)


def type_matches(model: ProfileModel, patterns: tuple[str, ...]) -> BoolArray:
    """Whether any op type of each graph node fully matches any of ``patterns``."""
    n = len(model)

    def build() -> BoolArray:
        types = model.op_types
        unique = sorted(set().union(*types)) if types else []
        hit = dict(zip(unique, full_match_many(patterns, unique)))
        return np.fromiter((any(hit[t] for t in types[nid]) for nid in range(n)), bool, n)

    return model.derived(("type_matches", tuple(patterns)), build)
