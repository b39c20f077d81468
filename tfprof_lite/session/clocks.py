"""How a ``ProfileContext`` numbers its steps: by runs, or by the global step.

Contract: a clock's :meth:`begin` predicts the coming step before a run as a
token ``(step, ordinal)`` (None: the run is not a step), :meth:`commit` after it
returns the step's number (None: not a step after all), and :meth:`skip` counts
a run that another thread's profiling left untouched.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Optional, Union

from tfprof_lite.session.calls import RunCall

__all__ = ["Clock", "GlobalStepClock", "RunCountClock", "Token"]

log = logging.getLogger("tfprof_lite")

#: (step, ordinal) of a run that may be a step; None: not a step.
Token = Optional[tuple[int, int]]


class RunCountClock:
    """Steps are ``Session.run`` calls, numbered from 0 (TensorFlow's rule)."""

    def __init__(self) -> None:
        self.next_step = 0
        self._lock = threading.Lock()

    def begin(self, call: RunCall) -> Token:
        """Count the coming run; its token."""
        with self._lock:
            step = self.next_step
            self.next_step += 1
        return step, step

    def begin_if(self, untouched: Callable[[int, int], bool]) -> int | None:
        """Count the next run and return its step when ``untouched(step, step)``
        says it runs untouched; otherwise count nothing and return None."""
        with self._lock:
            step = self.next_step
            if not untouched(step, step):
                return None
            self.next_step = step + 1
        return step

    def skip(self) -> None:
        """Count a run that is not profiled (another thread is profiling)."""
        with self._lock:
            self.next_step += 1

    def commit(self, call: RunCall, token: Token) -> int | None:
        """The step of a finished run (its token's)."""
        return None if token is None else token[0]


class GlobalStepClock:
    """Steps are runs that advance the graph's global step, keyed by its new value.

    Before a run the step is predicted as ``last + 1``; after it the global
    step is read (one extra, tiny ``Session.run`` through ``original_run``, the
    unpatched method); a run that did not advance it is not a step.
    """

    def __init__(self, original_run: Callable[..., Any]) -> None:
        self._original_run = original_run
        self.last: int | None = None
        self.counted = 0
        self._cached: tuple[Any, Any] | None = None  # (graph, its global step)
        self._warned = False

    def _variable(self, graph: Any) -> Any:
        if self._cached is not None and self._cached[0] is graph:
            return self._cached[1]
        from tensorflow.python.training import training_util

        variable = training_util.get_global_step(graph)
        self._cached = (graph, variable)
        if variable is None and not self._warned:
            self._warned = True
            log.warning(
                "ProfileContext(step_source='global_step'): the session's graph has no "
                "global step (tf.compat.v1.train.get_or_create_global_step()); its runs "
                "are not profiled"
            )
        return variable

    def read(self, call: RunCall) -> int | None:
        """The global step's value in ``call``'s session, or None if unavailable."""
        try:
            variable = self._variable(call.graph)
            if variable is None:
                return None
            return int(self._original_run(call.session, variable))
        except Exception as err:  # uninitialized, closed session, ...
            log.debug("cannot read the global step: %s", err)
            return None

    def begin(self, call: RunCall) -> Token:
        """Predict the coming step (the last value + 1)."""
        if self.last is None:
            self.last = self.read(call)
        if self.last is None:
            return None
        return self.last + 1, self.counted + 1

    def skip(self) -> None:
        """Runs of other threads are not steps in this mode."""

    def commit(self, call: RunCall, token: Token) -> int | None:
        """Read the global step; the step if the run advanced it, else None."""
        value = self.read(call)
        self.last = value
        if token is None or value is None or value <= token[0] - 1:
            return None
        self.counted += 1
        return value


#: Either clock.
Clock = Union[RunCountClock, GlobalStepClock]
