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
"""

from __future__ import annotations

from tfprof_lite.options.builder import ProfileOptionBuilder
from tfprof_lite.options.options import OPTION_NAMES, ORDER_BY_NAMES, SELECT_NAMES, Options
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
