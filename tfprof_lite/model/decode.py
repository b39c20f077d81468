"""Decode TensorFlow messages into the model's plain records.

Contract: every function takes one of our message objects (already parsed by
:mod:`tfprof_lite.proto.codec`) and returns records from
:mod:`tfprof_lite.model.records`; no message object escapes this module.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import Any

from tfprof_lite._native import active
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.model.records import (
    AllocatorUse,
    CodeFrame,
    MemoryDetail,
    NodeSpec,
    OpLogEntrySpec,
    OutputTensor,
)
from tfprof_lite.proto.graphs import parse_input as _parse_input
from tfprof_lite.proto.graphs import shape_dims

__all__ = [
    "code_frames",
    "code_stacks",
    "graph_nodes",
    "memory_detail",
    "op_log_entries",
    "shape_dims",
]

_STRING_ATTRS = ("data_format",)


def _node_spec(node: Any, shared: dict[bytes, dict[int, list[int]]]) -> NodeSpec:
    name = node.name
    attrs = node.attr
    raw = {key: attrs[key].SerializeToString() for key in attrs}
    inputs = [
        (text, 0) if ":" not in text and text[:1] != "^" else _parse_input(text, name)
        for text in node.input
    ]
    spec = NodeSpec(name=name, op=node.op, inputs=inputs, output_shapes={}, attrs=raw)
    if "shape" in raw and attrs["shape"].HasField("shape"):
        spec.shape = shape_dims(attrs["shape"].shape)
    key = raw.get("_output_shapes")
    if key is not None:
        shapes = shared.get(key)
        if shapes is None:
            shapes = shared[key] = _output_shapes(attrs["_output_shapes"])
        if shapes:
            spec.output_shapes = shapes
    for attr in _STRING_ATTRS:
        if attr in raw and attrs[attr].WhichOneof("value") == "s":
            spec.str_attrs[attr] = attrs[attr].s.decode("utf-8", "replace")
    return spec


def _output_shapes(value: Any) -> dict[int, list[int]]:
    if not value.HasField("list"):
        return {}
    return {i: shape_dims(s) for i, s in enumerate(value.list.shape)}


def _check_inputs(nodes: Any) -> None:
    for node in nodes:
        for text in node.input:
            if ":" in text:
                _parse_input(text, node.name)


def graph_nodes(graph_def: Any) -> Iterator[NodeSpec]:
    """The GraphDef's nodes in order (function-library bodies are not nodes).

    Malformed inputs are reported before the first node is produced; the nodes
    themselves are decoded lazily (nodes with equal ``_output_shapes`` share one
    read-only dict), so a large graph never holds all its records at once.

    Raises:
        InvalidInputError: an input is not ``name`` or ``name:index``.
    """
    nodes = graph_def.node
    _check_inputs(nodes)
    shared: dict[bytes, dict[int, list[int]]] = {}
    return (_node_spec(node, shared) for node in nodes)


_FrameKey = tuple[int, int, int, int, int]


def _frame(key: _FrameKey) -> CodeFrame:
    """A frame of (file_id, lineno, function_id, line_id, func_start_line), its
    strings left to the string table."""
    file_id, lineno, function_id, line_id, start = key
    return CodeFrame(
        file="",
        lineno=lineno,
        function="",
        func_start_line=start,
        file_id=file_id,
        function_id=function_id,
        line_id=line_id,
    )


def code_frames(code_def: Any, known: dict[_FrameKey, CodeFrame] | None = None) -> list[CodeFrame]:
    """A CodeDef's frames, outermost first, with string-table ids kept.

    ``known`` lets calls share equal (immutable) frames.
    """
    frames = []
    for t in code_def.traces:
        key = (t.file_id, t.lineno, t.function_id, t.line_id, t.func_start_line)
        frame = known.get(key) if known is not None else None
        if frame is None:
            frame = _frame(key)
            if known is not None:
                known[key] = frame
        frames.append(frame)
    return frames


def code_stacks(packed: list[bytes]) -> list[list[CodeFrame]]:
    """Call stacks from packed frames (five native-order int64 per frame, as
    :class:`tfprof_lite.proto.graphs.OpLogColumns` keeps them); equal frames
    share one (immutable) object."""
    frames: dict[_FrameKey, CodeFrame] = {}
    out = []
    for data in packed:
        values = array("q", data)
        stack = []
        for i in range(0, len(values), 5):
            key = (values[i], values[i + 1], values[i + 2], values[i + 3], values[i + 4])
            frame = frames.get(key)
            if frame is None:
                frame = frames[key] = _frame(key)
            stack.append(frame)
        out.append(stack)
    return out


def op_log_entries(op_log: Any) -> tuple[Iterator[OpLogEntrySpec], dict[int, str]]:
    """An OpLogProto's entries (decoded lazily, in order) and its id -> string table."""
    return _log_entries(op_log.log_entries), dict(op_log.id_to_string)


def _log_entries(log_entries: Any) -> Iterator[OpLogEntrySpec]:
    """Entries with equal CodeDefs share one read-only frame list (ops built by
    the same Python lines have equal call stacks)."""
    traces: dict[bytes, list[CodeFrame]] = {}
    frames: dict[_FrameKey, CodeFrame] = {}
    for entry in log_entries:
        trace = None
        if entry.HasField("code_def"):
            code_def = entry.code_def
            key = code_def.SerializeToString()
            trace = traces.get(key)
            if trace is None:
                trace = traces[key] = code_frames(code_def, frames)
        yield OpLogEntrySpec(
            name=entry.name, float_ops=entry.float_ops, types=list(entry.types), trace=trace
        )


def _allocator_use(mem: Any) -> AllocatorUse:
    events = tuple([(a.alloc_micros, a.alloc_bytes) for a in mem.allocation_records])
    return AllocatorUse(
        mem.allocator_name,
        mem.total_bytes,
        mem.peak_bytes,
        mem.live_bytes,
        mem.allocator_bytes_in_use,
        events,
    )


_ShapeCache = dict[bytes, "tuple[int, ...] | None"]
#: The record classes the native memory decoder fills.
_RECORDS = (MemoryDetail, AllocatorUse, OutputTensor)


def _tensor_shape(shape: Any, known: _ShapeCache) -> tuple[int, ...] | None:
    """A TensorShapeProto as a dims tuple (None: unknown rank); equal shapes
    share the tuple (``known`` is keyed by the wire bytes)."""
    key = shape.SerializeToString()
    if key in known:
        return known[key]
    dims = None if shape.unknown_rank else tuple([d.size for d in shape.dim])
    known[key] = dims
    return dims


def _output_tensor(out: Any, shapes: _ShapeCache) -> OutputTensor | None:
    desc = out.tensor_description
    if not desc.HasField("allocation_description"):
        return None
    alloc = desc.allocation_description
    return OutputTensor(
        out.slot,
        alloc.allocator_name,
        alloc.allocation_id,
        alloc.requested_bytes,
        alloc.allocated_bytes,
        alloc.ptr,
        desc.dtype,
        _tensor_shape(desc.shape, shapes) if desc.HasField("shape") else None,
    )


def memory_detail(raw: bytes, shapes: _ShapeCache | None = None) -> MemoryDetail:
    """Start and end time, every allocator entry and every output's tensor
    description of a serialized NodeExecStats (a step's kept ``raw_stats``).

    ``shapes`` lets calls share equal shape tuples.

    The native decoder (``_native/_memdecode.c``) reads the plain subset of the
    wire format without protobuf; otherwise (not built, turned off by
    ``TFPROF_LITE_PURE_PYTHON``, or declined) protobuf parses it, with the same
    result or its error.

    Raises:
        InvalidInputError: ``raw`` is not a NodeExecStats.
    """
    known = {} if shapes is None else shapes
    native = active("_memdecode")
    if native is not None:
        found: MemoryDetail | None = native.decode(bytes(raw), _RECORDS, known)
        if found is not None:
            return found
    from tfprof_lite.proto import messages as pb

    ns = pb.NodeExecStats()
    try:
        ns.ParseFromString(raw)
    except Exception as err:  # noqa: BLE001 - protobuf's DecodeError varies by backend
        raise InvalidInputError(f"not a serialized NodeExecStats: {err}") from err
    uses = tuple(_allocator_use(mem) for mem in ns.memory)
    tensors = tuple(t for t in (_output_tensor(out, known) for out in ns.output) if t is not None)
    start = ns.all_start_micros
    return MemoryDetail(start, start + ns.op_end_rel_micros, uses, tensors)
