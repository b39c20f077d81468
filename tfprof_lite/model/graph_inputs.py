"""A GraphDef and an op log (bytes or messages) as the columns a profile takes.

:func:`graph_columns` and :func:`op_log_columns` decode either input at once
(natively when the decoder is built, see :mod:`tfprof_lite.proto.graphs`).
:class:`PendingInputs` is what ``Profiler(graph_def, op_log)`` keeps instead:
both inputs checked at construction, so that bad input fails there, and decoded
into the model on its first read, where the result is the same as decoding
them at once:

* a GraphDef the native decoder takes is kept as its bytes (a message
  serialized, as TensorFlow's ``Profiler`` does), every field checked by
  :func:`~tfprof_lite.proto.graphs.native_graph_check`; one it declines is
  decoded at construction, as before;
* an op log given as a message is copied (later changes to the caller's
  message are not seen, as when it was read at once) and serialized and
  decoded on first read: a message of the right type always decodes; op log
  bytes are decoded (checked) at construction and merged on first read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.proto import graphs
from tfprof_lite.proto.codec import message_copy, wire_bytes

__all__ = ["PendingInputs", "graph_columns", "op_log_columns"]

#: Below this many nodes a GraphDef the native decoder took is parsed as well:
#: the wrong-input-kind check of ``codec.parse`` may look into attribute values
#: of small graphs (it visits a bounded number of sub-messages), which that
#: decoder does not read.
_KIND_CHECK_NODES = 64


def _parse(kind: str, data: Any, what: str) -> Any:
    """``data`` parsed as our message ``kind`` (imports protobuf's messages: only
    where the native decoder declined or a small graph's kind is checked)."""
    from tfprof_lite.proto import messages as pb
    from tfprof_lite.proto.codec import parse

    return parse(getattr(pb, kind), data, what)


def _taken(graph: Any, native: Callable[[bytes], Any]) -> tuple[bytes, Any] | graphs.GraphColumns:
    """``graph``'s bytes and what ``native`` (a native GraphDef walk that checks
    every field; None when it declines) made of them, or, when it declines, the
    graph's columns decoded by protobuf. A small graph given as bytes is also
    parsed by protobuf, for its input-kind check."""
    raw = wire_bytes("GraphDef", graph, "graph")
    result = native(raw) if raw is not None else None
    if raw is None or result is None:
        return graphs.graph_columns_from_message(_parse("GraphDef", graph, "graph"))
    count = len(result.names) if isinstance(result, graphs.GraphColumns) else result
    if count < _KIND_CHECK_NODES and isinstance(graph, (bytes, bytearray, memoryview)):
        _parse("GraphDef", raw, "graph")
    return raw, result


def graph_columns(graph: Any) -> graphs.GraphColumns | None:
    """A GraphDef (bytes or message, ours or TensorFlow's) as node columns, or None.

    Raises:
        InvalidInputError: as :func:`tfprof_lite.proto.codec.parse`, or an input
            of a node is malformed.
    """
    if graph is None:
        return None
    # Names and ops now, the other columns when first read (every field checked now).
    taken = _taken(graph, graphs.native_graph_names)
    return taken if isinstance(taken, graphs.GraphColumns) else taken[1]


def op_log_columns(op_log: Any) -> graphs.OpLogColumns | None:
    """An OpLogProto (bytes or message, ours or TensorFlow's) as entry columns, or None.

    Raises:
        InvalidInputError: as :func:`tfprof_lite.proto.codec.parse`.
    """
    if op_log is None:
        return None
    raw = wire_bytes("OpLogProto", op_log, "op_log")
    cols = graphs.native_op_log_columns(raw) if raw is not None else None
    if cols is None:
        cols = graphs.op_log_columns_from_message(_parse("OpLogProto", op_log, "op_log"))
    return cols


def _checked_graph(graph: Any) -> graphs.GraphColumns | bytes | None:
    """``graph`` checked now: its bytes when the native decoder takes them,
    else its columns (decoded now, failing as :func:`graph_columns` does)."""
    if graph is None:
        return None
    taken = _taken(graph, graphs.native_graph_check)
    return taken if isinstance(taken, graphs.GraphColumns) else taken[0]


class PendingInputs:
    """A GraphDef and an op log checked now, added to a model by :meth:`feed`
    (see the module docstring).

    Raises:
        InvalidInputError: as :func:`graph_columns` and :func:`op_log_columns`
            (the op log first).
    """

    def __init__(self, graph: Any, op_log: Any) -> None:
        log: Any = message_copy("OpLogProto", op_log, "op_log")
        self._log = op_log_columns(op_log) if log is None else log
        self._graph = _checked_graph(graph)
        self._lock = threading.Lock()
        self._fed = False

    def feed(self, model: ProfileModel) -> None:
        """Add the graph's nodes, then the op log, to ``model``; once: later calls
        (in any thread) return when the first one is done."""
        with self._lock:
            if self._fed:
                return
            graph, log = self._graph, self._log
            if isinstance(graph, bytes):
                cols = graphs.checked_graph_names(graph)  # None only if turned off since
                graph = cols if cols is not None else graph_columns(graph)
            if log is not None and not isinstance(log, graphs.OpLogColumns):
                log = op_log_columns(log)
            if graph is not None:
                model.add_graph_columns(graph)
            if log is not None:
                from tfprof_lite.model import decode

                model.add_op_log_columns(log, decode.code_stacks(log.traces))
            self._graph = self._log = None
            self._fed = True
