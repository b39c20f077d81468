"""``ProfileContext``: profile chosen steps of any TF1-style training loop.

The drop-in for TensorFlow's ``tensorflow/python/profiler/profile_context.py``
(removed from TF 2.x). While the context is active, every ``Session.run`` of
every session (``tf.compat.v1.Session``, ``InteractiveSession``, the sessions
inside ``MonitoredTrainingSession``) and every call of a session *callable*
(``Session._make_callable_from_options``, which ``tf_keras``'s graph-mode
``K.function`` and ``Model.fit`` use) is one step.

Contract:

* Steps are numbered by ``Session.run`` calls from 0 (the first run, often the
  initializer, is step 0), or with ``step_source="global_step"`` by the value of
  ``tf.compat.v1.train.get_global_step()`` read after the run (see
  :class:`ProfileContext`).
* Chosen steps (``trace_steps``, or TensorFlow's sampling; see
  :mod:`tfprof_lite.session.schedule`) run with ``trace_level=FULL_TRACE``
  merged into a copy of the caller's ``RunOptions``; the caller's
  ``RunMetadata``, if any, is the one filled. Other steps run exactly as called.
  Traced steps are added to :attr:`ProfileContext.profiler` (a
  :class:`~tfprof_lite.profiler.Profiler`).
* At ``dump_steps`` the profile is written atomically to
  ``<profile_dir>/profile_<step>`` (a ProfileProto that ``Profiler.load``,
  ``tfprof-lite`` and TensorFlow's tfprof read); ``add_auto_profiling`` views
  run at their steps, results in :meth:`ProfileContext.get_profiles`.
* The context is a listener of the shared ``Session.run`` patch
  (:mod:`tfprof_lite.session.dispatch`), registered on ``__enter__`` and removed
  on ``__exit__``, also when the block raises; TensorFlow's methods are
  restored exactly when no listener is left. As in TensorFlow,
  ``BaseSession.profile_context`` is the active (enabled) context, and None
  after ``__exit__``; a disabled context touches nothing. Contexts cannot be
  nested. Only one thread profiles at a time: a run that starts while another
  is being profiled runs untouched (and counts).
* A failure inside profiling never reaches the training loop: the first of
  each kind is logged on the ``tfprof_lite`` logger, repeats are counted, and
  ``__exit__`` logs one summary line with the counts. Errors of the run itself
  propagate unchanged.
* A context left normally having seen no ``Session.run`` (nor session callable)
  at all logs one warning (:func:`tfprof_lite.session.eager.no_run_note`): in
  eager mode, that the program ran eagerly, that this capture needs a
  graph-mode session, and TensorFlow's own profiler instead; once per context.
  :attr:`ProfileContext.saw_session_run` tells whether a run was seen.

Differences from TensorFlow: the caller's ``run_metadata`` is filled on every
step (TensorFlow dropped it on non-traced slow-path steps); the caller's
``RunOptions`` object is never modified; unknown ``add_auto_profiling``
commands are rejected when added, not in the middle of training; callables are
steps; the profiler stays usable after ``__exit__``.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
from collections.abc import Iterable
from types import TracebackType
from typing import Any, Optional

from tfprof_lite.session import dispatch
from tfprof_lite.session.base import Capture, Plan
from tfprof_lite.session.calls import CannotTraceError, RunCall, fetch_key
from tfprof_lite.session.clocks import Clock, GlobalStepClock, RunCountClock, Token
from tfprof_lite.session.eager import no_run_note
from tfprof_lite.session.monitor import Monitor, monitor_for
from tfprof_lite.session.schedule import MAX_TRACED_STEPS, WARMUP_STEPS, TraceDecision

__all__ = ["MAX_TRACED_STEPS", "STEP_SOURCES", "WARMUP_STEPS", "ProfileContext", "fetch_key"]

log = logging.getLogger("tfprof_lite")

#: Accepted values of ``ProfileContext(step_source=...)``.
STEP_SOURCES = ("run_count", "global_step")

_active: Optional[ProfileContext] = None
_active_lock = threading.Lock()


class ProfileContext(Capture, contextlib.ContextDecorator):
    """Traces chosen ``Session.run`` steps and dumps/profiles them.

    Use as a context manager (``with ProfileContext(dir) as pctx:``) or as a
    decorator (``@ProfileContext(dir)``; repeated calls continue the same step
    count). Public methods: :attr:`profiler`, :meth:`add_auto_profiling`,
    :meth:`get_profiles`, :meth:`trace_next_step`, :meth:`dump_next_step`.

    Args:
        profile_dir: directory for ``profile_<step>`` files (created when needed).
        trace_steps: steps to trace (at most 100), or None for TensorFlow's
            automatic sampling after 10 warm-up steps.
        dump_steps: steps after which the profile is written, or None for
            ``[100]``.
        enabled: False makes everything a no-op (``profiler`` is None).
        debug: also write ``run_meta_<step>`` text files into ``profile_dir``
            and ``debug:`` lines on stderr.
        step_source: ``"run_count"`` (TensorFlow's rule: every ``Session.run``
            is a step, numbered from 0) or ``"global_step"`` (a step is a run
            that advances ``tf.compat.v1.train.get_global_step()``; its number
            is the value after the run, so the first training step is 1; costs
            one extra tiny ``Session.run`` per run).
        dump_on_exit: on ``__exit__``, write ``profile_<last step>`` if steps
            were traced since the last dump.
        monitor: 0 (off), 1 or 2: also print a monitoring line every
            ``monitor_every`` steps and append it to ``profile_dir/monitor.jsonl``
            (see :mod:`tfprof_lite.session.monitor`); or a ready
            :class:`~tfprof_lite.session.monitor.Monitor`.
        monitor_every: steps per monitoring line.
        task: the task this process runs in a distributed job
            (``/job:worker/task:1``): traced steps are also written task-tagged
            for ``tfprof-lite cluster`` (``docs/cluster.md``).
        xspace_logdir: at every dump also write the profile as an XSpace under
            ``xspace_logdir/plugins/profile/<time>_step_<step>/`` for XProf or
            TensorBoard's Profile tab (``docs/xspace_write.md``).

    Raises:
        ValueError: empty ``profile_dir``, more than 100 ``trace_steps``, an
            unknown ``step_source`` or ``monitor``, or a ``task`` that names no
            ``/job:J/task:T``.
    """

    def __init__(
        self,
        profile_dir: str | os.PathLike[str],
        trace_steps: Iterable[int] | None = None,
        dump_steps: Iterable[int] | None = None,
        enabled: bool = True,
        debug: bool = False,
        *,
        step_source: str = "run_count",
        dump_on_exit: bool = False,
        monitor: int | Monitor | None = 0,
        monitor_every: int = 100,
        task: str | None = None,
        xspace_logdir: str | os.PathLike[str] | None = None,
    ) -> None:
        super().__init__(
            profile_dir,
            trace_steps,
            dump_steps,
            enabled,
            debug,
            task=task,
            global_steps=step_source == "global_step",
            xspace_logdir=xspace_logdir,
        )
        self._monitor: Monitor | None = None
        if enabled and monitor:
            self._monitor = monitor_for(monitor, monitor_every, profile_dir)
        if not enabled:
            return
        if step_source not in STEP_SOURCES:
            raise ValueError(
                f"step_source must be one of {', '.join(STEP_SOURCES)}; got {step_source!r}"
            )
        self._step_source = step_source
        self._dump_on_exit = dump_on_exit
        self._lock = threading.Lock()
        self._clock: Clock | None = None
        self._session_class: Any = None
        self._warned_untraceable = False
        self._saw_run = False
        self._noted_no_run = False

    # ------------------------------------------------------- context manager
    def __enter__(self) -> ProfileContext:
        global _active
        if not self._enabled:
            return self
        with _active_lock:
            if _active is not None:
                raise RuntimeError(
                    "a ProfileContext is already active (profile_dir="
                    f"{_active._recorder.profile_dir!r}); contexts cannot be nested"
                )
            originals = dispatch.add_listener(self, dispatch.INNER)
            if self._clock is None:
                self._clock = (
                    GlobalStepClock(originals.run)
                    if self._step_source == "global_step"
                    else RunCountClock()
                )
            self._session_class = originals.session_class
            self._session_class.profile_context = self  # as TensorFlow did
            _active = self
        if self._monitor is not None:
            self._monitor.start_owned()
        return self

    @property
    def saw_session_run(self) -> bool:
        """Whether a ``Session.run`` (or session callable) ran while the context was
        active; False for a disabled context."""
        return self._enabled and self._saw_run

    @property
    def monitor(self) -> Monitor | None:
        """The monitor started with ``monitor=`` (None when monitoring is off)."""
        return self._monitor

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        global _active
        if not self._enabled or self._session_class is None:
            return
        if self._monitor is not None:
            self._monitor.stop_owned()
        with _active_lock:
            if _active is self:
                _active = None
            self._session_class.profile_context = None  # as TensorFlow did
            self._session_class = None
            dispatch.remove_listener(self)
        if self._dump_on_exit:
            self._final_dump()
        self._report_failures()
        if exc_type is None and not self._saw_run and not self._noted_no_run:
            self._noted_no_run = True
            log.warning("%s", no_run_note())

    # ------------------------------------------------- run listener: fast path
    def begin_untraced(self, run_metadata: Any) -> int | None:
        """Start a run that is sure to run untouched, if it is one.

        With steps counted by runs, the schedule tells before the call whether the
        next step is traced, dumped or profiled; when it is none of these (most
        steps), the run is counted here and its number returned, with the
        context's lock held until :meth:`end_untraced`. Returns None, having done
        nothing, otherwise.
        """
        self._saw_run = True
        clock = self._clock
        if type(clock) is not RunCountClock or not self._lock.acquire(blocking=False):
            return None
        step = clock.begin_if(self._untouched)
        if step is None:
            self._lock.release()
        return step

    def end_untraced(self, ticket: int, failed: bool, traced: bool) -> None:
        """End a step begun by :meth:`begin_untraced` (it counts, failed or not)."""
        try:
            self._counted(ticket)
        finally:
            self._lock.release()

    def _untouched(self, step: int, ordinal: int) -> bool:
        """Whether a step runs untouched: not traced, dumped or profiled."""
        return not (self._trace_next or self._dump_next or self._schedule.is_slow(step, ordinal))

    # ------------------------------------------------- run listener: full path
    def before_run(self, call: RunCall) -> tuple[Token, Plan | None] | None:
        """Plan a step (asking for FULL_TRACE when it is traced); the lock is
        held until :meth:`after_run`. None: another thread is profiling."""
        self._saw_run = True
        clock = self._clock
        assert clock is not None
        if not self._lock.acquire(blocking=False):
            clock.skip()
            return None
        try:
            token = clock.begin(call)
            plan = None
            if token is not None and not self._untouched(*token):
                plan = self._guard("planning a step", self._plan_call, call, token)
        except BaseException:
            self._lock.release()
            raise
        return token, plan

    def after_run(self, call: RunCall, ticket: tuple[Token, Plan | None], failed: bool) -> None:
        """Count the step; record, dump and profile it as planned."""
        token, plan = ticket
        clock = self._clock
        assert clock is not None
        try:
            step = self._counted(clock.commit(call, token))
            if plan is not None and not failed:
                self._finish(call, plan, step)
        finally:
            self._lock.release()

    def _plan_call(self, call: RunCall, token: tuple[int, int]) -> Plan | None:
        plan = self._plan(*token, functools.partial(self._fetch_key, call))
        if plan is not None and plan.decision.trace:
            try:
                call.request_trace()
            except CannotTraceError as err:
                self._warn_untraceable(str(err))
                self._schedule.undo(plan.decision)
                plan.decision = TraceDecision(False)
        return plan

    def _fetch_key(self, call: RunCall) -> str | None:
        try:
            key = call.fetch_key()
        except CannotTraceError:
            return None
        except Exception as err:
            log.debug("cannot name the fetches: %s", err)
            return None
        self._recorder.say(f"trace fetches: {key}")
        return key

    def _warn_untraceable(self, reason: str) -> None:
        if not self._warned_untraceable:
            self._warned_untraceable = True
            log.warning("tfprof_lite: %s", reason)

    def _finish(self, call: RunCall, plan: Plan, step: int | None) -> None:
        if step is None:  # global-step mode: the run did not advance the step
            self._schedule.undo(plan.decision)
            return
        graph = self._guard("reading the session's graph", lambda: call.graph)
        self._record(plan, step, graph, call.trace_meta)
