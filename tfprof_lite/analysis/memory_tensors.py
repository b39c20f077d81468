"""Output tensors of the ops the memory profile lists (:class:`LiveTensor`), and
:class:`ProfileTensors`, which reads them for a step loaded from a ProfileProto
from the step's memory columns, one node at a time and only when asked.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tfprof_lite.model.dtypes import node_dtype
from tfprof_lite.model.execs import StepExecs
from tfprof_lite.model.profile import ProfileModel

__all__ = ["LiveTensor", "ProfileTensors"]


@dataclass(frozen=True)
class LiveTensor:
    """An output tensor of an op holding memory at the peak.

    ``shape`` is None when unknown; ``bytes`` is the larger of the requested and
    allocated size.
    """

    node: str
    slot: int
    shape: list[int] | None
    dtype: str
    bytes: int

    def label(self) -> str:
        """``name:slot dtype[d0,d1]`` (shape ``?`` when unknown)."""
        dims = "?" if self.shape is None else ",".join(str(d) for d in self.shape)
        kind = self.dtype or "tensor"
        return f"{self.node}:{self.slot} {kind}[{dims}]"


class ProfileTensors:
    """Output tensors of a loaded step's nodes, from each node's first memory
    record (bytes per slot; shapes and dtypes from the graph)."""

    def __init__(self, model: ProfileModel, execs: StepExecs) -> None:
        self.model = model
        self.execs = execs
        self._first_row: dict[int, int] | None = None
        self._outs: tuple[list[int], list[int], list[int]] | None = None

    def of(self, nid: int) -> list[LiveTensor]:
        """The node's tensors with non-zero bytes, by slot."""
        if self._first_row is None:
            nodes = self.execs.mem["node"].tolist()
            # Later rows first, so that each node keeps its first row.
            self._first_row = dict(zip(reversed(nodes), range(len(nodes) - 1, -1, -1)))
        first = self._first_row.get(nid)
        if first is None:
            return []
        model = self.model
        shapes = model.output_shapes[nid]
        dtype = node_dtype(model, nid)
        name = model.names[nid]
        return [
            LiveTensor(name, slot, shapes.get(slot), dtype, nbytes)
            for slot, nbytes in sorted(self._outputs(first).items())
            if nbytes
        ]

    def _outputs(self, row: int) -> dict[int, int]:
        """slot -> bytes of memory record ``row`` (a later entry of a slot wins)."""
        if self._outs is None:
            outs = self.execs.outs
            order = np.argsort(outs["mem"], kind="stable")
            # bounds[r]:bounds[r + 1] are memory row r's outputs in ``order``.
            rows = np.arange(len(self.execs.mem) + 1)
            self._outs = (
                np.searchsorted(outs["mem"][order], rows).tolist(),
                outs["slot"][order].tolist(),
                outs["bytes"][order].tolist(),
            )
        bounds, slots, sizes = self._outs
        lo, hi = bounds[row], bounds[row + 1]
        return {slots[i]: sizes[i] for i in range(lo, hi)}
