"""Optional native codecs, compiled when the package is installed.

``_stepdecode`` reads a RunMetadata's step statistics, ``_profiledecode`` a saved
profile, ``_graphdecode`` a GraphDef and an op log, ``_xplanedecode`` an XSpace
(``*.xplane.pb``), straight from their wire bytes; ``_profileencode`` writes a
model's ProfileProto and the bulk parts of the views' messages; ``_scopetree``
builds the scope view's tree (see :mod:`tfprof_lite.proto.steps`,
:mod:`tfprof_lite.proto.profiles`, :mod:`tfprof_lite.formats.xspace.wire.native`,
:mod:`tfprof_lite.model.profile_write`, :mod:`tfprof_lite.outputs.message`,
:mod:`tfprof_lite.views.scope` and ``docs/native.md``). Nothing here is
required: when an extension is not built, or :data:`PURE_PYTHON_ENV` is set,
its callers use the pure-Python code, which gives the same results. :func:`load`
is the one way they import them, and :func:`active` the one way to ask for one
that is not turned off.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

__all__ = ["PURE_PYTHON_ENV", "active", "load", "pure_forced"]

#: Set (to anything but empty or ``0``), every native codec stays out.
PURE_PYTHON_ENV = "TFPROF_LITE_PURE_PYTHON"

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


def pure_forced() -> bool:
    """Whether :data:`PURE_PYTHON_ENV` is set (to anything but empty or ``0``):
    every native codec then stays out (read at every call)."""
    return os.environ.get(PURE_PYTHON_ENV, "").strip() not in ("", "0")


def active(name: str) -> Any:
    """Extension module ``name`` when it is built and not turned off by
    :data:`PURE_PYTHON_ENV`, else None."""
    return None if pure_forced() else load(name)
