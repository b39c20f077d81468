"""Type stub of the native NodeExecStats memory decoder (``_memdecode.c``)."""

from typing import Any

def decode(data: bytes, classes: tuple[type, ...], shapes: dict[bytes, Any]) -> Any:
    """The memory side of a serialized NodeExecStats as the given classes; None when declined."""
