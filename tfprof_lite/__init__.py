"""tfprof_lite: a pure-Python, drop-in successor of ``tf.compat.v1.profiler`` (tfprof).

Replace ``tf.compat.v1.profiler`` by ``tfprof_lite`` and nothing you see changes:
the same API, the same returned message fields and the same text reports.
Analysing a saved profile needs no TensorFlow; only ``capture`` (a ``tf.Graph``) and
``session`` (a running session) import it.
"""

from __future__ import annotations

from typing import Any

from tfprof_lite.api import ALL_ADVICE, advise, profile, write_op_log
from tfprof_lite.errors import (
    InvalidInputError,
    InvalidOptionError,
    MissingDependencyError,
    TfprofLiteError,
    UsageError,
)
from tfprof_lite.options.builder import ProfileOptionBuilder
from tfprof_lite.outputs.chrome_trace import Timeline
from tfprof_lite.profiler import Profiler
from tfprof_lite.proto.messages import (
    AdviceProto,
    GraphNodeProto,
    MultiGraphNodeProto,
    OpLogProto,
)
from tfprof_lite.session.monitor import Monitor
from tfprof_lite.session.profile_context import ProfileContext

__version__ = "0.1.0"

__all__ = [
    "ALL_ADVICE",
    "advise",
    "profile",
    "write_op_log",
    "AdviceProto",
    "GraphNodeProto",
    "InvalidInputError",
    "InvalidOptionError",
    "MissingDependencyError",
    "Monitor",
    "MultiGraphNodeProto",
    "OpLogProto",
    "ProfileOptionBuilder",
    "ProfileContext",
    "Profiler",
    "ProfilerHook",
    "TfprofLiteError",
    "Timeline",
    "UsageError",
    "__version__",
]


def __getattr__(name: str) -> Any:
    """``ProfilerHook`` is a TensorFlow ``SessionRunHook``: imported on first use."""
    if name == "ProfilerHook":
        from tfprof_lite.session.hooks import ProfilerHook

        return ProfilerHook
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
