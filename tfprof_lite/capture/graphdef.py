"""A live ``tf.Graph`` as the GraphDef node columns tfprof reads (needs TensorFlow).

Contract: :func:`graph_columns` equals the columns decoded from
``graph.as_graph_def(add_shapes=True).SerializeToString()`` (what TensorFlow's
``Profiler`` sends to tfprof): the same nodes in the same order, and on every
node with outputs the ``_output_shapes`` attribute (each output's
``get_shape().as_proto()``) and its decoded ``output_shapes``.

TensorFlow builds that GraphDef as a message, adds the attribute node by node
through message objects, and it is then serialized again for the decoder. Here
the graph's own serialization (``TF_GraphToGraphDef``, what ``as_graph_def``
parses) goes to the decoder, and the attribute is encoded once per distinct
list of output shapes and added to the columns. The graph goes TensorFlow's way
(``as_graph_def(add_shapes=True)``) when its internals are not the known ones
and when a node already has an ``_output_shapes`` attribute (TensorFlow appends
to it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tfprof_lite.capture.oplog import graph_def_bytes
from tfprof_lite.proto import graphs
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto.codec import parse
from tfprof_lite.proto.wire import len_field, varint

__all__ = ["graph_columns"]

_ATTR = "_output_shapes"
#: A shape's key: its dims (None for an unknown one), or None for an unknown rank.
_ShapeKey = tuple[int | None, ...] | None


def graph_columns(graph: Any) -> graphs.GraphColumns:
    """The node columns of ``graph.as_graph_def(add_shapes=True)`` (see the module
    docstring).

    Raises:
        InvalidInputError: as the decoders (a node input is malformed).
    """
    raw = _plain_graph_def(graph)
    lookup = getattr(graph, "_get_operation_by_name", None)
    if raw is not None and callable(lookup):
        cols = _columns(raw)
        if _add_output_shapes(cols, lookup):
            return cols
    return _columns(graph_def_bytes(graph))


def _columns(raw: bytes) -> graphs.GraphColumns:
    cols = graphs.native_graph_columns(raw)
    if cols is None:
        cols = graphs.graph_columns_from_message(parse(pb.GraphDef, raw, "graph"))
    return cols


def _plain_graph_def(graph: Any) -> bytes | None:
    """The graph's GraphDef as ``TF_GraphToGraphDef`` serializes it (under the
    graph's lock, as ``as_graph_def``), or None when the internals differ."""
    try:
        from tensorflow.python.client import pywrap_tf_session as c_api
        from tensorflow.python.framework import c_api_util

        lock, c_graph = graph._lock, graph._c_graph
        with lock, c_api_util.tf_buffer() as buf, c_graph.get() as handle:
            c_api.TF_GraphToGraphDef(handle, buf)
            data = c_api.TF_GetBuffer(buf)
    except (ImportError, AttributeError, TypeError):
        return None
    return bytes(data)


def _add_output_shapes(cols: graphs.GraphColumns, lookup: Callable[[str], Any]) -> bool:
    """Add ``_output_shapes`` to the nodes with outputs; False (columns left
    unusable) when a node already has one or is not in the graph."""
    known: dict[tuple[_ShapeKey, ...], tuple[bytes, dict[int, list[int]]]] = {}
    attrs, output_shapes = cols.attrs, cols.output_shapes
    for index, name in enumerate(cols.names):
        if _ATTR in attrs[index]:
            return False
        try:
            op = lookup(name)
        except KeyError:
            return False
        outputs = op.outputs
        if not outputs:
            continue
        key = tuple([_shape_key(tensor.get_shape()) for tensor in outputs])
        value = known.get(key)
        if value is None:
            value = known[key] = _encoded(key)
        attrs[index][_ATTR] = value[0]
        output_shapes[index] = value[1]
    return True


def _shape_key(shape: Any) -> _ShapeKey:
    try:
        return tuple(shape.as_list())
    except ValueError:  # an unknown rank
        return None


def _encoded(key: tuple[_ShapeKey, ...]) -> tuple[bytes, dict[int, list[int]]]:
    """The ``AttrValue`` bytes (``list { shape ... }``) of these output shapes and
    their decoded dims (as :func:`tfprof_lite.proto.graphs.shape_dims` gives them)."""
    shapes = b""
    decoded: dict[int, list[int]] = {}
    for index, dims in enumerate(key):
        if dims is None:  # TensorShapeProto(unknown_rank=True)
            shapes += len_field(7, b"\x18\x01")
            decoded[index] = []
            continue
        sizes = [-1 if d is None else int(d) for d in dims]
        proto = b"".join([len_field(2, b"\x08" + varint(s) if s else b"") for s in sizes])
        shapes += len_field(7, proto)
        decoded[index] = sizes if sizes else [1]
    return len_field(1, shapes), decoded
