"""Which steps to trace, dump and profile (TensorFlow's ``profile_context.py`` rules).

Shared by :class:`~tfprof_lite.session.profile_context.ProfileContext` and
:class:`~tfprof_lite.session.hooks.ProfilerHook`; imports no TensorFlow.

Contract: :class:`StepSchedule` decides per step. Explicit ``trace_steps`` are
traced as given (at most :data:`MAX_TRACED_STEPS` of them). With
``trace_steps=None`` ("auto tracing") nothing is traced during the first
:data:`WARMUP_STEPS` steps; afterwards a step is traced when its fetches (sorted
names joined by ``-``) were never traced before, or else with probability 2/11
(``random.Random(111).randint(0, 10) < 2``, so runs are reproducible) while the
profile covers less than half of the graph's nodes and the step is below
:data:`MAX_TRACED_STEPS`. Tracing stops for good once more than
:data:`MAX_TRACED_STEPS` steps were traced. ``dump_steps=None`` means ``{100}``.
What happens to a traced step is in :mod:`~tfprof_lite.session.recorder` and
:mod:`~tfprof_lite.session.base`.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterable
from typing import Callable

__all__ = [
    "MAX_TRACED_STEPS",
    "WARMUP_STEPS",
    "StepSchedule",
    "TraceDecision",
    "step_set",
]

#: Steps never auto-traced at the start of training (TensorFlow's value).
WARMUP_STEPS = 10
#: Upper bound of traced steps; also the default dump step.
MAX_TRACED_STEPS = 100


def step_set(steps: Iterable[int], what: str) -> list[int]:
    """``steps`` as a list of ints (duplicates kept, as TensorFlow counts them).

    Raises:
        TypeError: ``steps`` is not an iterable of integers.
    """
    if isinstance(steps, (str, bytes)):
        raise TypeError(f"{what} must be a collection of integer steps, got a string")
    out = []
    for step in steps:
        if isinstance(step, bool) or not hasattr(step, "__index__"):
            raise TypeError(f"{what} must contain integer steps, got {step!r}")
        out.append(int(step))
    return out


@dataclasses.dataclass
class TraceDecision:
    """The outcome of :meth:`StepSchedule.should_trace` for one step.

    Attributes:
        trace: whether to run the step with FULL_TRACE.
        new_fetch_key: the fetch key recorded as seen by this decision, if any.
    """

    trace: bool
    new_fetch_key: str | None = None


class StepSchedule:
    """Trace and dump decisions for a sequence of steps.

    Args:
        trace_steps: steps to trace, or None for automatic tracing.
        dump_steps: steps at which to write the profile, or None for ``{100}``.

    Raises:
        ValueError: more than :data:`MAX_TRACED_STEPS` trace steps.
        TypeError: steps that are not integers.
    """

    def __init__(self, trace_steps: Iterable[int] | None, dump_steps: Iterable[int] | None):
        self.auto_tracing = trace_steps is None
        self.trace_steps: set[int] = set()
        if trace_steps is not None:
            listed = step_set(trace_steps, "trace_steps")
            if len(listed) > MAX_TRACED_STEPS:
                raise ValueError(
                    f"Only support tracing up to {MAX_TRACED_STEPS} steps; "
                    f"got {len(listed)} trace_steps"
                )
            self.trace_steps = set(listed)
        self.dump_steps: set[int] = (
            {MAX_TRACED_STEPS} if dump_steps is None else set(step_set(dump_steps, "dump_steps"))
        )
        self.slow_steps: set[int] = self.dump_steps | self.trace_steps
        self.traced_steps = 0
        self._rng = random.Random(111)
        self._fetched: set[str] = set()

    def add_profile_steps(self, steps: Iterable[int]) -> None:
        """Trace (and visit) ``steps`` too: they carry an auto-profiling view."""
        chosen = set(steps)
        self.trace_steps |= chosen
        self.slow_steps |= chosen

    def is_slow(self, step: int, ordinal: int, forced: bool = False) -> bool:
        """Whether ``step`` may trace, dump or profile (else it runs untouched).

        Args:
            step: the step's number.
            ordinal: how many steps came before it in this capture (equals
                ``step`` when steps are counted by ``Session.run``).
            forced: ``trace_next_step``/``dump_next_step`` was requested.
        """
        if forced or step in self.slow_steps:
            return True
        return (
            self.auto_tracing and ordinal > WARMUP_STEPS and self.traced_steps <= MAX_TRACED_STEPS
        )

    def should_trace(
        self,
        step: int,
        ordinal: int,
        forced: bool,
        fetch_key: Callable[[], str | None],
        coverage: Callable[[], float],
    ) -> TraceDecision:
        """Decide whether to trace ``step``; counts the step as traced if so.

        Args:
            step: the step's number.
            ordinal: see :meth:`is_slow`.
            forced: ``trace_next_step`` was requested.
            fetch_key: returns the step's sorted, ``-``-joined fetch names (None
                if unknown); only called under automatic tracing.
            coverage: returns the profile's share of graph nodes seen so far.
        """
        if self.traced_steps > MAX_TRACED_STEPS:
            return TraceDecision(False)
        if step in self.trace_steps or forced:
            self.traced_steps += 1
            return TraceDecision(True)
        if not (self.auto_tracing and ordinal > WARMUP_STEPS):
            return TraceDecision(False)
        key = fetch_key()
        if key is not None and key not in self._fetched:
            self._fetched.add(key)
            self.traced_steps += 1
            return TraceDecision(True, key)
        if coverage() < 0.5 and ordinal < MAX_TRACED_STEPS and self._rng.randint(0, 10) < 2:
            self.traced_steps += 1
            return TraceDecision(True)
        return TraceDecision(False)

    def undo(self, decision: TraceDecision) -> None:
        """Forget a positive decision whose run turned out not to be a step."""
        if decision.trace:
            self.traced_steps -= 1
        if decision.new_fetch_key is not None:
            self._fetched.discard(decision.new_fetch_key)

    def should_dump(self, step: int, forced: bool = False) -> bool:
        """Whether to write ``profile_<step>`` after ``step``."""
        return forced or step in self.dump_steps
