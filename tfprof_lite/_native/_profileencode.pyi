"""Type stub of the native saved-profile encoder (``_profileencode.c``)."""

from typing import Any

def encode(header: bytes, nodes: tuple[Any, ...], steps: list[tuple[Any, ...]]) -> bytes:
    """A profile model's ProfileProto bytes."""
