"""Giving the process's freed memory back to the system between the phases of a
large job.

The C allocator keeps freed blocks for reuse; after a phase frees hundreds of
MB of temporaries in many blocks (NumPy columns, Python objects), the process
keeps that memory resident, and the next phase's peak stacks on it. On
glibc, ``malloc_trim(0)`` hands every whole free page back;
:func:`give_back_freed` calls it (elsewhere it does nothing). It costs a walk
over the heap, so callers ask for it only after freeing a lot.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

__all__ = ["give_back_freed"]


@functools.cache
def _trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None (another system or C library)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # only here: most runs never free enough to ask

    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # musl and others have none
        return None
    return trim


def give_back_freed() -> None:
    """Return the process's free heap pages to the system (glibc; else nothing)."""
    trim = _trim()
    if trim is not None:
        trim(0)
