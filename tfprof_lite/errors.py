"""Error types raised by tfprof_lite.

Every error the package raises on bad input derives from :class:`TfprofLiteError`.
Each carries the process exit code the command line uses for it, so the CLI can
turn any of them into one line on stderr and a non-zero exit in one place.
"""

from __future__ import annotations

__all__ = [
    "TfprofLiteError",
    "InvalidInputError",
    "InvalidOptionError",
    "MissingDependencyError",
    "SameTaskError",
    "UsageError",
]


class TfprofLiteError(Exception):
    """Base class of every error tfprof_lite raises on purpose.

    Attributes:
        exit_code: the exit status the CLI uses when this error ends a command.
    """

    exit_code: int = 1


class InvalidInputError(TfprofLiteError, ValueError):
    """A profile, RunMetadata, GraphDef or op log that cannot be used (corrupt, empty,
    truncated or of the wrong message type)."""


class InvalidOptionError(TfprofLiteError, ValueError):
    """An option value or option key that tfprof does not accept."""


class UsageError(TfprofLiteError):
    """The command line was used wrongly (exit code 2)."""

    exit_code = 2


class SameTaskError(UsageError):
    """Profiles given to a merge are of one task (two runs of one program, say), so
    they are not the tasks of a cluster (exit code 2).

    Attributes:
        sources: the two inputs (as given) that are of the same task.
        task: their task (``/job:localhost/replica:0/task:0``).
    """

    def __init__(self, message: str, sources: tuple[str, str], task: str) -> None:
        super().__init__(message)
        self.sources = sources
        self.task = task


class MissingDependencyError(TfprofLiteError, ImportError):
    """An optional dependency (TensorFlow, Graphviz, ...) is needed but not installed."""
