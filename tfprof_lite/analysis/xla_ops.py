"""Which ops XLA clusters leave aside, and the names the compatibility check uses.

* :data:`TARGETS`: the XLA JIT device types a graph can be checked against.
* :func:`host_kind`: the *host kind* of an op (saver, summary, initializer,
  input, source, control), or ``""`` for a compute op; :data:`HOST_KINDS` lists
  them in display order, :data:`VARIABLE_OPS` the op types creating variables.
* :func:`hint`: why ops of a type usually have no XLA kernel, in a few words.
* ``TAG_*``: the op-log type prefixes a profile carries the result in.

The report itself is :mod:`tfprof_lite.analysis.xla_compat`. No TensorFlow.
"""

from __future__ import annotations

import re

__all__ = [
    "HOST_KINDS",
    "TAG_COMPATIBLE",
    "TAG_HOST",
    "TAG_INCOMPATIBLE",
    "TAG_REASON",
    "TARGETS",
    "VARIABLE_OPS",
    "hint",
    "host_kind",
]

#: XLA JIT device types a graph can be checked against.
TARGETS = ("XLA_CPU_JIT", "XLA_GPU_JIT")
#: Host kinds, in display order.
HOST_KINDS = ("saver", "summary", "initializer", "input", "source", "control")

TAG_COMPATIBLE = "_xla_compatible:"
TAG_INCOMPATIBLE = "_xla_incompatible:"
TAG_REASON = "_xla_reason:"
TAG_HOST = "_xla_host:"

_SAVER_OPS = frozenset(
    {"SaveV2", "RestoreV2", "Save", "Restore", "SaveSlices", "RestoreSlice"}
    | {"MergeV2Checkpoints", "ShardedFilename", "ShardedFilespec"}
)
_SAVER_SCOPE = re.compile(r"save(_\d+)?/")
_SUMMARY_OP = re.compile(r".*Summary.*")
_INIT_OPS = frozenset({"IsVariableInitialized", "VarIsInitializedOp"})
_INIT_NAME = re.compile(r"(.*/)?Initializer(/.*)?|init(_\d+)?|report_uninitialized_\w+(/.*)?")
_ASSIGN_OPS = frozenset({"Assign", "AssignVariableOp"})
#: Op types that create variables (their ``<name>/Assign`` is an initialiser).
VARIABLE_OPS = frozenset({"VariableV2", "Variable", "VarHandleOp"})
_INPUT_OP = re.compile(r".*(Dataset|Iterator|Queue|Reader).*")
_SOURCE_OPS = frozenset(
    {"Const", "HostConst", "Placeholder", "PlaceholderV2", "PlaceholderWithDefault"}
    | VARIABLE_OPS
    | {"_Arg", "_Retval", "TemporaryVariable", "DestroyTemporaryVariable"}
)
_CONTROL_OPS = frozenset({"NoOp", "ControlTrigger"})

_HINTS = (
    (re.compile(r"(Eager)?PyFunc(Stateless)?"), "Python callback (tf.numpy_function/py_func)"),
    (re.compile(r"String.*|.*String|AsString|Substr|Regex.*|Decode.*|Encode.*"), "string op"),
    (
        re.compile(r"Enter|Exit|Switch|Merge|NextIteration|LoopCond|RefSwitch|RefMerge"),
        "TF1 control flow",
    ),
    (
        re.compile(
            r"(Sparse)?Apply\w+|Scatter(Add|Sub|Mul|Div|Min|Max|Update)|"
            r"ScatterNd(Add|Sub|Update|Max|Min)|Assign(Add|Sub)?|CountUpTo|VariableV2|Ref\w+"
        ),
        "reference variable: use resource variables (use_resource=True)",
    ),
    (re.compile(r"Print|PrintV2|Unique.*"), "host-only op"),
)


def host_kind(name: str, op: str, variables: frozenset[str] = frozenset()) -> str:
    """The host kind of op ``name`` of type ``op``, or ``""`` for a compute op.

    Args:
        name: the op's full name.
        op: its type.
        variables: names of the graph's variable ops (to recognise the
            ``<variable>/Assign`` initialisers).
    """
    if op in _SAVER_OPS or _SAVER_SCOPE.match(name):
        return "saver"
    if _SUMMARY_OP.fullmatch(op):
        return "summary"
    if op in _INIT_OPS or _INIT_NAME.fullmatch(name):
        return "initializer"
    if op in _ASSIGN_OPS and name.rpartition("/")[0] in variables:
        return "initializer"
    if _INPUT_OP.fullmatch(op):
        return "input"
    if op in _SOURCE_OPS:
        return "source"
    return "control" if op in _CONTROL_OPS else ""


def hint(op: str) -> str:
    """A short explanation of why ops of type ``op`` usually have no XLA kernel."""
    return next((text for pattern, text in _HINTS if pattern.fullmatch(op)), "")
