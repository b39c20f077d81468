"""Type stub of the native saved-profile encoder (``_profileencode.c``)."""

from typing import Any

def encode(header: bytes, nodes: tuple[Any, ...], steps: list[tuple[Any, ...]]) -> bytes:
    """A profile model's ProfileProto bytes."""

def input_edges(
    inputs: list[dict[int, str]], index: dict[str, int]
) -> tuple[bytes, bytes, bytes, list[str]] | None:
    """Per-node input counts, then per input its position, producer id and
    producer name; None when declined."""

def heads(
    names: list[str],
    devices: list[str],
    offsets: bytes,
    pos: bytes,
    producer: bytes,
    srcs: list[str],
    src_output: list[dict[str, int]],
    output_shapes: list[dict[int, list[int]]],
) -> list[bytes] | None:
    """Each node's name, device and input_shapes fields of the view messages;
    None when declined."""

def frame_tree(streams: list[list[bytes]], parents: bytes, tag: bytes) -> bytes | None:
    """A pre-order view message tree as one message's bytes; None when declined."""

def encode_rows(values: bytes, tags: list[bytes]) -> list[bytes] | None:
    """Each row of an int64 matrix (row-major bytes) as varint fields; None when declined."""
