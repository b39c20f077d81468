"""The one-shot functions of ``tf.compat.v1.profiler``: ``profile``, ``advise``,
``write_op_log``.

Each ``profile``/``advise`` call builds a fresh, independent profile (the
RunMetadata, when given and holding step stats, becomes step 0), exactly like
TensorFlow's; an ongoing :class:`~tfprof_lite.profiler.Profiler` is untouched.
"""

from __future__ import annotations

import os
from typing import Any

from tfprof_lite.base.writing import write_atomic
from tfprof_lite.capture.flops import FlopConventions, FlopsHook, resolve_flops_mode
from tfprof_lite.capture.oplog import is_tf_graph
from tfprof_lite.errors import InvalidInputError, InvalidOptionError, MissingDependencyError
from tfprof_lite.model import decode
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.options.builder import ProfileOptionBuilder
from tfprof_lite.options.options import Options
from tfprof_lite.outputs.emit import emit
from tfprof_lite.outputs.message import empty_message, view_message
from tfprof_lite.profiler import _default_tf_graph, emit_graph_timelines, run_query
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto.codec import parse
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


def _run_meta(run_meta: Any) -> Any:
    if run_meta is None:
        return None
    meta = parse(pb.RunMetadata, run_meta, "run_meta")
    return meta if meta.ByteSize() else None


def build_model(
    graph: Any,
    run_meta: Any,
    op_log: Any,
    add_trace: bool,
    flops: str | FlopConventions = "tf",
) -> ProfileModel:
    """A one-shot profile: graph nodes, RunMetadata as step 0, default + user op log.

    Args:
        graph: ``tf.Graph``, GraphDef (message or bytes) or None (TensorFlow's
            default graph when TensorFlow is imported and in graph mode).
        run_meta: RunMetadata (message or bytes) or None.
        op_log: user OpLogProto (message or bytes) or None.
        add_trace: whether the default op log records Python call stacks.
        flops: ``"tf"`` (TensorFlow's FLOPs), ``"corrected"`` or a
            ``FlopConventions`` (see ``docs/flops.md``).
    """
    conventions = resolve_flops_mode(flops)
    if graph is None:
        graph = _default_tf_graph()
    meta = _run_meta(run_meta)
    user_log = parse(pb.OpLogProto, op_log, "op_log") if op_log is not None else None
    # Opt-in corrected FLOPs (tfprof_lite.capture.flops): the hook is made before the
    # default op log so a bad input fails early, and applied after it.
    flops_hook = _flops_hook(graph, conventions, user_log)
    model = ProfileModel()
    if graph is not None and is_tf_graph(graph):
        from tfprof_lite.capture.oplog import OpLogBuilder, graph_def_message

        user_log = OpLogBuilder(graph, add_trace=add_trace).build(meta, user_log)
        graph = graph_def_message(graph)
    if graph is not None:
        model.add_graph(decode.graph_nodes(parse(pb.GraphDef, graph, "graph")))
    if meta is not None and meta.HasField("step_stats"):
        model.add_step(0, decode.step_records(meta))
    if user_log is not None:
        model.add_op_log(*decode.op_log_entries(user_log))
    if flops_hook is not None:
        flops_hook.apply(model, meta)
    return model


def _flops_hook(graph: Any, conventions: FlopConventions | None, user_log: Any) -> FlopsHook | None:
    """The corrected-FLOPs hook, or None for TensorFlow's numbers (the default).

    Names a user op log gives FLOPs are never overridden.
    """
    if conventions is None:
        return None
    skip = {e.name for e in user_log.log_entries if e.float_ops} if user_log else set()
    return FlopsHook(graph, conventions, skip)


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
        graph: ``tf.Graph``, GraphDef or None (see :func:`build_model`).
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
    model = build_model(graph, run_meta, op_log, add_trace=cmd == "code", flops=flops)
    view = make_view(cmd, model)
    if cmd == "graph" and opts.step < 0 and opts.output.type == "timeline":
        emit_graph_timelines(model, view, opts)
        return empty_message(cmd)
    result = run_query(model, view, opts)
    emit(result)
    return view_message(result)


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
    model = build_model(graph, run_meta, None, add_trace=True)
    return run_advisor(model, options)


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
        graph = _default_tf_graph()
    if graph is None:
        raise MissingDependencyError(
            "write_op_log needs a tf.Graph; install TensorFlow and pass the graph"
        )
    if not is_tf_graph(graph):
        raise InvalidInputError(
            f"write_op_log: graph must be a tf.Graph, got {type(graph).__name__}"
        )
    from tfprof_lite.capture.oplog import OpLogBuilder

    meta = _run_meta(run_meta)
    user_log = parse(pb.OpLogProto, op_log, "op_log") if op_log is not None else None
    merged = OpLogBuilder(graph, add_trace=add_trace).build(meta, user_log)
    os.makedirs(log_dir, exist_ok=True)
    write_atomic(os.path.join(log_dir, "tfprof_log"), merged.SerializeToString())
