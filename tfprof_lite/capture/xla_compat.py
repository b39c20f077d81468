"""Which ops of a ``tf.Graph`` XLA can compile, from TensorFlow's own kernel registry.

Needs TensorFlow (imported when a function is called, not at import time).

Contract:

* :func:`check_graph` walks the graph's nodes (and, for function-calling ops
  such as ``While``, ``If`` and ``PartitionedCall``, the bodies of the called
  library functions, recursively) and asks
  ``tensorflow.python.framework.kernels.get_registered_kernels_for_op`` whether
  the target device type (``XLA_CPU_JIT`` or ``XLA_GPU_JIT``) has a kernel for
  the op **whose type constraints accept the node's attributes** (e.g.
  ``Identity`` has an ``XLA_CPU_JIT`` kernel, but not for ``T=string``). No
  hand-written op list is involved; only the *host kind* of an op (saver,
  summary, initializer, input, source, control) comes from name/type rules
  (:func:`tfprof_lite.analysis.xla_ops.host_kind`) and the graph's variable
  collections. The result is an :class:`~tfprof_lite.analysis.xla_compat.XlaCompatReport`.
* TensorFlow registers the XLA compilation kernels lazily, the first time the
  process needs them; before that the registry lists none. :func:`ensure_xla_kernels`
  checks for them and, if missing, runs one tiny ``jit_scope`` graph in a
  throw-away CPU-only ``Session`` (bypassing any ``ProfileContext``/``Monitor``
  patch, so it is never counted as a step). In TensorFlow 2.21 any first
  ``Session.run`` or eager op also registers them (see ``docs/xla_compat.md``);
  the JIT run is the trigger that must keep working in any version. If the
  kernels are still missing, :class:`XlaUnavailableError` is raised rather than
  reporting every op as incompatible.
* :func:`annotate` stores the result in a profiler's op log
  (``_xla_compatible:<target>`` / ``_xla_incompatible:<target>`` /
  ``_xla_reason:<target>:<why>`` / ``_xla_host:<kind>`` types), so every
  ``profile_<step>`` written afterwards carries it and
  ``XlaCompatibilityChecker`` / ``tfprof-lite xla-compat`` can report it
  without TensorFlow. :func:`op_log` returns the same as an OpLogProto for
  ``Profiler(graph, op_log=...)`` or ``write_op_log``.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from tfprof_lite.analysis.xla_compat import OpInfo, XlaCompatReport, build_report, op_log_of
from tfprof_lite.analysis.xla_ops import TARGETS, VARIABLE_OPS, host_kind
from tfprof_lite.capture.oplog import is_tf_graph
from tfprof_lite.errors import InvalidOptionError, TfprofLiteError

__all__ = [
    "TARGETS",
    "XlaUnavailableError",
    "annotate",
    "check_graph",
    "ensure_xla_kernels",
    "op_log",
    "xla_kernels_registered",
]

#: An op every XLA JIT device registers a kernel for (the registration probe).
PROBE_OP = "Identity"
_trigger_lock = threading.Lock()


class XlaUnavailableError(TfprofLiteError):
    """This TensorFlow build registers no XLA compilation kernels for the target."""


def check_target(target: str) -> str:
    """``target`` if it is a known XLA JIT device type.

    Raises:
        InvalidOptionError: any other value.
    """
    if target not in TARGETS:
        raise InvalidOptionError(f"unknown XLA target {target!r}; use one of {', '.join(TARGETS)}")
    return target


def xla_kernels_registered(target: str = "XLA_CPU_JIT") -> bool:
    """Whether TensorFlow's kernel registry lists ``target`` kernels yet."""
    from tensorflow.python.framework import kernels

    found = kernels.get_registered_kernels_for_op(PROBE_OP).kernel
    return any(k.device_type == target for k in found)


def _unpatched_run() -> Any:
    """``BaseSession.run`` without any tfprof_lite wrapper around it."""
    from tensorflow.python.client import session as tf_session

    return inspect.unwrap(tf_session.BaseSession.run)


def _jit_trigger_run() -> None:
    """Compile one tiny graph with XLA in a throw-away, CPU-only session."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default(), tf1.xla.experimental.jit_scope():
        x = tf.constant([1.0, 2.0])
        y = x * x + x
    config = tf1.ConfigProto(device_count={"GPU": 0})
    with tf1.Session(graph=graph, config=config) as sess:
        _unpatched_run()(sess, y)


def ensure_xla_kernels(target: str = "XLA_CPU_JIT") -> None:
    """Make sure TensorFlow registered the XLA kernels of ``target``.

    Raises:
        InvalidOptionError: unknown ``target``.
        XlaUnavailableError: still no kernels after a JIT-compiled run.
    """
    check_target(target)
    if xla_kernels_registered(target):
        return
    with _trigger_lock:
        if not xla_kernels_registered(target):
            _jit_trigger_run()
    if not xla_kernels_registered(target):
        raise XlaUnavailableError(
            f"TensorFlow registered no {target} kernels even after an XLA-compiled run; "
            "this TensorFlow build may lack XLA"
        )


def _attr_types(node: Any, name: str) -> list[int]:
    """The DataType values of attribute ``name`` of ``node`` (type or list of types)."""
    if name not in node.attr:
        return []
    value = node.attr[name]
    which = value.WhichOneof("value")
    if which == "type":
        return [value.type]
    if which == "list":
        return list(value.list.type)
    return []


def _called_functions(node: Any) -> list[str]:
    """Library functions a node calls through ``func`` attributes."""
    out: list[str] = []
    for value in node.attr.values():
        which = value.WhichOneof("value")
        if which == "func":
            out.append(value.func.name)
        elif which == "list":
            out.extend(f.name for f in value.list.func)
    return out


def _dtype_name(value: int) -> str:
    from tensorflow.python.framework import dtypes

    try:
        return str(dtypes.as_dtype(value).name)
    except TypeError:
        return str(value)


class _KernelChecker:
    """Why one node cannot be compiled for ``target`` (``""``: it can)."""

    def __init__(self, graph_def: Any, target: str) -> None:
        self.target = target
        self.functions = {f.signature.name: f for f in graph_def.library.function}
        self._kernels: dict[str, list[Any]] = {}
        self._function_reasons: dict[str, str] = {}

    def kernels(self, op: str) -> list[Any]:
        """The target's KernelDefs for op type ``op`` (none for unknown ops)."""
        found = self._kernels.get(op)
        if found is None:
            from tensorflow.python.framework import kernels

            try:
                listed = kernels.get_registered_kernels_for_op(op).kernel
            except Exception:  # an op type this TensorFlow does not know
                listed = []
            found = self._kernels[op] = [k for k in listed if k.device_type == self.target]
        return found

    def reason(self, node: Any, follow_functions: bool = True) -> str:
        """Why ``node`` cannot be compiled (``""`` when it can)."""
        if node.op in self.functions:  # a direct call of a library function
            inner = self.function_reason(node.op) if follow_functions else ""
            return f"calls {node.op}: {inner}" if inner else ""
        defs = self.kernels(node.op)
        if not defs:
            return f"no {self.target} kernel for {node.op}"
        why = self._attr_reason(node, defs)
        if why or not follow_functions:
            return why
        for name in _called_functions(node):
            inner = self.function_reason(name)
            if inner:
                return f"calls {name}: {inner}"
        return ""

    def _attr_reason(self, node: Any, defs: Sequence[Any]) -> str:
        rejected: list[tuple[str, int]] = []
        for kernel in defs:
            bad = [
                (c.name, value)
                for c in kernel.constraint
                for value in _attr_types(node, c.name)
                if value not in c.allowed_values.list.type
            ]
            if not bad:
                return ""
            rejected = rejected or bad
        name, value = rejected[0]
        return f"{self.target} kernel of {node.op} does not accept {name}={_dtype_name(value)}"

    def function_reason(self, name: str) -> str:
        """Why library function ``name`` cannot be compiled (its first bad node)."""
        if name in self._function_reasons:
            return self._function_reasons[name]
        self._function_reasons[name] = ""  # recursion guard
        why = ""
        fdef = self.functions.get(name)
        for node in fdef.node_def if fdef is not None else ():
            inner = self.reason(node)
            if inner:
                why = f"{node.name} ({node.op}): {inner}"
                break
        self._function_reasons[name] = why
        return why


def _graph_def(graph: Any) -> tuple[Any, frozenset[str]]:
    """TensorFlow's GraphDef of ``graph`` and the names of its variable initialisers."""
    if is_tf_graph(graph):
        from tensorflow.python.framework import ops

        names: set[str] = set()
        for key in (ops.GraphKeys.GLOBAL_VARIABLES, ops.GraphKeys.LOCAL_VARIABLES):
            for var in graph.get_collection(key):
                initializer = getattr(var, "initializer", None)
                if initializer is not None:
                    names.add(initializer.name)
        return graph.as_graph_def(), frozenset(names)
    from tensorflow.core.framework import graph_pb2

    data = graph if isinstance(graph, (bytes, bytearray)) else graph.SerializeToString()
    return graph_pb2.GraphDef.FromString(bytes(data)), frozenset()


def _inputs(node: Any) -> tuple[str, ...]:
    return tuple(text.lstrip("^").split(":", 1)[0] for text in node.input)


def check_graph(graph: Any, target: str = "XLA_CPU_JIT", *, depth: int = 1) -> XlaCompatReport:
    """Check every op of ``graph`` against ``target``'s XLA kernels.

    Args:
        graph: a ``tf.Graph``, or a GraphDef (TensorFlow's, ours, or its bytes;
            then initialisers are recognised by name only).
        target: ``XLA_CPU_JIT`` or ``XLA_GPU_JIT``.
        depth: name-scope depth of the per-scope shares.

    Raises:
        InvalidOptionError: unknown ``target``.
        XlaUnavailableError: TensorFlow registers no kernels for ``target``.
    """
    ensure_xla_kernels(target)
    graph_def, initializers = _graph_def(graph)
    checker = _KernelChecker(graph_def, target)
    variables = frozenset(n.name for n in graph_def.node if n.op in VARIABLE_OPS)
    infos = []
    for node in graph_def.node:
        host = (
            "initializer" if node.name in initializers else host_kind(node.name, node.op, variables)
        )
        why = checker.reason(node, follow_functions=not host)
        infos.append(OpInfo(node.name, node.op, _inputs(node), not why, why, host))
    return build_report(target, infos, depth, source="graph")


def op_log(graph: Any, targets: Iterable[str] = ("XLA_CPU_JIT",), *, depth: int = 1) -> Any:
    """The compatibility of ``graph`` for ``targets`` as an OpLogProto (ours).

    Pass it to ``tfprof_lite.Profiler(graph, op_log=...)`` or
    ``tfprof_lite.write_op_log(graph, dir, op_log=...)``.
    """
    return op_log_of([check_graph(graph, t, depth=depth) for t in targets])


def annotate(
    profiler: Any,
    graph: Any = None,
    targets: Iterable[str] = ("XLA_CPU_JIT",),
    *,
    depth: int = 1,
) -> list[XlaCompatReport]:
    """Check ``graph`` and record the result in ``profiler``'s profile.

    Profiles written afterwards (``serialize_to_string``, ``ProfileContext``
    dumps) carry it. Graph nodes the profile does not have yet are added.

    Args:
        profiler: a :class:`tfprof_lite.Profiler` (e.g. ``pctx.profiler``).
        graph: the ``tf.Graph``; default: the graph the profiler follows.
        targets: XLA device types to check.
        depth: name-scope depth of the returned reports.

    Raises:
        ValueError: no ``graph`` given and the profiler follows none.
    """
    if graph is None:
        graph = profiler.graph
    if graph is None:
        raise ValueError("annotate needs the tf.Graph: pass graph=sess.graph")
    reports = [check_graph(graph, t, depth=depth) for t in targets]
    from tfprof_lite.model import decode

    model = profiler.model
    if is_tf_graph(graph) and any(op.name not in model.index for op in graph.get_operations()):
        from tfprof_lite.capture.oplog import graph_def_message

        model.add_graph(decode.graph_nodes(graph_def_message(graph)))
    model.add_op_log(*decode.op_log_entries(op_log_of(reports)))
    return reports
