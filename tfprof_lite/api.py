"""The one-shot functions of ``tf.compat.v1.profiler``: ``profile``, ``advise``,
``write_op_log``.

Each ``profile``/``advise`` call builds a fresh, independent profile
(:func:`tfprof_lite.ingest.one_shot_model`: the RunMetadata, when given and
holding step stats, becomes step 0), exactly like TensorFlow's; an ongoing
:class:`~tfprof_lite.profiler.Profiler` is untouched.
"""

from __future__ import annotations

import os
from typing import Any

from tfprof_lite.base.writing import write_atomic, write_stdout
from tfprof_lite.capture.oplog import is_tf_graph
from tfprof_lite.errors import InvalidInputError, InvalidOptionError, MissingDependencyError
from tfprof_lite.ingest import default_tf_graph, one_shot_model, parse_op_log, parse_run_meta
from tfprof_lite.model.flops import FlopConventions
from tfprof_lite.options.builder import ProfileOptionBuilder
from tfprof_lite.options.options import Options
from tfprof_lite.outputs.answer import answer_query
from tfprof_lite.views import make_view

__all__ = ["ALL_ADVICE", "advise", "profile", "write_op_log"]

ALL_ADVICE: dict[str, dict[str, str]] = {
    "ExpensiveOperationChecker": {},
    "AcceleratorUtilizationChecker": {},
    "JobChecker": {},
    "OperationChecker": {},
    "InputPipelineChecker": {},
    "StepTimeChecker": {},
    "MemoryChecker": {},
}

_DEFAULT = object()
_CMDS = ("scope", "graph", "op", "code")


def profile(
    graph: Any = None,
    run_meta: Any = None,
    op_log: Any = None,
    cmd: str = "scope",
    options: Any = _DEFAULT,
    *,
    flops: str | FlopConventions = "tf",
) -> Any:
    """Profile a model once (``tf.compat.v1.profiler.profile``).

    Args:
        graph: ``tf.Graph``, GraphDef or None (see
            :func:`tfprof_lite.ingest.one_shot_model`).
        run_meta: RunMetadata of one run, or None for static analysis only.
        op_log: extra OpLogProto.
        cmd: ``scope``, ``graph``, ``op`` or ``code``.
        options: option dict; default
            ``ProfileOptionBuilder.trainable_variables_parameter()``.
        flops: ``"tf"`` (default: TensorFlow's numbers), ``"corrected"`` or a
            ``FlopConventions``: FLOPs from ``tfprof_lite.capture.flops`` instead
            (needs TensorFlow; see ``docs/flops.md``).

    Returns:
        GraphNodeProto (scope, graph) or MultiGraphNodeProto (op, code).

    Raises:
        InvalidOptionError: unknown ``cmd`` or invalid options.
    """
    if cmd not in _CMDS:
        raise InvalidOptionError(f"unknown cmd: {cmd}; use one of {', '.join(_CMDS)}")
    if options is _DEFAULT or (isinstance(options, int) and options == 0):
        options = ProfileOptionBuilder.trainable_variables_parameter()
    opts = options if isinstance(options, Options) else Options.from_dict(options)
    model = one_shot_model(graph, run_meta, op_log, add_trace=cmd == "code", flops=flops)
    return answer_query(model, make_view(cmd, model), opts)


def advise(graph: Any = None, run_meta: Any = None, options: Any = _DEFAULT) -> Any:
    """Run the advisor's checkers once (``tf.compat.v1.profiler.advise``).

    Args:
        graph: ``tf.Graph``, GraphDef or None.
        run_meta: RunMetadata of one run.
        options: checker name -> options dict; default :data:`ALL_ADVICE`.

    Returns:
        AdviceProto.
    """
    from tfprof_lite.advisor import run_advisor

    if options is _DEFAULT or (isinstance(options, int) and options == 0):
        # TF treats options == 0 (its default sentinel) as "every checker".
        options = {name: dict(opts) for name, opts in ALL_ADVICE.items()}
    model = one_shot_model(graph, run_meta, None, add_trace=True)
    result = run_advisor(model, options)
    if result.text:
        write_stdout(result.text)
    return result.advice


def write_op_log(
    graph: Any,
    log_dir: str | os.PathLike[str],
    op_log: Any = None,
    run_meta: Any = None,
    add_trace: bool = True,
) -> None:
    """Write ``<log_dir>/tfprof_log``: the default op log merged with ``op_log``.

    Needs a ``tf.Graph`` (the op log is built from its ops); the file is the
    same OpLogProto TensorFlow writes, so TensorFlow's tfprof reads it.

    Raises:
        MissingDependencyError: TensorFlow is not installed.
        InvalidInputError: ``graph`` is not a ``tf.Graph``.
    """
    if graph is None:
        graph = default_tf_graph()
    if graph is None:
        raise MissingDependencyError(
            "write_op_log needs a tf.Graph; install TensorFlow and pass the graph"
        )
    if not is_tf_graph(graph):
        raise InvalidInputError(
            f"write_op_log: graph must be a tf.Graph, got {type(graph).__name__}"
        )
    from tfprof_lite.capture.oplog import OpLogBuilder

    meta = parse_run_meta(run_meta)
    user_log = parse_op_log(op_log)
    merged = OpLogBuilder(graph, add_trace=add_trace).build(meta, user_log)
    os.makedirs(log_dir, exist_ok=True)
    write_atomic(os.path.join(log_dir, "tfprof_log"), merged.SerializeToString())
