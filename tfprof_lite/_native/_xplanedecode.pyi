"""Type stub of the native XSpace decoder (``_xplanedecode.c``)."""

from collections.abc import Callable
from typing import Any

def decode(data: bytes, gunzip: Callable[[bytes], str]) -> tuple[Any, ...] | None:
    """An XSpace as raw columns; None when declined."""
