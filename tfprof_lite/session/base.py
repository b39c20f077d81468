"""State and public API shared by ``ProfileContext`` and ``ProfilerHook``.

Contract: :class:`Capture` is the public API both share (``profiler``,
``add_auto_profiling``, ``get_profiles``, ``trace_next_step``,
``dump_next_step``) plus the per-step plan/record logic; every failure in it
is caught and reported through a
:class:`~tfprof_lite.session.recorder.FailureLog` instead of raised. Imports no
TensorFlow.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from typing import Any, Callable

from tfprof_lite.profiler import Profiler
from tfprof_lite.session.recorder import FailureLog, ProfileRecorder
from tfprof_lite.session.schedule import StepSchedule, TraceDecision

__all__ = ["Capture", "Plan"]

# What a guarded call was doing (the kinds of FailureLog); no step numbers in them.
_WRITING_PROFILE = "writing a profile_<step> file"
_WRITING_DEBUG = "writing a run_meta_<step> file"
_WRITING_TASK = "writing a task-tagged run_meta file"


@dataclasses.dataclass
class Plan:
    """What to do around one slow-path step.

    Attributes:
        step: the step's (predicted) number.
        decision: whether it is traced.
        dump_next: ``dump_next_step`` was requested for it.
    """

    step: int
    decision: TraceDecision
    dump_next: bool


class Capture:
    """State and public API shared by ``ProfileContext`` and ``ProfilerHook``.

    Args:
        profile_dir: directory for ``profile_<step>`` files.
        trace_steps: steps to trace, or None for automatic tracing.
        dump_steps: steps to dump at, or None for ``[100]``.
        enabled: False makes everything a no-op.
        debug: write ``run_meta_<step>`` files and ``debug:`` lines on stderr.
        task: the task this process runs (``/job:worker/task:1``): each traced
            step's RunMetadata is also written as ``run_meta.<tag>.<step>.pb``
            next to a ``task.<tag>.json`` sidecar, for ``tfprof-lite cluster``.
        global_steps: the step numbers are global steps (``ProfilerHook``).

    Raises:
        ValueError: empty ``profile_dir``, more than 100 ``trace_steps``, or a
            ``task`` that names no ``/job:J/task:T``.
    """

    def __init__(
        self,
        profile_dir: str | os.PathLike[str],
        trace_steps: Iterable[int] | None = None,
        dump_steps: Iterable[int] | None = None,
        enabled: bool = True,
        debug: bool = False,
        task: str | None = None,
        global_steps: bool = False,
        xspace_logdir: str | os.PathLike[str] | None = None,
    ) -> None:
        self._enabled = enabled
        if not enabled:
            return
        if not profile_dir:
            raise ValueError("Must have a directory for profile.")
        self._schedule = StepSchedule(trace_steps, dump_steps)
        self._recorder = ProfileRecorder(
            os.fspath(profile_dir),
            debug,
            task,
            global_steps,
            None if xspace_logdir is None else os.fspath(xspace_logdir),
        )
        self._trace_next = False
        self._dump_next = False
        self._last_step: int | None = None
        self._failures = FailureLog()

    @property
    def profiler(self) -> Profiler | None:
        """The profiler holding the traced steps (None when disabled).

        Created on first use: on the graph of the first traced session, or on
        TensorFlow's default graph if read before any step was traced.
        """
        if not self._enabled:
            return None
        return self._recorder.profiler

    def add_auto_profiling(self, cmd: str, options: Any, profile_steps: Iterable[int]) -> None:
        """Trace ``profile_steps`` and run view ``cmd`` with ``options`` after each.

        Args:
            cmd: ``scope``, ``graph``, ``op`` or ``code``.
            options: options dict (e.g. from ``ProfileOptionBuilder``).
            profile_steps: step numbers; each is also traced.

        Raises:
            ValueError: unknown ``cmd``.
        """
        if not self._enabled:
            return
        steps = self._recorder.add_auto_profiling(cmd, options, profile_steps)
        self._schedule.add_profile_steps(steps)

    def get_profiles(self, cmd: str) -> dict[int, Any]:
        """Results of ``cmd`` per step: GraphNodeProto (scope, graph) or
        MultiGraphNodeProto (op, code).

        Raises:
            ValueError: ``cmd`` was never run (no ``add_auto_profiling`` for it,
                or none of its steps happened yet).
        """
        if not self._enabled:
            raise ValueError(f"No autoprofiler for command: {cmd}, was run")
        return self._recorder.get_profiles(cmd)

    @property
    def written_profiles(self) -> list[str]:
        """Basenames of the ``profile_<step>`` files written so far, in order."""
        return list(self._recorder.written) if self._enabled else []

    def trace_next_step(self) -> None:
        """Trace the next step (and add it to the profiler)."""
        if self._enabled:
            self._trace_next = True

    def dump_next_step(self) -> None:
        """Write ``profile_<step>`` after the next step."""
        if self._enabled:
            self._dump_next = True

    # ------------------------------------------------------------ internals
    def _guard(self, what: str, func: Callable[..., Any], *args: Any) -> Any:
        """``func(*args)``; an exception is recorded as a failure of ``what``
        (see :class:`FailureLog`) and None returned."""
        try:
            return func(*args)
        except Exception as err:
            self._failures.record(what, err)
            return None

    def _report_failures(self) -> None:
        """At the end of a capture: one summary line if anything failed."""
        self._failures.flush()

    def _plan(self, step: int, ordinal: int, fetch_key: Callable[[], str | None]) -> Plan | None:
        """The plan for a step about to run, or None for the fast path."""
        trace_next, dump_next = self._trace_next, self._dump_next
        if not self._schedule.is_slow(step, ordinal, trace_next or dump_next):
            return None
        decision = self._schedule.should_trace(
            step, ordinal, trace_next, fetch_key, lambda: self._recorder.coverage
        )
        if decision.trace:
            self._recorder.say(f"tracing step: {step}")
        return Plan(step, decision, dump_next)

    def _counted(self, step: int | None) -> int | None:
        """Note that a step ended (None: the run was not a step)."""
        if step is not None:
            self._last_step = step
            self._trace_next = self._dump_next = False
        return step

    def _record(self, plan: Plan, step: int, graph: Any, run_meta: Any) -> None:
        """After a slow-path step: add its trace, dump, run auto-profiles."""
        if plan.decision.trace:
            self._guard("adding a traced step", self._recorder.add_trace, step, graph, run_meta)
            self._guard(_WRITING_DEBUG, self._recorder.write_debug_trace, step, run_meta)
            self._guard(_WRITING_TASK, self._recorder.write_task_trace, step, run_meta)
        if self._schedule.should_dump(step, plan.dump_next):
            self._guard(_WRITING_PROFILE, self._recorder.dump, step, graph)
        self._guard("running an auto-profiling view", self._recorder.auto_profile, step, graph)

    def _final_dump(self) -> None:
        """Write ``profile_<last step>`` if steps were traced since the last dump."""
        if self._recorder.dirty and self._last_step is not None:
            self._guard(_WRITING_PROFILE, self._recorder.dump, self._last_step)
