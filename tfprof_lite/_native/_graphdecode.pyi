"""Type stub of the native GraphDef and OpLogProto decoder (``_graphdecode.c``)."""

from typing import Any

def graph(data: bytes) -> tuple[Any, ...] | None:
    """A GraphDef's node columns and distinct AttrValue bytes; None when declined."""

def graph_names(data: bytes) -> tuple[Any, ...] | None:
    """A GraphDef's node names and ops (the rest checked as ``graph`` does) and
    its distinct AttrValue bytes; None when declined."""

def graph_check(data: bytes) -> tuple[Any, ...] | None:
    """A GraphDef's node count (every field checked as ``graph`` does) and its
    distinct AttrValue bytes; None when declined."""

def graph_details(data: bytes, mask: int) -> tuple[Any, ...] | None:
    """The columns of ``mask`` (bit i: column i of inputs, src_output, attrs,
    shapes, output_shapes, str_attrs; bit 6: names and ops; None for the others)
    of a GraphDef ``graph_check`` took, as (names, ops, inputs, ..); None when
    declined."""

def op_log(data: bytes) -> tuple[Any, ...] | None:
    """An OpLogProto's entry columns, distinct call stacks and strings; None when declined."""

def op_type_sets(ops: list[str]) -> list[set[str]]:
    """``{op}`` for each op, not tracked by the cyclic garbage collector."""

def merge_op_log(
    index: dict[str, int],
    names: list[str],
    float_ops: list[int],
    types: list[tuple[str, ...]],
    trace_ids: list[int],
    stacks: list[Any],
    op_types: list[set[str]] | dict[int, set[str]],
    static: list[int],
    traces: list[Any],
) -> bool:
    """An op log's entries merged into the model's columns; True if one had a trace."""
