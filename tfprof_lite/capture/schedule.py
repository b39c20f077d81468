"""Which steps to trace, dump and profile, and what to do with a traced step.

Shared by :class:`~tfprof_lite.capture.profile_context.ProfileContext` and
:class:`~tfprof_lite.capture.hooks.ProfilerHook`; imports no TensorFlow.

Contract (TensorFlow's ``profile_context.py`` semantics):

* :class:`StepSchedule` decides per step. Explicit ``trace_steps`` are traced
  as given (at most :data:`MAX_TRACED_STEPS` of them). With ``trace_steps=None``
  ("auto tracing") nothing is traced during the first :data:`WARMUP_STEPS`
  steps; afterwards a step is traced when its fetches (sorted names joined by
  ``-``) were never traced before, or else with probability 2/11
  (``random.Random(111).randint(0, 10) < 2``, so runs are reproducible) while
  the profile covers less than half of the graph's nodes and the step is below
  :data:`MAX_TRACED_STEPS`. Tracing stops for good once more than
  :data:`MAX_TRACED_STEPS` steps were traced. ``dump_steps=None`` means
  ``{100}``.
* :class:`Capture` is the public API both share (``profiler``,
  ``add_auto_profiling``, ``get_profiles``, ``trace_next_step``,
  ``dump_next_step``) plus the per-step plan/record logic; every failure in it
  is caught and reported through a :class:`FailureLog` instead of raised.
* :class:`FailureLog` logs the first failure of each kind (what was being done
  and the exception type) as one warning on the ``tfprof_lite`` logger, only
  counts the repeats, and logs one summary line with the counts when the
  capture ends (``ProfileContext.__exit__``, ``ProfilerHook.end``).
* :class:`ProfileRecorder` owns the :class:`~tfprof_lite.profiler.Profiler`
  (created lazily, re-pointed at the session's graph for each traced step),
  writes ``<profile_dir>/profile_<step>`` atomically and runs the views
  registered with ``add_auto_profiling`` at their steps, keeping the results
  for ``get_profiles``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import random
import sys
from collections.abc import Iterable
from typing import Any, Callable

from tfprof_lite.errors import TfprofLiteError
from tfprof_lite.profiler import Profiler

__all__ = [
    "MAX_TRACED_STEPS",
    "WARMUP_STEPS",
    "Capture",
    "FailureLog",
    "Plan",
    "ProfileRecorder",
    "StepSchedule",
    "TraceDecision",
    "step_set",
]

log = logging.getLogger("tfprof_lite")

#: Steps never auto-traced at the start of training (TensorFlow's value).
WARMUP_STEPS = 10
#: Upper bound of traced steps; also the default dump step.
MAX_TRACED_STEPS = 100

# What a guarded call was doing (the kinds of FailureLog); no step numbers in them.
_WRITING_PROFILE = "writing a profile_<step> file"
_WRITING_DEBUG = "writing a run_meta_<step> file"

_VIEW_METHODS = {
    "graph": "profile_graph",
    "scope": "profile_name_scope",
    "op": "profile_operations",
    "code": "profile_python",
}


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


class FailureLog:
    """Failures inside profiling: the first of each kind logged, every one counted.

    A kind is what was being done (``"writing a profile_<step> file"``) plus
    the exception's type, so a dump that fails at every dump step warns once.
    """

    def __init__(self) -> None:
        self._counts: dict[tuple[str, str], int] = {}
        self._warned: set[tuple[str, str]] = set()

    @property
    def total(self) -> int:
        """Failures recorded since the last :meth:`flush`."""
        return sum(self._counts.values())

    def record(self, what: str, err: Exception) -> None:
        """Count a failure of ``what``; log it if its kind is new."""
        kind = (what, type(err).__name__)
        self._counts[kind] = self._counts.get(kind, 0) + 1
        log.debug("profiling failure while %s", what, exc_info=True)
        if kind in self._warned:
            return
        self._warned.add(kind)
        log.warning(
            "tfprof_lite: profiling failed (training continues) while %s: %s "
            "[repeats of this failure are counted, not logged]",
            what,
            err,
        )

    def flush(self) -> None:
        """Log one line with the counts since the last flush (if any); reset them."""
        if not self._counts:
            return
        kinds = ", ".join(
            f"{what} ({error}): {count}" for (what, error), count in self._counts.items()
        )
        total = self.total
        self._counts.clear()
        log.warning(
            "tfprof_lite: %d profiling failure%s in total, training was not affected: %s",
            total,
            "" if total == 1 else "s",
            kinds,
        )


class ProfileRecorder:
    """The profiler of one capture, its profile files and auto-profiling views.

    Args:
        profile_dir: directory of the ``profile_<step>`` (and debug) files.
        debug: also write ``run_meta_<step>`` text files and ``debug:`` lines
            on stderr.
    """

    def __init__(self, profile_dir: str, debug: bool = False) -> None:
        self.profile_dir = profile_dir
        self.debug = debug
        self._profiler: Profiler | None = None
        self._auto_profiles: list[tuple[str, Any, frozenset[int]]] = []
        self._views: dict[str, dict[int, Any]] = {}
        self.dirty = False
        self.written: list[str] = []

    @property
    def profiler(self) -> Profiler:
        """The profiler (created on TensorFlow's default graph if none yet)."""
        if self._profiler is None:
            self._profiler = Profiler()
        return self._profiler

    @property
    def coverage(self) -> float:
        """Share of the graph's nodes seen in traced steps (0 before any)."""
        if self._profiler is None:
            return 0.0
        return float(self._profiler._coverage)

    def say(self, message: str) -> None:
        """Write a ``debug:`` line on stderr in debug mode (as TensorFlow does)."""
        if self.debug:
            sys.stderr.write(f"debug: {message}\n")

    def profiler_for(self, graph: Any) -> Profiler:
        """The profiler, following ``graph`` (a ``tf.Graph``) from now on."""
        if self._profiler is None:
            self._profiler = Profiler(graph)
            return self._profiler
        source = self._profiler._source
        if graph is not None and (source is None or source.graph is not graph):
            from tfprof_lite.capture.source import GraphSource

            self._profiler._source = GraphSource(graph)
        return self._profiler

    def add_trace(self, step: int, graph: Any, run_meta: Any) -> None:
        """Add the traced RunMetadata of ``step`` (of a run on ``graph``)."""
        self.profiler_for(graph).add_step(step, run_meta)
        self.dirty = True

    def write_debug_trace(self, step: int, run_meta: Any) -> None:
        """In debug mode, write ``run_meta_<step>`` (the RunMetadata as text)."""
        if self.debug:
            self.write_file(f"run_meta_{step}", str(run_meta))

    def write_file(self, basename: str, data: str | bytes) -> str:
        """Write ``profile_dir/basename`` atomically (creating the directory).

        Raises:
            TfprofLiteError: the directory cannot be created or written.
        """
        from tfprof_lite.base.writing import write_atomic

        self._make_dir()
        path = os.path.join(self.profile_dir, basename)
        write_atomic(path, data)
        return path

    def _make_dir(self) -> None:
        directory = self.profile_dir
        if os.path.isdir(directory):
            return
        if os.path.lexists(directory):
            raise TfprofLiteError(
                f"profile_dir {directory} is not a directory; pass a directory path"
            )
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as err:
            raise TfprofLiteError(
                f"cannot create profile_dir {directory}: {err.strerror or err}; "
                "pass a directory you can write to"
            ) from err

    def dump(self, step: int, graph: Any = None) -> str:
        """Write ``profile_<step>``; returns its path."""
        self.say(f"dumping file at step: {step}")
        profiler = self.profiler_for(graph) if self._profiler is None else self._profiler
        name = f"profile_{step}"
        path = self.write_file(name, profiler.serialize_to_string())
        self.dirty = False
        if name not in self.written:
            self.written.append(name)
        return path

    def add_auto_profiling(self, cmd: str, options: Any, steps: Iterable[int]) -> set[int]:
        """Register view ``cmd`` with ``options`` at ``steps``; returns the steps.

        Raises:
            ValueError: ``cmd`` is not ``graph``, ``scope``, ``op`` or ``code``.
        """
        if cmd not in _VIEW_METHODS:
            raise ValueError(f"Unknown cmd: {cmd}; use one of {', '.join(_VIEW_METHODS)}")
        chosen = set(step_set(steps, "profile_steps"))
        self._auto_profiles.append((cmd, options, frozenset(chosen)))
        return chosen

    def auto_profile(self, step: int, graph: Any = None) -> None:
        """Run the views registered for ``step`` and keep their results."""
        for cmd, options, steps in self._auto_profiles:
            if step not in steps:
                continue
            self.say(f"profiling {cmd} step: {step}")
            profiler = self.profiler_for(graph) if self._profiler is None else self._profiler
            result = getattr(profiler, _VIEW_METHODS[cmd])(options)
            self._views.setdefault(cmd, {})[step] = result

    def get_profiles(self, cmd: str) -> dict[int, Any]:
        """Results of view ``cmd`` per step (see ``ProfileContext.get_profiles``).

        Raises:
            ValueError: ``cmd`` never ran.
        """
        if cmd not in self._views:
            raise ValueError(f"No autoprofiler for command: {cmd}, was run")
        return self._views[cmd]


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

    Raises:
        ValueError: empty ``profile_dir`` or more than 100 ``trace_steps``.
    """

    def __init__(
        self,
        profile_dir: str | os.PathLike[str],
        trace_steps: Iterable[int] | None = None,
        dump_steps: Iterable[int] | None = None,
        enabled: bool = True,
        debug: bool = False,
    ) -> None:
        self._enabled = enabled
        if not enabled:
            return
        if not profile_dir:
            raise ValueError("Must have a directory for profile.")
        self._schedule = StepSchedule(trace_steps, dump_steps)
        self._recorder = ProfileRecorder(os.fspath(profile_dir), debug)
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
        if self._schedule.should_dump(step, plan.dump_next):
            self._guard(_WRITING_PROFILE, self._recorder.dump, step, graph)
        self._guard("running an auto-profiling view", self._recorder.auto_profile, step, graph)

    def _final_dump(self) -> None:
        """Write ``profile_<last step>`` if steps were traced since the last dump."""
        if self._recorder.dirty and self._last_step is not None:
            self._guard(_WRITING_PROFILE, self._recorder.dump, self._last_step)
