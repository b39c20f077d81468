"""GraphDefs and op logs (OpLogProto) as the columns the profile model appends.

:class:`GraphColumns` holds a GraphDef's nodes in order, one list per column;
:class:`OpLogColumns` an op log's entries and its string table. Two decoders
produce equal columns: the pure-Python one walks a parsed message
(:func:`graph_columns_from_message`, :func:`op_log_columns_from_message`), the
optional native one reads the bytes (:func:`native_graph_columns`,
:func:`native_op_log_columns`, module ``tfprof_lite._native._graphdecode``);
:func:`native_graph_names` checks the bytes the same way but decodes names and
ops only, the other columns pending until :meth:`GraphColumns.with_details`
decodes those asked for (the native ``graph_details``, which leaves out the
checks ``native_graph_check`` made already);
:func:`native_graph_check` checks them and decodes nothing (the node count),
and :func:`checked_graph_names` decodes names and ops of bytes it took.
``TFPROF_LITE_PURE_PYTHON=1`` keeps the native one out; it declines (returns
None) on anything outside the plain subset it reads, and the caller then parses
the bytes with protobuf, so errors are the same on both paths.

A node's columns: name, op, inputs (position -> producer name: the text before
the first ``:``, one leading ``^`` dropped), src_output (producer name -> 0:
tfprof reads output 0 of every producer), attrs (name -> AttrValue bytes; the
native decoder keeps the wire bytes, equal as messages to a re-serialization),
shape (dims of the ``shape`` attribute: ``[1]`` for a known-rank scalar, ``[]``
for an unknown rank, None without one), output_shapes (index -> dims of
``_output_shapes``; nodes with equal non-empty values share one dict) and
str_attrs (``data_format`` decoded, when it is a string value).

An entry's columns: name, float_ops, types (tuple), trace_ids (index into
``traces``, -1 without a ``code_def``); ``traces`` holds the distinct call
stacks as bytes of five native-order int64 per frame (``file_id``, ``lineno``,
``function_id``, ``line_id``, ``func_start_line``).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any

from tfprof_lite._native import load
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.proto.steps import pure_forced

__all__ = [
    "DETAILS",
    "GraphColumns",
    "OpLogColumns",
    "checked_graph_names",
    "details_mask",
    "graph_columns_from_message",
    "native_graph_check",
    "native_graph_columns",
    "native_graph_names",
    "native_op_log_columns",
    "op_log_columns_from_message",
    "parse_input",
    "shape_dims",
]

_STRING_ATTRS = ("data_format",)


#: The columns after names and ops: :meth:`GraphColumns.with_details` decodes
#: them when :func:`native_graph_names` left them out.
DETAILS = ("inputs", "src_output", "attrs", "shapes", "output_shapes", "str_attrs")


@dataclass
class GraphColumns:
    """A GraphDef's nodes, one list per column (see the module docstring).

    ``pending`` holds the GraphDef's bytes when only names and ops were decoded
    (:func:`native_graph_names`); the other columns are then empty until
    :meth:`with_details`.
    """

    names: list[str] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)
    inputs: list[dict[int, str]] = field(default_factory=list)
    src_output: list[dict[str, int]] = field(default_factory=list)
    attrs: list[dict[str, bytes]] = field(default_factory=list)
    shapes: list[list[int] | None] = field(default_factory=list)
    output_shapes: list[dict[int, list[int]]] = field(default_factory=list)
    str_attrs: list[dict[str, str]] = field(default_factory=list)
    pending: bytes | None = None

    def with_details(self, columns: tuple[str, ...] = DETAILS) -> GraphColumns:
        """These columns with the detail ``columns`` decoded (``self`` when none
        is pending; the other detail columns stay empty)."""
        if self.pending is None:
            return self
        module = _native()
        parts = module.graph_details(self.pending, details_mask(columns)) if module else None
        if parts is not None:
            out = GraphColumns(self.names, self.ops)
            for name, values in zip(DETAILS, parts[2:], strict=True):
                if values is not None:
                    setattr(out, name, values)
            return out
        # Not reached: the native decoder took these bytes for names and ops, and
        # it accepts or declines the same bytes in both modes.
        from tfprof_lite.proto.messages import GraphDef

        return graph_columns_from_message(GraphDef.FromString(self.pending))


#: The bit of ``graph_details``'s mask for names and ops.
_NAMES_BIT = 1 << len(DETAILS)


def details_mask(columns: tuple[str, ...]) -> int:
    """The native decoder's mask of detail ``columns`` (bit i: ``DETAILS[i]``)."""
    return sum(1 << DETAILS.index(name) for name in set(columns))


@dataclass
class OpLogColumns:
    """An op log's entries, one list per column (see the module docstring)."""

    names: list[str] = field(default_factory=list)
    float_ops: list[int] = field(default_factory=list)
    types: list[tuple[str, ...]] = field(default_factory=list)
    trace_ids: list[int] = field(default_factory=list)
    traces: list[bytes] = field(default_factory=list)
    id_to_string: dict[int, str] = field(default_factory=dict)


# ----------------------------------------------------------------- pure Python


def shape_dims(shape: Any) -> list[int]:
    """tfprof's shape vector: dims, ``[1]`` for a known-rank scalar, ``[]`` if unknown."""
    if not shape.dim and not shape.unknown_rank:
        return [1]
    return [d.size for d in shape.dim]


def parse_input(text: str, node: str) -> tuple[str, int]:
    """A node input as (producer name, output index); ``^`` (control) dropped.

    Raises:
        InvalidInputError: the input is not ``name`` or ``name:index``.
    """
    name, sep, index = text.partition(":")
    idx = 0
    if sep:
        try:
            idx = int(index)
        except ValueError as err:
            raise InvalidInputError(
                f"GraphDef node {node!r} has a malformed input {text!r}; expected 'name:index'"
            ) from err
    if name.startswith("^"):
        name = name[1:]
    return name, idx


def _output_shapes(value: Any) -> dict[int, list[int]]:
    if not value.HasField("list"):
        return {}
    return {i: shape_dims(s) for i, s in enumerate(value.list.shape)}


def _add_node(cols: GraphColumns, node: Any, shared: dict[bytes, dict[int, list[int]]]) -> None:
    name = node.name
    attrs = node.attr
    raw = {key: attrs[key].SerializeToString() for key in attrs}
    srcs = [parse_input(text, name)[0] for text in node.input]
    cols.names.append(name)
    cols.ops.append(node.op)
    cols.inputs.append(dict(enumerate(srcs)))
    cols.src_output.append(dict.fromkeys(srcs, 0))
    cols.attrs.append(raw)
    shape = None
    if "shape" in raw and attrs["shape"].HasField("shape"):
        shape = shape_dims(attrs["shape"].shape)
    cols.shapes.append(shape)
    key = raw.get("_output_shapes")
    shapes: dict[int, list[int]] = {}
    if key is not None:
        known = shared.get(key)
        if known is None:
            known = shared[key] = _output_shapes(attrs["_output_shapes"])
        if known:
            shapes = known
    cols.output_shapes.append(shapes)
    strings = {}
    for attr in _STRING_ATTRS:
        if attr in raw and attrs[attr].WhichOneof("value") == "s":
            strings[attr] = attrs[attr].s.decode("utf-8", "replace")
    cols.str_attrs.append(strings)


def graph_columns_from_message(graph_def: Any) -> GraphColumns:
    """The columns of a parsed GraphDef message (ours, upb backend).

    Raises:
        InvalidInputError: an input is not ``name`` or ``name:index`` (checked
            before any node is decoded).
    """
    nodes = graph_def.node
    for node in nodes:
        for text in node.input:
            if ":" in text:
                parse_input(text, node.name)
    cols = GraphColumns()
    shared: dict[bytes, dict[int, list[int]]] = {}
    for node in nodes:
        _add_node(cols, node, shared)
    return cols


def _packed_frames(code_def: Any) -> bytes:
    values = array("q")
    for t in code_def.traces:
        values.extend((t.file_id, t.lineno, t.function_id, t.line_id, t.func_start_line))
    return values.tobytes()


def op_log_columns_from_message(op_log: Any) -> OpLogColumns:
    """The columns of a parsed OpLogProto message (ours, upb backend)."""
    cols = OpLogColumns(id_to_string=dict(op_log.id_to_string))
    known: dict[bytes, int] = {}
    for entry in op_log.log_entries:
        trace = -1
        if entry.HasField("code_def"):
            key = entry.code_def.SerializeToString()
            trace = known.get(key, -1)
            if trace < 0:
                trace = known[key] = len(cols.traces)
                cols.traces.append(_packed_frames(entry.code_def))
        cols.names.append(entry.name)
        cols.float_ops.append(entry.float_ops)
        cols.types.append(tuple(entry.types))
        cols.trace_ids.append(trace)
    return cols


# ----------------------------------------------------------------- native


def _native() -> Any:
    """The extension module, or None when it is not built."""
    return load("_graphdecode")


def native_graph_available() -> bool:
    """Whether the native GraphDef and op log decoder is built and importable."""
    return _native() is not None


def _values_parse(wrapped: bytes) -> bool:
    """Whether every distinct AttrValue parses where a GraphDef holds it (the
    native decoder gives them as one GraphDef with one attribute per node, so
    nesting limits match)."""
    from tfprof_lite.proto.messages import GraphDef

    try:
        GraphDef().ParseFromString(wrapped)
    except Exception:  # left to the caller's own parse, which reports it
        return False
    return True


def native_graph_columns(raw: bytes) -> GraphColumns | None:
    """The columns of serialized GraphDef ``raw`` by the native decoder.

    None when the decoder is not built, is turned off, or declines the bytes
    (anything outside the plain subset it reads, every malformed input, and
    attribute values protobuf would reject); the caller then parses ``raw``.
    """
    module = _native()
    if module is None or pure_forced():
        return None
    parts = module.graph(raw)
    if parts is None or not _values_parse(parts[8]):
        return None
    return GraphColumns(*parts[:8])


def native_graph_names(raw: bytes) -> GraphColumns | None:
    """Names and ops of serialized GraphDef ``raw`` by the native decoder, the
    other columns pending (:meth:`GraphColumns.with_details`); None as
    :func:`native_graph_columns` (the bytes are checked the same way)."""
    module = _native()
    if module is None or pure_forced():
        return None
    parts = module.graph_names(raw)
    if parts is None or (parts[2] and not _values_parse(parts[2])):
        return None
    return GraphColumns(parts[0], parts[1], pending=raw)


def checked_graph_names(raw: bytes) -> GraphColumns | None:
    """Names and ops of serialized GraphDef ``raw`` that :func:`native_graph_check`
    took, the other columns pending, as :func:`native_graph_names` gives them
    but without checking the bytes again; None when the native decoder is not
    built or is turned off."""
    module = _native()
    if module is None or pure_forced():
        return None
    parts = module.graph_details(raw, _NAMES_BIT)
    if parts is None:  # not reached for bytes native_graph_check took
        return native_graph_names(raw)
    return GraphColumns(parts[0], parts[1], pending=raw)


def native_graph_check(raw: bytes) -> int | None:
    """The node count of serialized GraphDef ``raw`` when the native decoder
    takes it (:func:`native_graph_names` then does too, and the bytes are
    checked the same way), decoding nothing; None as :func:`native_graph_columns`."""
    module = _native()
    if module is None or pure_forced():
        return None
    parts = module.graph_check(raw)
    if parts is None or (parts[1] and not _values_parse(parts[1])):
        return None
    count: int = parts[0]
    return count


def native_op_log_columns(raw: bytes) -> OpLogColumns | None:
    """The columns of serialized OpLogProto ``raw`` by the native decoder; None
    when it is not built, is turned off or declines the bytes."""
    module = _native()
    if module is None or pure_forced():
        return None
    parts = module.op_log(raw)
    if parts is None:
        return None
    return OpLogColumns(*parts)
