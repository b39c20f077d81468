"""Type stub of the native saved-profile decoder (``_profiledecode.c``)."""

from typing import Any

def decode(data: bytes) -> tuple[Any, ...] | None:
    """A ProfileProto as node tuples and per-step columns; None when declined."""
