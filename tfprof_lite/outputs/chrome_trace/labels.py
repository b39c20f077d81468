"""TensorFlow's node labels: ``name = Op(a, b)`` and the GPU tracer's kernel labels.

TensorFlow matches ``timeline_label`` with the pattern ``(.*) = (.*)\\((.*)\\)``;
:func:`split_op_label` finds the same groups without the regex's backtracking,
and :func:`op_labels` splits the labels of a device's nodes.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "is_gputrace_device",
    "op_labels",
    "parse_kernel_label",
    "parse_op_label",
    "split_op_label",
]


def split_op_label(label: str) -> tuple[int, int, int]:
    r"""Where ``re.match(r"(.*) = (.*)\((.*)\)", label)`` (TensorFlow's pattern) puts
    its groups: ``(eq, open, close)`` for ``label[:eq]``, ``label[eq + 3:open]`` and
    ``label[open + 1:close]``; ``eq`` is -1 when it does not match.

    The same answer without the regex's backtracking: ``.`` stops at the first
    newline; the greedy groups take the last ``)``, the last ``(`` before it and the
    last `` = `` that ends before that ``(``.
    """
    newline = label.find("\n")
    if newline >= 0:
        label = label[:newline]
    close = label.rfind(")")
    start = label.rfind("(", 0, close) if close > 0 else -1
    eq = label.rfind(" = ", 0, start) if start > 0 else -1
    return eq, start, close


def parse_op_label(label: str) -> tuple[str, str, list[str]]:
    """``name = Op(a, b)`` -> (name, op, inputs); ``("unknown", "unknown", [])`` otherwise."""
    eq, start, close = split_op_label(label)
    if eq < 0:
        return "unknown", "unknown", []
    inputs = label[start + 1 : close]
    return label[:eq], label[eq + 3 : start], inputs.split(", ") if inputs else []


def parse_kernel_label(label: str, node_name: str) -> tuple[str, str]:
    """(node, op) of a GPU-tracer record: ``@@name:op#`` in the label, else the node name."""
    start = label.find("@@")
    end = label.find("#")
    if start >= 0 and end >= 0 and start + 2 < end:
        node_name = label[start + 2 : end]
    fields = [*node_name.split(":"), "unknown"]
    return fields[0], fields[1]


def is_gputrace_device(device: str) -> bool:
    """Whether ``device`` holds GPU-tracer records (a stream or memcpy device)."""
    return "/stream:" in device or "/memcpy" in device


def op_labels(names: Sequence[str], labels: Sequence[str]) -> tuple[list[str], list[str]]:
    """(ops, input texts) of nodes from their ``name = Op(a, b)`` labels: ``unknown``
    and no inputs when a label does not match; ``RecvTensor`` nodes have op
    ``RecvTensor`` and no inputs."""
    ops: list[str] = []
    inputs: list[str] = []
    for name, label in zip(names, labels):
        eq, start, close = split_op_label(label)
        if eq < 0 or name == "RecvTensor":
            ops.append("RecvTensor" if name == "RecvTensor" else "unknown")
            inputs.append("")
        else:
            ops.append(label[eq + 3 : start])
            inputs.append(label[start + 1 : close])
    return ops, inputs
