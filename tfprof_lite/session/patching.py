"""Replacing class attributes for a while, and putting them back exactly.

Contract: :meth:`AttributePatch.set` replaces ``owner.name`` with a wrapper and
remembers what the class itself held (an inherited attribute counts as absent);
:meth:`AttributePatch.remove` restores in reverse order: the old value, or no
attribute at all. A wrapper that someone else replaced meanwhile is left in
place with a warning, so stacked patches (ours and another tool's) never undo
each other.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["AttributePatch"]

log = logging.getLogger("tfprof_lite")

_MISSING = object()


class AttributePatch:
    """Replaced class attributes, restorable in one call.

    Args:
        activity: what the patch is for, in the warning ("profiling").
    """

    def __init__(self, activity: str) -> None:
        self.activity = activity
        self._saved: list[tuple[type, str, Any, Any]] = []

    def set(self, owner: type, name: str, wrapper: Any) -> None:
        """Replace ``owner.name`` with ``wrapper``, remembering the old value."""
        previous = owner.__dict__.get(name, _MISSING)
        setattr(owner, name, wrapper)
        self._saved.append((owner, name, previous, wrapper))

    def remove(self) -> None:
        """Put back exactly what was there (unless someone replaced our wrapper)."""
        for owner, name, previous, wrapper in reversed(self._saved):
            if owner.__dict__.get(name) is not wrapper:
                log.warning(
                    "tfprof_lite: %s.%s was replaced while %s; leaving the replacement in place",
                    owner.__name__,
                    name,
                    self.activity,
                )
            elif previous is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, previous)
        self._saved.clear()
