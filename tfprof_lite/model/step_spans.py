"""Steps as spans over a profile's window: each step's own span and the parts of it.

A TF1 RunMetadata is one step with nothing around it; an XSpace's steps are
spans over its window (:mod:`tfprof_lite.model.window`). What the model keeps
of them, whatever file they came from:

* :class:`StepSpan`: a step's root (a step marker such as ``train``, an
  inferred call) as the step's span (``StepExecs.span``), never as a node;
* :class:`TraceInput`: where each step's time went (input, device compute,
  copies, launch, idle, host) and the ``tf.data`` stages' time
  (``ProfileModel.trace_input``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = ["StepSpan", "TraceInput"]


class StepSpan(NamedTuple):
    """One step's own span: the name of its root (``train``, ``SessionRun``,
    ``step`` for a file's whole window) and its first and last microsecond
    (absolute, as the step's records), around every record of the step."""

    name: str
    start: int
    end: int

    def widened(self, other: StepSpan) -> StepSpan:
        """The span over both (one step of several hosts' files); this one's name."""
        return StepSpan(self.name, min(self.start, other.start), max(self.end, other.end))


@dataclass
class TraceInput:
    """Per step number, each part's microseconds (the producer's ``PARTS``); per
    stage (``Iterator::...`` full name), ``[total, self]`` µs summed over the
    steps in ``stages``."""

    steps: dict[int, dict[str, int]] = field(default_factory=dict)
    stages: dict[str, list[int]] = field(default_factory=dict)
