"""A live ``tf.Graph`` as a source of GraphDefs and op logs for the profiler.

Mirrors what ``tf.compat.v1.profiler.Profiler`` sends to tfprof: the graph with
``add_shapes=True`` and the default op log at construction, then, on each
``add_step``, the shape-refined op log and any nodes added since.
"""

from __future__ import annotations

from typing import Any

from tfprof_lite.capture.graphdef import graph_columns
from tfprof_lite.capture.oplog import OpLogBuilder
from tfprof_lite.proto.graphs import GraphColumns

__all__ = ["GraphSource"]


class GraphSource:
    """Tracks one ``tf.Graph`` for a profiler."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self._builder = OpLogBuilder(graph, add_trace=True)
        self._ops_sent = 0

    def _new_nodes(self) -> GraphColumns | None:
        count = len(self.graph.get_operations())
        if count == self._ops_sent:
            return None
        self._ops_sent = count
        return graph_columns(self.graph)

    def initial(self, user_op_log: Any = None) -> tuple[Any, Any, bool]:
        """GraphDef and merged default op log for ``Profiler(graph, op_log)``: the
        op log as decoded columns, or as our message when a user op log is merged;
        and whether call stacks were left pending (without a user op log they are:
        :meth:`deferred_traces` gives them, as does the op log of the next step
        that adds ops)."""
        if user_op_log is None or not len(user_op_log.log_entries):
            op_log, traced = self._builder.build_deferred()
        else:
            op_log, traced = self._builder.build_columns(user_op_log=user_op_log), False
        graph_def = self._new_nodes()
        return graph_def, op_log, traced

    def deferred_traces(self) -> Any:
        """The call stacks :meth:`initial` left pending, as op log columns (empty
        once a step's op log has taken them)."""
        return self._builder.take_deferred()

    def for_step(self, run_meta: Any) -> tuple[Any | None, Any]:
        """The graph's nodes when some were added since (decoded columns; None
        otherwise) and the op log refined by ``run_meta`` (decoded columns)."""
        op_log = self._builder.build_columns(run_meta=run_meta)
        return self._new_nodes(), op_log
