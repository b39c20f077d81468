"""Errors of the XLA dump tools (:mod:`tfprof_lite.xla`).

Every error derives from :class:`tfprof_lite.errors.TfprofLiteError` and carries a
one-line message that says what is wrong and what to do. A missing Graphviz ``dot``
program raises
:class:`tfprof_lite.errors.MissingDependencyError`, re-exported here.
"""

from __future__ import annotations

from tfprof_lite.errors import (
    InvalidInputError,
    InvalidOptionError,
    MissingDependencyError,
    TfprofLiteError,
)

__all__ = [
    "HloDumpError",
    "InstructionNotFoundError",
    "MissingDependencyError",
    "RenderError",
]


class HloDumpError(InvalidInputError):
    """An HLO dump directory or file that cannot be used (missing, unreadable,
    not a DOT dump, or DOT text that does not parse)."""


class InstructionNotFoundError(InvalidOptionError):
    """``focus`` names no instruction or fusion of the dumped module."""


class RenderError(TfprofLiteError):
    """Graphviz's ``dot`` ran but refused the graph, failed, or ran out of time."""
