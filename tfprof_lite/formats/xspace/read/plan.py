"""An XSpace's steps, planned: :class:`XSpaceSteps`, what
:func:`tfprof_lite.formats.xspace.read.conversion.plan_steps` makes and
:func:`~tfprof_lite.formats.xspace.read.conversion.add_plan` adds to a model (re-exported there)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from tfprof_lite.formats.xspace.read.code import CodeSources
from tfprof_lite.formats.xspace.read.input import TraceInput
from tfprof_lite.model.record_block import Block
from tfprof_lite.model.records import NodeSpec
from tfprof_lite.model.step_batch import add_records
from tfprof_lite.model.step_records import StepRecords
from tfprof_lite.model.window import EventWindow
from tfprof_lite.model.xla_programs import XlaPrograms
from tfprof_lite.proto.steps import StepColumns

if TYPE_CHECKING:
    from tfprof_lite.model.profile import ProfileModel

__all__ = ["XSpaceSteps"]

I64 = npt.NDArray[np.int64]


class XSpaceSteps:
    """The steps of one XSpace as the model's typed records, and the graph
    nodes they name.

    ``records``: every step's records and memory records
    (:class:`StepRecords`); ``numbers``/``spans``: the step numbers and each
    step's own span (None: none); ``cut``: step number -> why it is no whole
    step (:mod:`~tfprof_lite.formats.xspace.read.cut`).
    """

    def __init__(
        self,
        records: StepRecords,
        nodes: list[NodeSpec],
        source: str,
        code: CodeSources,
        xla: XlaPrograms | None = None,
        cut: dict[int, str] | None = None,
    ) -> None:
        self.records = records
        self.numbers, self.spans = records.numbers, records.spans
        self.xla = xla
        self.nodes = nodes
        self.source = source
        self.code = code
        self.cut = cut or {}
        self.input: TraceInput | None = None  # where each step went (xspace_input)
        #: The whole window (:func:`~tfprof_lite.formats.xspace.read.window.window_of`).
        self.window: EventWindow | None = None

    def step_block(self, index: int) -> Block:
        """Step ``index`` alone, as the model lays out its records."""
        return Block.of_records(self.records.take(index, index + 1))

    @property
    def columns(self) -> list[StepColumns]:
        """Every step's records in the RunMetadata shape the model reads them in
        (memory records placed): for inspection; :meth:`add_to` never makes them."""
        return [self.step_block(i).step_columns(0) for i in range(self.records.steps)]

    @property
    def tracer_ns(self) -> list[I64]:
        """Every step's exact GPU tracer durations (ns), in record order."""
        return [self.step_block(i).step_exact(0) for i in range(self.records.steps)]

    def add_to(self, model: ProfileModel) -> None:
        """Add the steps to ``model`` (:func:`add_records`)."""
        add_records(model, self.records)

    def release(self) -> None:
        """Drop the steps' records (the model holds them)."""
        self.records = StepRecords()
