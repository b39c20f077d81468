"""TensorFlow's own side of the FLOP walk: its registered values and graph imports.

Contract: :func:`tf_registered_flops` is TensorFlow's registered ``flops``
statistic for one op as ``tfprof_logger`` computes it (on a
:class:`TfFilledGraph`, the read-only view of a graph after TensorFlow's
shape fill from a RunMetadata, when one is given). :func:`as_tf_graph` and
:func:`import_graph_def` turn GraphDefs into ``tf.Graph``s (TensorFlow's shape
inference). TensorFlow is imported when a function is called.
"""

from __future__ import annotations

from typing import Any

from tfprof_lite.base.foreign import is_tf_graph
from tfprof_lite.capture.notes import tf_deprecations_silenced
from tfprof_lite.capture.oplog import recorded_outputs
from tfprof_lite.errors import MissingDependencyError
from tfprof_lite.model.flops import (
    REASON_DATA_FORMAT,
    REASON_ERROR,
    REASON_INCOMPLETE_SHAPE,
    REASON_NO_FORMULA,
)

__all__ = ["TfFilledGraph", "as_tf_graph", "import_graph_def", "tf_registered_flops"]


class _ShapedTensor:
    """A stand-in tensor: all TensorFlow's flops formulas read is ``get_shape()``."""

    def __init__(self, shape: Any) -> None:
        self._shape = shape

    def get_shape(self) -> Any:
        """The (refined) static shape."""
        return self._shape

    @property
    def shape(self) -> Any:
        """The (refined) static shape."""
        return self._shape


class TfFilledGraph:
    """A ``tf.Graph`` as TensorFlow's flops formulas see it after ``tfprof_logger``'s
    ``_fill_missing_graph_shape(graph, run_meta)``, without mutating the graph.

    Every not fully defined output shape is merged with the recorded one, by
    TensorFlow's rule (:func:`~tfprof_lite.capture.oplog.recorded_outputs`).
    """

    def __init__(self, graph: Any, run_meta: Any) -> None:
        from tensorflow.python.framework import tensor_shape

        self._graph = graph
        self._shapes: dict[str, Any] = {}
        for _, _, tensor, dims in recorded_outputs(graph, run_meta):
            current = self._shapes.get(tensor.name, tensor.get_shape())
            if current.is_fully_defined():
                continue
            try:
                self._shapes[tensor.name] = current.merge_with(tensor_shape.TensorShape(dims))
            except ValueError:
                continue

    def get_tensor_by_name(self, name: str) -> Any:
        """The graph's tensor, or a stand-in with the filled shape."""
        tensor = self._graph.get_tensor_by_name(name)
        shape = self._shapes.get(tensor.name)
        return tensor if shape is None else _ShapedTensor(shape)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._graph, name)


def _tf_registered(op_type: str) -> bool:
    """Whether TensorFlow registers flops statistics for ``op_type``."""
    from tensorflow.python.framework import ops

    registry = getattr(ops, "_stats_registry", None)
    if registry is None:  # unknown TensorFlow internals: ask every time
        return True
    try:
        registry.lookup(f"{op_type},flops")
    except LookupError:
        return False
    return True


def tf_registered_flops(graph: Any, op: Any) -> tuple[int | None, str | None, str]:
    """TensorFlow's own value for ``op``, as ``tfprof_logger`` computes it.

    Returns ``(value, reason, detail)``: the registered statistic (0 when it is 0),
    or None with ``REASON_NO_FORMULA`` (nothing registered),
    ``REASON_DATA_FORMAT`` (the formula only supports NHWC),
    ``REASON_INCOMPLETE_SHAPE`` (any other ValueError, as tfprof counts it) or
    ``REASON_ERROR`` (another exception; TensorFlow itself would crash).
    """
    from tensorflow.python.framework import ops

    if not _tf_registered(op.type):
        return None, REASON_NO_FORMULA, f"TensorFlow registers no flops statistics for {op.type}"
    try:
        with tf_deprecations_silenced():
            stats = ops.get_stats_for_node_def(graph, op.node_def, "flops")
    except ValueError as err:
        text = " ".join(str(err).split())
        return None, (REASON_DATA_FORMAT if "NHWC" in text else REASON_INCOMPLETE_SHAPE), text
    except Exception as err:  # noqa: BLE001 - reported, never raised
        return None, REASON_ERROR, f"{type(err).__name__}: {err}"
    return (int(stats.value) if stats.value else 0), None, ""


def as_tf_graph(graph: Any) -> Any:
    """``graph`` itself if it is a ``tf.Graph``, else a GraphDef imported into a new one."""
    if is_tf_graph(graph):
        return graph
    try:
        import tensorflow as tf
    except ImportError as err:
        raise MissingDependencyError("corrected FLOPs need TensorFlow installed") from err
    from tfprof_lite.proto import messages as pb
    from tfprof_lite.proto.codec import parse

    graph_def = tf.compat.v1.GraphDef.FromString(
        parse(pb.GraphDef, graph, "graph").SerializeToString()
    )
    return import_graph_def(graph_def)


def import_graph_def(graph_def: Any) -> Any:
    """``graph_def`` imported into a new ``tf.Graph`` (TensorFlow's shape inference)."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(graph_def, name="")
    return graph
