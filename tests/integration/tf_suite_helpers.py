"""Shared pieces of ``test_tf_suite_parity.py`` and ``test_tf_suite_steps.py``: the
option builder, TF1's FULL_TRACE run options and our reports written to a file (the
``Profiler`` views and the one-shot ``profile``), read back as text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")


import tfprof_lite  # noqa: E402

tf1 = tf.compat.v1
BUILDER = tfprof_lite.ProfileOptionBuilder
FULL_TRACE = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
VIEW_METHODS = {
    "graph": "profile_graph",
    "scope": "profile_name_scope",
    "code": "profile_python",
    "op": "profile_operations",
}


def ours_text(profiler: Any, view: str, options: dict[str, Any], path: Path) -> str:
    """Our report of ``view`` written to ``path`` (file output), as text."""
    getattr(profiler, VIEW_METHODS[view])(dict(options, output=f"file:outfile={path}"))
    return path.read_text()


def one_shot_text(graph: Any, run_meta: Any, view: str, options: Any, path: Path) -> str:
    """``tfprof_lite.profile`` (the one-shot API) with file output, as text."""
    opts = dict(options, output=f"file:outfile={path}")
    tfprof_lite.profile(graph, run_meta=run_meta, cmd=view, options=opts)
    return path.read_text()
