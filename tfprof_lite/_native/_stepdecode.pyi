"""Type stub of the native step statistics decoder (``_stepdecode.c``)."""

from typing import Any

def decode(data: bytes) -> tuple[Any, ...] | None:
    """A RunMetadata's step statistics as raw columns; None when declined."""
