"""What a FLOP formula sees of one op (:class:`OpInfo`) and how it fails
(:class:`FlopError` with a ``REASON_*``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Optional

from tfprof_lite.model.flops.conventions import REASON_INCOMPLETE_SHAPE, FlopConventions

__all__ = ["Dim", "FlopError", "Formula", "OpInfo", "Shape", "fmt"]

Dim = Optional[int]
#: A tensor shape: dims (``None`` = unknown dim) or ``None`` for an unknown rank.
Shape = Optional[tuple[Dim, ...]]


class FlopError(Exception):
    """A formula could not produce a value (``reason`` is one of ``REASON_*``)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class OpInfo:
    """What a formula sees of one op: type, data input/output shapes, attributes.

    ``attr(name)`` returns the attribute as a Python value (strings decoded), or
    None when the op has no such attribute.
    """

    name: str
    op: str
    inputs: tuple[Shape, ...]
    outputs: tuple[Shape, ...]
    attr: Callable[[str], Any] = field(default=lambda _name: None, repr=False)

    def input(self, index: int) -> tuple[int, ...]:
        """Fully defined shape of data input ``index`` (else FlopError)."""
        return _full(self.inputs[index] if index < len(self.inputs) else None, f"input {index}")

    def output(self, index: int = 0) -> tuple[int, ...]:
        """Fully defined shape of output ``index`` (else FlopError)."""
        return _full(self.outputs[index] if index < len(self.outputs) else None, f"output {index}")

    def dim(self, index: int, axis: int) -> int:
        """One known dim of data input ``index`` (else FlopError)."""
        shape = self.inputs[index] if index < len(self.inputs) else None
        if shape is None or not -len(shape) <= axis < len(shape) or shape[axis] is None:
            raise FlopError(REASON_INCOMPLETE_SHAPE, f"input {index} dim {axis} of {fmt(shape)}")
        return int(shape[axis])  # type: ignore[arg-type]


Formula = Callable[[OpInfo, FlopConventions], int]


def fmt(shape: Shape) -> str:
    """A shape as text: ``[?, 8]``, ``<unknown rank>``."""
    if shape is None:
        return "<unknown rank>"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _full(shape: Shape, what: str) -> tuple[int, ...]:
    if shape is None or any(d is None for d in shape):
        raise FlopError(REASON_INCOMPLETE_SHAPE, f"{what} shape {fmt(shape)}")
    return tuple(int(d) for d in shape)  # type: ignore[arg-type]
