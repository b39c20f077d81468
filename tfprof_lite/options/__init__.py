"""Profiling options: the builder, the validated :class:`Options`, and option parsing.

* :class:`ProfileOptionBuilder` builds the same plain dicts as
  ``tf.compat.v1.profiler.ProfileOptionBuilder`` (no validation, TF's defaults).
* :class:`Options` (``Options.from_dict(d)``) validates such a dict, applies the
  defaults TF uses for missing keys, and is what the views consume.
* :func:`parse_output` parses ``-output`` strings into an :class:`OutputSpec`.
* :mod:`tfprof_lite.options.cli_syntax` parses tfprof shell/CLI option syntax.
* :func:`full_match_any` (:mod:`tfprof_lite.options.regex`) matches the regex options
  with RE2.

Every invalid option raises :class:`tfprof_lite.errors.InvalidOptionError`.
See ``docs/options.md`` for what each option does.

The names are imported on first use (module ``__getattr__``): a command that only
needs :data:`OPTION_NAMES` (:mod:`tfprof_lite.options.names`) does not load RE2.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tfprof_lite.options.builder import ProfileOptionBuilder
    from tfprof_lite.options.names import OPTION_NAMES
    from tfprof_lite.options.options import ORDER_BY_NAMES, SELECT_NAMES, Options
    from tfprof_lite.options.output import OUTPUT_TYPES, OutputSpec, parse_output
    from tfprof_lite.options.regex import full_match_any

__all__ = [
    "OPTION_NAMES",
    "ORDER_BY_NAMES",
    "OUTPUT_TYPES",
    "SELECT_NAMES",
    "Options",
    "OutputSpec",
    "ProfileOptionBuilder",
    "full_match_any",
    "parse_output",
]

#: Public name -> the module that defines it (imported on first access).
_LAZY: dict[str, str] = {
    "OPTION_NAMES": "tfprof_lite.options.names",
    "ORDER_BY_NAMES": "tfprof_lite.options.options",
    "SELECT_NAMES": "tfprof_lite.options.options",
    "Options": "tfprof_lite.options.options",
    "OUTPUT_TYPES": "tfprof_lite.options.output",
    "OutputSpec": "tfprof_lite.options.output",
    "parse_output": "tfprof_lite.options.output",
    "ProfileOptionBuilder": "tfprof_lite.options.builder",
    "full_match_any": "tfprof_lite.options.regex",
}


def __getattr__(name: str) -> Any:
    """Imports a public name's module on first access and caches the name here."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
