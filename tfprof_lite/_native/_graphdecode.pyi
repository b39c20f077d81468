"""Type stub of the native GraphDef and OpLogProto decoder (``_graphdecode.c``)."""

from typing import Any

def graph(data: bytes) -> tuple[Any, ...] | None:
    """A GraphDef's node columns and distinct AttrValue bytes; None when declined."""

def op_log(data: bytes) -> tuple[Any, ...] | None:
    """An OpLogProto's entry columns, distinct call stacks and strings; None when declined."""

def op_type_sets(ops: list[str]) -> list[set[str]]:
    """``{op}`` for each op, not tracked by the cyclic garbage collector."""
