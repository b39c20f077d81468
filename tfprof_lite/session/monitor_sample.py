"""A monitor's trace samples: one traced run analysed on its own.

Contract: :meth:`SampleAnalyser.metrics` builds a one-step model (the session
graph's nodes plus the traced step) and returns
:func:`tfprof_lite.analysis.monitoring.sample_metrics` of it. The graph's nodes
are decoded once per graph and graph version. Imports no TensorFlow itself.
"""

from __future__ import annotations

from typing import Any

from tfprof_lite.analysis.monitoring import SampleMetrics, sample_metrics
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.records import NodeSpec

__all__ = ["SampleAnalyser"]


class SampleAnalyser:
    """Analyses traced runs of one monitor, caching the graph's decoded nodes."""

    def __init__(self) -> None:
        self._nodes: tuple[Any, int, list[NodeSpec]] | None = None

    def metrics(self, graph: Any, meta: Any, step: int) -> SampleMetrics | None:
        """The sample metrics of a run on ``graph`` traced into ``meta``.

        Raises:
            Exception: whatever decoding or the analysis raise (the caller logs it).
        """
        return sample_metrics(self._model(graph, meta), step)

    def _model(self, graph: Any, meta: Any) -> ProfileModel:
        """A one-step model: the graph's nodes plus the traced step."""
        from tfprof_lite.proto import messages as pb
        from tfprof_lite.proto import steps
        from tfprof_lite.proto.codec import parse

        model = ProfileModel()
        model.add_graph(self._graph_nodes(graph))
        model.add_step(0, steps.columns_from_message(parse(pb.RunMetadata, meta, "run_metadata")))
        return model

    def _graph_nodes(self, graph: Any) -> list[NodeSpec]:
        """The graph's nodes, decoded once per graph version."""
        from tfprof_lite.capture.oplog import graph_def_message
        from tfprof_lite.model import decode

        version = int(getattr(graph, "version", -1))
        cached = self._nodes
        if cached is None or cached[0] is not graph or cached[1] != version:
            cached = (graph, version, list(decode.graph_nodes(graph_def_message(graph))))
            self._nodes = cached
        return cached[2]
