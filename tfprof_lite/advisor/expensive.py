"""ExpensiveOperationChecker: the costliest op types, graph nodes and code paths.

Contract (TF's ``expensive_operation_checker.h``). Three queries with fixed options
(step -1, i.e. per-node averages over all steps, order by ``micros``, everything
accounted, output ``none`` so nothing is printed), each adding at most one report:

1. **Op view** (skipped when the profile has no steps): ``max_depth 3``,
   ``min_micros 1``, ``select micros,occurrence``. The first three displayed rows,
   one line each, joined with ``\\n``::

       top %d operation type: %s, cpu: %s, accelerator: %s, total: %s (%.2f%%)

   with the row's *own* cpu / accelerator / total times and
   ``100 * total / (root total + 1e-10)``.
2. **Scope view**: ``max_depth 100``, ``min_micros 100``, ``select micros``. The
   first three displayed top-level nodes::

       top %d graph node: %s, cpu: %s, accelerator: %s, total: %s

   with the node's *own* times, so a name-scope parent prints ``0us``.
3. **Code view** (skipped without code traces): ``max_depth 100``,
   ``min_micros 1``, ``select micros``. From the root, descend while a node has
   exactly one child; if the node reached has children, walk it (depth 0..3, only
   nodes with at least two children are expanded, at most their first three
   children, only children with a total of at least 1000us are listed)::

       <2*depth spaces>%s, cpu: %s, accelerator: %s, total: %s

   with *total* (subtree) times. The lines are joined with ``\\n``; the report may
   be an empty string (then an empty line is printed).

Times use tfprof's format (``999us``, ``1.00ms``, ``2.50sec``). Without steps the
checker logs ``Missing RunMetadata info. Skip ExpensiveOperationChecker`` and
``Missing run_meta for ExpensiveOperationChecker`` but, like TF, still runs the
scope and code queries; without traces it logs ``Missing op_log (code traces)
for ExpensiveOperationChecker``.

On an XSpace profile (TF2, Keras, JAX; :mod:`tfprof_lite.analysis.profile_kind`)
there is no graph: the top-level scope nodes are function calls
(``StatefulPartitionedCall``) or XLA programs whose own time is 0. The scope report
then lists the top-level scopes by their *total* times, leaving out those with
none (``top %d scope: %s, cpu: %s, accelerator: %s, total: %s``), and the
missing-trace message says how that kind records call stacks
(:data:`NO_STACKS`). TF1 profiles keep TF's reports and messages.
"""

from __future__ import annotations

import functools
import logging

from tfprof_lite.advisor.base import Checker
from tfprof_lite.analysis.profile_kind import profile_kind
from tfprof_lite.base.units import format_time
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.options.options import Options
from tfprof_lite.views.node import ShowNode
from tfprof_lite.views.query import run_view
from tfprof_lite.views.stats import ACC, CPU, EXEC

__all__ = ["NO_STACKS", "ExpensiveOperationChecker", "query_options", "xspace_scope_report"]

log = logging.getLogger("tfprof_lite")

#: Number of rows / nodes / children each report lists.
TOP_N = 3
#: Deepest level the code report descends to (levels start at 0).
CODE_MAX_DEPTH = 3
#: Children of a code node below this total time (us) are not listed.
CODE_MIN_MICROS = 1000

#: Profile kind -> what to log when it has no code traces (TF1: TF's message).
NO_STACKS = {
    "tf2": "No Python call stacks in this XSpace for %s: profile with "
    "tf.profiler.experimental.ProfilerOptions(python_tracer_level=1) to record them",
    "jax": "No call stacks for %s: the XLA programs of this JAX XSpace carry no source "
    "locations for their ops (HLO metadata); the code report is left out",
}

_QUERIES: dict[str, tuple[int, int, tuple[str, ...]]] = {
    # view: (max_depth, min_micros, select)
    "op": (3, 1, ("micros", "occurrence")),
    "scope": (100, 100, ("micros",)),
    "code": (100, 1, ("micros",)),
}


@functools.cache
def query_options(view: str) -> Options:
    """The fixed options TF's checker queries ``view`` with."""
    max_depth, min_micros, select = _QUERIES[view]
    return Options.from_dict(
        {
            "max_depth": max_depth,
            "min_micros": min_micros,
            "step": -1,
            "order_by": "micros",
            "account_type_regexes": [".*"],
            "start_name_regexes": [".*"],
            "trim_name_regexes": [],
            "show_name_regexes": [".*"],
            "hide_name_regexes": [],
            "account_displayed_op_only": False,
            "select": list(select),
            "output": "none",
        }
    )


def _query(model: ProfileModel, view: str) -> ShowNode:
    """Run one fixed query; returns the root of the displayed result."""
    return run_view(model, view, query_options(view)).root


def _times(values: list[int]) -> str:
    return (
        f"cpu: {format_time(values[CPU])}, accelerator: {format_time(values[ACC])}, "
        f"total: {format_time(values[EXEC])}"
    )


def op_report(model: ProfileModel) -> str | None:
    """The ``top N operation type`` report, or None when no row is displayed."""
    root = _query(model, "op")
    rows = root.children[:TOP_N]
    if not rows:
        return None
    lines = [
        f"top {rank} operation type: {row.name}, {_times(row.self_)} "
        f"({100.0 * row.self_[EXEC] / (root.total[EXEC] + 1e-10):.2f}%)"
        for rank, row in enumerate(rows, 1)
    ]
    return "\n".join(lines)


def scope_report(model: ProfileModel) -> str | None:
    """The ``top N graph node`` report, or None when the root shows no child."""
    root = _query(model, "scope")
    if not root.children:
        return None
    return "\n".join(
        f"top {rank} graph node: {node.name}, {_times(node.self_)}"
        for rank, node in enumerate(root.children[:TOP_N], 1)
    )


def xspace_scope_report(model: ProfileModel) -> str | None:
    """The top-level scopes of an XSpace by total time (scopes with no time left out)."""
    root = _query(model, "scope")
    kids = sorted(
        (node for node in root.children if node.total[EXEC] > 0), key=lambda n: -n.total[EXEC]
    )
    if not kids:
        return None
    return "\n".join(
        f"top {rank} scope: {node.name}, {_times(node.total)}"
        for rank, node in enumerate(kids[:TOP_N], 1)
    )


def code_report(model: ProfileModel) -> str | None:
    """The call-stack report (maybe ``""``), or None when the walk finds no branch."""
    node = _query(model, "code")
    while len(node.children) == 1:
        node = node.children[0]
    if not node.children:
        return None
    lines: list[str] = []
    _code_lines(node, 0, lines)
    return "\n".join(lines)


def _code_lines(node: ShowNode, depth: int, out: list[str]) -> None:
    if len(node.children) <= 1 or depth > CODE_MAX_DEPTH:
        return
    for child in node.children[:TOP_N]:
        if child.total[EXEC] < CODE_MIN_MICROS:
            continue
        out.append(f"{' ' * (2 * depth)}{child.name}, {_times(child.total)}")
        _code_lines(child, depth + 1, out)


class ExpensiveOperationChecker(Checker):
    """Lists the most expensive op types, graph nodes and code paths (TF's checker)."""

    name = "ExpensiveOperationChecker"

    def check(self, model: ProfileModel) -> list[str]:
        """Up to three reports: op view, scope view, code view (in that order)."""
        kind = profile_kind(model)
        reports: list[str | None] = []
        if not model.steps:
            if kind == "tf1":
                log.warning("Missing RunMetadata info. Skip %s", self.name)
                log.warning("Missing run_meta for %s", self.name)
            else:
                log.warning("No steps in this XSpace: no op-type report from %s", self.name)
        else:
            reports.append(op_report(model))
        reports.append(scope_report(model) if kind == "tf1" else xspace_scope_report(model))
        if not model.has_trace:
            log.warning(NO_STACKS.get(kind, "Missing op_log (code traces) for %s"), self.name)
        else:
            reports.append(code_report(model))
        return [report for report in reports if report is not None]
