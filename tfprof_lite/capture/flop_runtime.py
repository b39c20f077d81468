"""What a RunMetadata says about a graph's nodes, and the shape rules of the FLOP walk.

Contract: :class:`RuntimeIndex` indexes one RunMetadata by node name: run
counts on the canonical device (tfprof's rule), output shapes per slot (merged
over executions: differing dims become unknown) and the feeds recorded as
``_arg_<name>_<slot>_<n>``. The shape helpers work on
:data:`~tfprof_lite.model.flops.Shape` tuples (``None``: unknown rank or dim);
:func:`infer_output` knows a few rules (identity-like, elementwise, MatMul) for
outputs TensorFlow's own inference left unknown. No TensorFlow import.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from tfprof_lite.model.devices import DEVICE_CANONICAL, classify_device
from tfprof_lite.model.flops import ELEMENT_COSTS, Dim, Shape, words

__all__ = [
    "SAME_SHAPE_OPS",
    "Runtime",
    "RuntimeIndex",
    "as_list",
    "attr_getter",
    "broadcast",
    "compatible",
    "dims",
    "infer_output",
    "known",
    "merge",
    "merge_runtime",
    "runtime_index",
]

_ARG_RE = re.compile(r"^_arg_(.+)_(\d+)_(\d+)$")


@dataclass
class Runtime:
    """What one RunMetadata says about one node name."""

    runs: int = 0
    device: str = ""
    outputs: dict[int, Shape] = field(default_factory=dict)


def merge_runtime(old: Shape, new: Shape) -> Shape:
    """Shapes recorded for the same output in several executions; differing dims -> ?."""
    if old is None or new is None or len(old) != len(new):
        return None
    return tuple(a if a == b else None for a, b in zip(old, new))


class RuntimeIndex:
    """RunMetadata records by node name: tfprof's run counts and output shapes."""

    def __init__(self, run_meta: Any) -> None:
        self.meta = run_meta
        self.by_name: dict[str, Runtime] = {}
        for dev in run_meta.step_stats.dev_stats:
            device = dev.device.lower()
            canonical = classify_device(device) == DEVICE_CANONICAL
            for ns in dev.node_stats:
                self._add(ns, device, canonical)
        self.names = sorted(self.by_name)
        self.feeds: dict[str, dict[int, Shape]] = {}
        for name, stats in self.by_name.items():
            match = _ARG_RE.match(name)
            if match and 0 in stats.outputs:
                self.feeds.setdefault(match.group(1), {})[int(match.group(2))] = stats.outputs[0]

    def _add(self, ns: Any, device: str, canonical: bool) -> None:
        name = ns.node_name.split(":", 1)[0]
        stats = self.by_name.setdefault(name, Runtime())
        if canonical:
            if not stats.device:
                stats.device = device
            if device == stats.device and ns.all_start_micros > 0:
                stats.runs += 1
        for out in ns.output:
            dims = out.tensor_description.shape
            shape: Shape = None
            if not dims.unknown_rank:
                shape = tuple(d.size if d.size >= 0 else None for d in dims.dim)
            slot = int(out.slot)
            stats.outputs[slot] = (
                merge_runtime(stats.outputs[slot], shape) if slot in stats.outputs else shape
            )

    def get(self, name: str) -> Runtime | None:
        """The records of node ``name``, if any."""
        return self.by_name.get(name)

    def instance_prefixes(self, base: str, kind: str) -> list[str]:
        """``<base>/<kind>/_<k>`` prefixes present among the record names."""
        start = f"{base}/{kind}/_"
        found: set[str] = set()
        pos = bisect.bisect_left(self.names, start)
        while pos < len(self.names) and self.names[pos].startswith(start):
            digits = self.names[pos][len(start) :].split("/", 1)[0]
            if digits.isdigit():
                found.add(start + digits)
            pos += 1
        return sorted(found)


# --------------------------------------------------------------------- shapes
def dims(tensor_shape: Any) -> Shape:
    """A ``tf.TensorShape`` (or TensorShapeProto via tf.TensorShape) as a Shape."""
    if tensor_shape.rank is None:
        return None
    return tuple(tensor_shape.as_list())


def merge(static: Shape, runtime: Shape | None) -> Shape:
    """Static dims completed by a runtime shape (static wins on conflicts)."""
    if runtime is None:
        return static
    if static is None:
        return runtime
    if len(static) != len(runtime):
        return static
    return tuple(s if s is not None else r for s, r in zip(static, runtime))


def known(shape: Shape) -> bool:
    """Whether every dim of ``shape`` is known."""
    return shape is not None and all(d is not None for d in shape)


def compatible(a: Shape, b: Shape) -> bool:
    """Whether two shapes can describe the same tensor."""
    if a is None or b is None:
        return True
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def attr_getter(op: Any) -> Callable[[str], Any]:
    """``op``'s attributes by name (None if absent; bytes decoded)."""

    def attr(name: str) -> Any:
        try:
            value = op.get_attr(name)
        except (ValueError, TypeError):
            return None
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        if isinstance(value, list) and value and isinstance(value[0], bytes):
            return [v.decode("utf-8", "replace") for v in value]
        return value

    return attr


#: Op types whose first output has their first input's shape.
SAME_SHAPE_OPS = frozenset(
    words(
        "Identity Snapshot StopGradient PreventGradient CheckNumerics CheckNumericsV2 BiasAdd "
        "BiasAddV1 Cast ZerosLike OnesLike Softmax LogSoftmax"
    )
)


def broadcast(a: Shape, b: Shape) -> Shape:
    """Numpy broadcasting of two shapes (unknown dims stay unknown unless the other is > 1)."""
    if a is None or b is None:
        return None
    rank = max(len(a), len(b))
    a2 = (1,) * (rank - len(a)) + tuple(a)
    b2 = (1,) * (rank - len(b)) + tuple(b)
    out: list[Dim] = []
    for x, y in zip(a2, b2):
        if x == 1 or (x is None and y is not None and y > 1):
            out.append(y)
        elif y == 1 or (y is None and x is not None and x > 1) or x == y:
            out.append(x)
        else:
            out.append(None)
    return tuple(out)


def infer_output(op: Any, slot: int, inputs: list[Shape]) -> Shape:
    """A few shape rules for outputs TensorFlow left unknown after re-inference."""
    kind = op.type
    if kind == "IdentityN":
        return inputs[slot] if slot < len(inputs) else None
    if slot != 0 or not inputs:
        return None
    if kind in SAME_SHAPE_OPS or (kind in ELEMENT_COSTS and len(inputs) == 1):
        return inputs[0]
    if kind in ELEMENT_COSTS and len(inputs) == 2:
        return broadcast(inputs[0], inputs[1])
    if kind == "MatMul" and len(inputs) == 2 and inputs[0] is not None and inputs[1] is not None:
        attr = attr_getter(op)
        if len(inputs[0]) == 2 and len(inputs[1]) == 2:
            rows = inputs[0][1 if attr("transpose_a") else 0]
            return (rows, inputs[1][0 if attr("transpose_b") else 1])
    return None


def as_list(shape: Shape) -> list[Dim] | None:
    """``shape`` as TensorFlow's ``TensorShape`` argument."""
    return None if shape is None else list(shape)


def runtime_index(run_meta: Any) -> RuntimeIndex | None:
    """The index of ``run_meta`` (ours, TensorFlow's or bytes); None without step stats."""
    if run_meta is None:
        return None
    from tfprof_lite.proto import messages as pb
    from tfprof_lite.proto.codec import parse

    meta = parse(pb.RunMetadata, run_meta, "run_meta")
    return RuntimeIndex(meta) if meta.HasField("step_stats") else None
