"""tfprof_lite: a drop-in successor of ``tf.compat.v1.profiler`` (tfprof), in Python with
optional C extensions.

Replace ``tf.compat.v1.profiler`` by ``tfprof_lite`` and nothing you see changes:
the same API, the same returned message fields and the same text reports.
Analysing a saved profile needs no TensorFlow; only ``capture`` (a ``tf.Graph``) and
``session`` (a running session) import it.

The public names are imported on first use (module ``__getattr__``), so
``import tfprof_lite`` itself loads almost nothing; ``from tfprof_lite import X``
loads what ``X`` needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tfprof_lite.api import ALL_ADVICE, advise, profile, write_op_log
    from tfprof_lite.base.version import __version__
    from tfprof_lite.cluster import merge
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
    from tfprof_lite.session.hooks import ProfilerHook
    from tfprof_lite.session.monitor import Monitor
    from tfprof_lite.session.profile_context import ProfileContext

__all__ = [
    "ALL_ADVICE",
    "advise",
    "profile",
    "write_op_log",
    "merge",
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

#: Public name -> the module that defines it (imported on first access).
_LAZY: dict[str, str] = {
    "ALL_ADVICE": "tfprof_lite.api",
    "advise": "tfprof_lite.api",
    "profile": "tfprof_lite.api",
    "write_op_log": "tfprof_lite.api",
    "merge": "tfprof_lite.cluster",
    "InvalidInputError": "tfprof_lite.errors",
    "InvalidOptionError": "tfprof_lite.errors",
    "MissingDependencyError": "tfprof_lite.errors",
    "TfprofLiteError": "tfprof_lite.errors",
    "UsageError": "tfprof_lite.errors",
    "ProfileOptionBuilder": "tfprof_lite.options.builder",
    "Timeline": "tfprof_lite.outputs.chrome_trace",
    "Profiler": "tfprof_lite.profiler",
    "AdviceProto": "tfprof_lite.proto.messages",
    "GraphNodeProto": "tfprof_lite.proto.messages",
    "MultiGraphNodeProto": "tfprof_lite.proto.messages",
    "OpLogProto": "tfprof_lite.proto.messages",
    "Monitor": "tfprof_lite.session.monitor",
    "ProfileContext": "tfprof_lite.session.profile_context",
    # A TensorFlow ``SessionRunHook``: importing it imports TensorFlow.
    "ProfilerHook": "tfprof_lite.session.hooks",
    "__version__": "tfprof_lite.base.version",
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
