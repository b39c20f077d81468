"""Results shared by the parts of one run of a composer (the HTML report).

Contract: inside ``with sharing():`` a call ``shared(key, owner, build)`` runs
``build()`` once per ``(key, owner)`` and hands every later call the same object
(``owner`` is compared by identity and kept alive with the result, so a new
object at a reused address never gets a stale result); outside any ``sharing``
block it simply returns ``build()``, so callers behave exactly as without it.
Blocks nest (an inner block reuses the outer one's results) and end with the
results dropped. Shared results are read-only by convention: a caller that
changes what it gets must copy it first. The owner (a profile) must not change
inside the block: the report reads it and writes nothing into it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar

__all__ = ["is_sharing", "shared", "sharing"]

T = TypeVar("T")

_RESULTS: ContextVar[dict[tuple[Hashable, int], tuple[Any, Any]] | None] = ContextVar(
    "tfprof_lite_shared_results", default=None
)


@contextlib.contextmanager
def sharing() -> Iterator[None]:
    """Share the results of :func:`shared` calls until the block ends."""
    if _RESULTS.get() is not None:  # nested: the outer block shares already
        yield
        return
    token = _RESULTS.set({})
    try:
        yield
    finally:
        _RESULTS.reset(token)


def is_sharing() -> bool:
    """True inside a :func:`sharing` block."""
    return _RESULTS.get() is not None


def shared(key: Hashable, owner: object, build: Callable[[], T]) -> T:
    """``build()``, computed once per ``(key, owner)`` inside a :func:`sharing` block."""
    results = _RESULTS.get()
    if results is None:
        return build()
    slot = (key, id(owner))
    hit = results.get(slot)
    if hit is not None and hit[0] is owner:
        value: T = hit[1]
        return value
    value = build()
    results[slot] = (owner, value)
    return value
