"""Optional native codecs, compiled when the package is installed.

``_stepdecode`` reads a RunMetadata's step statistics, ``_profiledecode`` a saved
profile, straight from their wire bytes; ``_profileencode`` writes a model's
ProfileProto (see :mod:`tfprof_lite.proto.steps`, :mod:`tfprof_lite.proto.profiles`,
:mod:`tfprof_lite.model.profile_write` and ``docs/native.md``). Nothing here is
required: when an extension is not built, its callers use the pure-Python code,
which gives the same results. :func:`load` is the one way they import them.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["load"]

_loaded: dict[str, Any] = {}


def load(name: str) -> Any:
    """Extension module ``name`` of this package (e.g. ``"_stepdecode"``), or None
    when it is not built; imported once."""
    if name not in _loaded:
        try:
            _loaded[name] = importlib.import_module(f"{__name__}.{name}")
        except ImportError:
            _loaded[name] = None
    return _loaded[name]
