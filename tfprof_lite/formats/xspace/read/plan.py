"""An XSpace's steps, planned: :class:`XSpaceSteps`, what
:func:`tfprof_lite.formats.xspace.read.conversion.plan_steps` makes and
:func:`~tfprof_lite.formats.xspace.read.conversion.add_plan` adds to a model (re-exported there)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from tfprof_lite.formats.xspace.read.code import CodeSources
from tfprof_lite.formats.xspace.read.input import TraceInput
from tfprof_lite.formats.xspace.read.memory_steps import StepMemory
from tfprof_lite.formats.xspace.read.steps import StepSpan
from tfprof_lite.model.records import NodeSpec
from tfprof_lite.model.window import EventWindow
from tfprof_lite.model.xla_programs import XlaPrograms
from tfprof_lite.proto.steps import StepColumns

__all__ = ["XSpaceSteps"]

I64 = npt.NDArray[np.int64]


class XSpaceSteps:
    """The steps of one XSpace as step columns, and the graph nodes they name.

    ``tracer_ns[i]``: the exact durations (ns) of step ``i``'s GPU tracer
    records, in the order :meth:`ProfileModel.add_step` keeps them (an array).
    ``pending``: step index -> its memory records, joined into ``columns``
    when they are first read (:func:`add_plan` joins one step at a time).
    ``cut``: step number -> why it is no whole step (:mod:`~tfprof_lite.formats.xspace.read.cut`).
    """

    def __init__(
        self,
        numbers: list[int],
        columns: list[StepColumns],
        nodes: list[NodeSpec],
        source: str,
        tracer_ns: list[I64],
        code: CodeSources,
        pending: dict[int, StepMemory] | None = None,
        xla: XlaPrograms | None = None,
        cut: dict[int, str] | None = None,
    ) -> None:
        self.numbers = numbers
        self.xla = xla
        self._columns = columns
        self.pending = pending or {}
        self.nodes = nodes
        self.source = source
        self.tracer_ns = tracer_ns
        self.code = code
        self.cut = cut or {}
        self.input: TraceInput | None = None  # where each step went (xspace_input)
        self.spans: list[StepSpan | None] = []  # each step's own span (xspace_steps)
        #: The whole window (:func:`~tfprof_lite.formats.xspace.read.window.window_of`).
        self.window: EventWindow | None = None

    @property
    def columns(self) -> list[StepColumns]:
        """Every step's columns, memory records included."""
        for step, memory in self.pending.items():
            self._columns[step] = memory.join(self._columns[step])
        self.pending = {}
        return self._columns

    def take_steps(self) -> Iterator[tuple[int, StepColumns, I64]]:
        """(number, columns, tracer durations) of each step, emptying the plan
        first and joining each step's memory records only when it is taken."""
        steps = list(zip(self.numbers, self._columns, self.tracer_ns, strict=False))
        pending = self.pending
        self._columns, self.tracer_ns, self.pending = [], [], {}
        steps.reverse()
        index = 0
        while steps:
            number, cols, exact = steps.pop()
            memory = pending.pop(index, None)
            index += 1
            yield number, cols if memory is None else memory.join(cols), exact
            del cols, exact, memory
