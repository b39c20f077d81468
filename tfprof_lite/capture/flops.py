"""Corrected FLOP counts for TensorFlow graphs: opt-in, beyond TensorFlow's registry.

TensorFlow's tfprof counts FLOPs with the formulas registered for
``ops.get_stats_for_node_def(graph, node_def, "flops")`` (see
``docs/flops.md``); :mod:`tfprof_lite.capture.oplog` reproduces that exactly and
stays the default. This module computes a *corrected* table next to it.

Contract
--------
* :func:`corrected_flops` ``(graph, run_meta=None, conventions=None)`` returns a
  :class:`FlopTable`: one :class:`FlopRow` per op of the graph **and** per op of
  every function body reached through control flow v2 (``While``/``If``/``Case``,
  stateless or not) and function calls (``PartitionedCall``,
  ``StatefulPartitionedCall``), recursively. Each row carries our per-execution
  FLOPs, TensorFlow's registered value on the graph's current static shapes, how
  many executions the totals multiply by, a status and, when a value is
  missing, a reason (``REASON_*``).
* Shapes: static shapes; with a RunMetadata, the recorded output shapes of every
  executed node (per output slot, also when TensorFlow's rule -- recorded output
  count == op output count -- rejects the record) and of the feeds recorded as
  ``_arg_<name>_<slot>_<n>`` are declared on a *copy* of the graph whose shape
  inference TensorFlow then re-runs, so refined dims reach every consumer (also
  ops grappler fused away at run time); a few local rules (identity-like,
  elementwise, MatMul, same-shape consumers) fill what is still unknown. The
  caller's graph is never mutated.
* Function bodies: executions are counted from the RunMetadata records of the
  lowered body (``<caller>/body/_<k>/<node>``, ``<caller>/then/_<k>/<node>``,
  ``<caller>/branch<i>/_<k>/<node>``, inlined ``<caller>/<node>``). Without a
  RunMetadata a loop's trip count and a conditional's branch are unknown (count
  ``None``, excluded from totals); a function call runs once per call.
* Conventions (:class:`FlopConventions`): a multiply-accumulate (MAC) is 2 FLOPs
  by default (``flops_per_mac=1`` counts MACs); ``exact_dot_products=True`` counts
  a length-k dot product as 2k-1 (``mn(2k-1)`` for MatMul) instead of 2k;
  elementwise ops cost :data:`ELEMENT_COSTS` FLOPs per element (overridable).
* ``tf_flops`` is TensorFlow's registered value as ``tfprof_logger`` would log it
  for this graph and RunMetadata (its shape fill emulated on a read-only view).
* Default numbers never change: :class:`FlopsHook` only runs when a caller opts
  in (``flops="corrected"`` or a FlopConventions on ``profile``/``Profiler``).

TensorFlow is imported lazily; the formulas themselves (:func:`op_flops`) are
pure Python. The walk is in :mod:`~tfprof_lite.capture.flop_walk` (function
bodies in :mod:`~tfprof_lite.capture.flop_bodies`, RunMetadata shapes in
:mod:`~tfprof_lite.capture.flop_runtime`, TensorFlow's values in
:mod:`~tfprof_lite.capture.flop_tf`); this module is the public API and the hook.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Union

from tfprof_lite.capture.flop_bodies import FunctionLibrary
from tfprof_lite.capture.flop_runtime import runtime_index
from tfprof_lite.capture.flop_tf import as_tf_graph, tf_registered_flops
from tfprof_lite.capture.flop_walk import Walk
from tfprof_lite.errors import InvalidOptionError
from tfprof_lite.model.flops import (
    ELEMENT_COSTS,
    FLOPS_MODES,
    REASON_DATA_FORMAT,
    REASON_ERROR,
    REASON_FUNCTION_BODY,
    REASON_INCOMPLETE_SHAPE,
    REASON_NO_FORMULA,
    REASON_UNKNOWN_COUNT,
    ZERO_COST_OPS,
    FlopConventions,
    FlopError,
    FlopRow,
    FlopTable,
    OpInfo,
    Shape,
    has_formula,
    op_flops,
)
from tfprof_lite.model.records import OpLogEntrySpec

__all__ = [
    "ELEMENT_COSTS",
    "FLOPS_MODES",
    "REASON_DATA_FORMAT",
    "REASON_ERROR",
    "REASON_FUNCTION_BODY",
    "REASON_INCOMPLETE_SHAPE",
    "REASON_NO_FORMULA",
    "REASON_UNKNOWN_COUNT",
    "ZERO_COST_OPS",
    "FlopConventions",
    "FlopCounter",
    "FlopError",
    "FlopRow",
    "FlopTable",
    "OpInfo",
    "FlopsHook",
    "corrected_flops",
    "has_formula",
    "missing_flops_report",
    "op_flops",
    "profile_entries",
    "resolve_flops_mode",
    "tf_registered_flops",
]


class FlopCounter:
    """Corrected FLOP tables for one graph; keeps loaded function bodies between calls.

    Args:
        graph: a ``tf.Graph``, or a GraphDef (ours or TensorFlow's, or its bytes),
            which is imported into a new ``tf.Graph``.
        conventions: counting conventions (default :class:`FlopConventions`).

    Raises:
        MissingDependencyError: TensorFlow is not installed.
        InvalidInputError: ``graph`` is None or not a graph.
    """

    def __init__(self, graph: Any, conventions: FlopConventions | None = None) -> None:
        if graph is None:
            from tfprof_lite.errors import InvalidInputError

            raise InvalidInputError("corrected FLOPs need a graph (tf.Graph or GraphDef)")
        self.graph = as_tf_graph(graph)
        self.conventions = conventions or FlopConventions()
        self._library = FunctionLibrary(self.graph)

    def table(self, run_meta: Any = None, compare_tf: bool = True) -> FlopTable:
        """The FLOP table, refined by ``run_meta`` (a RunMetadata, ours, TF's or bytes).

        ``compare_tf=False`` skips TensorFlow's registered values (``tf_flops`` and
        ``tf_reason`` stay None for graph nodes): faster, used by the profile hook.
        """
        return Walk(self._library, self.conventions, runtime_index(run_meta), compare_tf).run()

    def function_def(self, name: str) -> Any | None:
        """The FunctionDef called ``name`` from the graph's library, or None."""
        return self._library.function_def(name)

    def body_graph(self, name: str, arg_shapes: Sequence[Shape]) -> Any:
        """Function ``name`` as a FuncGraph with TensorFlow's shape inference from its args.

        Raises:
            KeyError: no such function; other TensorFlow errors when it cannot load.
        """
        return self._library.body_graph(name, arg_shapes)


# --------------------------------------------------------------------- public API
def corrected_flops(
    graph: Any,
    run_meta: Any = None,
    conventions: FlopConventions | None = None,
) -> FlopTable:
    """The corrected FLOP table of ``graph`` (see the module docstring).

    Args:
        graph: ``tf.Graph`` or GraphDef (message or bytes).
        run_meta: optional RunMetadata of one run (ours, TensorFlow's or bytes):
            completes unknown shapes and counts executions of function bodies.
        conventions: counting conventions (default: FLOP = 2 x MAC).

    Returns:
        A :class:`FlopTable`; TensorFlow's default numbers are in ``tf_flops``.
    """
    return FlopCounter(graph, conventions).table(run_meta)


def missing_flops_report(
    graph: Any,
    run_meta: Any = None,
    conventions: FlopConventions | None = None,
    include_zero_cost: bool = False,
) -> Any:
    """Ops TensorFlow gives no FLOPs, and why (see :mod:`tfprof_lite.analysis.flops_report`).

    Returns:
        A :class:`~tfprof_lite.analysis.flops_report.MissingFlopsReport` with
        ``to_text()`` and ``to_json()``.
    """
    from tfprof_lite.analysis.flops_report import missing_from_table

    table = corrected_flops(graph, run_meta, conventions)
    return missing_from_table(table, include_zero_cost=include_zero_cost)


def resolve_flops_mode(flops: Union[str, FlopConventions, None]) -> FlopConventions | None:
    """``"tf"``/None -> None (TensorFlow's numbers); ``"corrected"`` -> default conventions.

    Raises:
        InvalidOptionError: anything else.
    """
    if flops is None or flops == "tf":
        return None
    if flops == "corrected":
        return FlopConventions()
    if isinstance(flops, FlopConventions):
        return flops
    raise InvalidOptionError(
        f"flops must be one of {', '.join(FLOPS_MODES)} or a FlopConventions, got {flops!r}"
    )


def _profile_values(table: FlopTable, skip: Collection[str]) -> tuple[dict[str, int], set[str]]:
    """Per-node static FLOPs for a profile, and the callers that got attributions."""
    values: dict[str, int] = {}
    caller_runs: dict[str, int | None] = {}
    attributed: dict[str, int] = {}
    for row in table.rows:
        if not row.in_function:
            caller_runs[row.name] = row.runs
            if row.flops:
                values[row.name] = row.flops
        elif row.runtime_names:
            for name in row.runtime_names:
                values[name] = row.flops or 0
        elif row.total and row.caller is not None:
            attributed[row.caller] = attributed.get(row.caller, 0) + row.total
    for caller, total in attributed.items():
        runs = caller_runs.get(caller)
        values[caller] = values.get(caller, 0) + (total // runs if runs else total)
    kept = {name: v for name, v in values.items() if v and name not in skip}
    return kept, set(attributed) - set(skip)


def profile_entries(table: FlopTable, skip: Collection[str] = ()) -> list[OpLogEntrySpec]:
    """Op-log entries that put the table's FLOPs into a profile.

    Graph nodes get their per-execution FLOPs (tfprof multiplies by run count);
    function-body ops get them on their RunMetadata pseudo nodes; body ops without
    records of their own but with a known count are attributed to the outermost
    GraphDef caller (divided by the caller's own run count when it was recorded).
    Names in ``skip`` (user op-log FLOPs) and zero values are left out.
    """
    values, _ = _profile_values(table, skip)
    return [OpLogEntrySpec(name, float_ops=value) for name, value in values.items()]


class FlopsHook:
    """Puts corrected FLOPs into a profile model: the opt-in ``flops=`` hook of
    ``profile`` and ``Profiler`` (applied after the default op log, and again after
    every ``add_step``).

    Args:
        graph: ``tf.Graph`` or GraphDef.
        conventions: counting conventions.
        skip: node names whose FLOPs a user op log set (never overridden).
    """

    def __init__(
        self, graph: Any, conventions: FlopConventions, skip: Collection[str] = ()
    ) -> None:
        self.counter = FlopCounter(graph, conventions)
        self.skip = frozenset(skip)
        self._attributed: set[str] = set()

    def apply(self, model: Any, run_meta: Any = None) -> FlopTable:
        """Overwrite the model's static FLOPs with the table for ``run_meta``.

        A caller that carried attributed body FLOPs before but none now (its body
        got pseudo nodes of its own from this RunMetadata) is reset to 0 so nothing
        is counted twice. Returns the table used.
        """
        table = self.counter.table(run_meta, compare_tf=False)
        values, attributed = _profile_values(table, self.skip)
        for name in self._attributed - set(values):
            nid = model.index.get(name)
            if nid is not None:
                model.static_float_ops[nid] = 0
        self._attributed = attributed
        model.add_op_log([OpLogEntrySpec(n, float_ops=v) for n, v in values.items()], {})
        return table
