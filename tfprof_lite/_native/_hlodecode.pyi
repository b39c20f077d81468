"""Type stub of the native HloProto decoder (``_hlodecode.c``)."""

from typing import Any

def decode(data: bytes, classes: tuple[type, ...]) -> Any:
    """A serialized HloProto's module as the given tuple classes; None when declined."""

def decode_program(data: bytes, classes: tuple[type, ...]) -> Any:
    """A whole serialized HloProto (module and buffer assignment); None when declined."""
