"""XLA/JIT analysis: HLO module dumps, their drawings, and cluster compile/run time.

For TF1-style sessions with JIT on (``global_jit_level = ON_1`` plus
``TF_XLA_FLAGS=--tf_xla_cpu_global_jit`` on CPU, or ``jit_scope``) run with
``XLA_FLAGS="--xla_dump_to=DIR --xla_dump_hlo_as_dot"`` (see docs/xla.md):

* :func:`find_dumps` lists the HLO module dumps of ``DIR`` as
  :class:`HloModuleDump` records (module id, cluster, stage, format);
* :func:`render` (or :func:`render_file`, into one named file) draws one module
  with Graphviz's ``dot`` (SVG, PNG, ...), links other than relative ones and
  anchors dropped (:mod:`tfprof_lite.xla.links`), after
  shrinking it (:func:`prepare_dot`: oversized styles stripped, fusions
  collapsed, optional focus on one instruction, node cap);
* :func:`cluster_times` reads a profile (``Profiler`` or ``ProfileModel``) and
  reports each cluster's ``_XlaCompile`` and ``_XlaRun``/``XlaLaunch`` time per
  step, linked to its modules.

Nothing here imports TensorFlow; rendering runs Graphviz's ``dot`` program
(``apt-get install graphviz``; no Python package is needed), and the ``dot``
format (the prepared DOT text) needs nothing. Errors derive from
:class:`tfprof_lite.errors.TfprofLiteError` (see :mod:`tfprof_lite.xla.errors`).
"""

from __future__ import annotations

from tfprof_lite.xla.dumps import (
    FORMATS,
    STAGE_AFTER,
    STAGE_BEFORE,
    STAGE_PASS,
    HloModuleDump,
    cluster_of,
    find_dumps,
    parse_dump_name,
)
from tfprof_lite.xla.errors import (
    HloDumpError,
    InstructionNotFoundError,
    MissingDependencyError,
    RenderError,
)
from tfprof_lite.xla.render import (
    DEFAULT_MAX_NODES,
    list_instructions,
    output_stem,
    prepare_dot,
    render,
    render_file,
)
from tfprof_lite.xla.timing import (
    KIND_LAUNCH,
    KIND_SPLIT,
    ClusterTime,
    cluster_times,
    format_cluster_times,
)

__all__ = [
    "DEFAULT_MAX_NODES",
    "FORMATS",
    "KIND_LAUNCH",
    "KIND_SPLIT",
    "STAGE_AFTER",
    "STAGE_BEFORE",
    "STAGE_PASS",
    "ClusterTime",
    "HloDumpError",
    "HloModuleDump",
    "InstructionNotFoundError",
    "MissingDependencyError",
    "RenderError",
    "cluster_of",
    "cluster_times",
    "find_dumps",
    "format_cluster_times",
    "list_instructions",
    "output_stem",
    "parse_dump_name",
    "prepare_dot",
    "render",
    "render_file",
]
