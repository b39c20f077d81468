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
  :mod:`tfprof_lite.capture.schedule`) run with ``trace_level=FULL_TRACE``
  merged into a copy of the caller's ``RunOptions``; the caller's
  ``RunMetadata``, if any, is the one filled. Other steps run exactly as called.
  Traced steps are added to :attr:`ProfileContext.profiler` (a
  :class:`~tfprof_lite.profiler.Profiler`).
* At ``dump_steps`` the profile is written atomically to
  ``<profile_dir>/profile_<step>`` (a ProfileProto that ``Profiler.load``,
  ``tfprof-lite`` and TensorFlow's tfprof read); ``add_auto_profiling`` views
  run at their steps, results in :meth:`ProfileContext.get_profiles`.
* ``BaseSession.run`` (and the callable entry points) are patched on
  ``__enter__`` and restored exactly on ``__exit__``, also when the block
  raises. As in TensorFlow, ``BaseSession.profile_context`` is the active
  (enabled) context, and None after ``__exit__``; a disabled context touches
  nothing. Contexts cannot be nested. Only one thread profiles at a time: a run
  that starts while another is being profiled runs untouched (and counts).
* A failure inside profiling never reaches the training loop: the first of
  each kind is logged on the ``tfprof_lite`` logger, repeats are counted, and
  ``__exit__`` logs one summary line with the counts. Errors of the run itself
  propagate unchanged.

Differences from TensorFlow: the caller's ``run_metadata`` is filled on every
step (TensorFlow dropped it on non-traced slow-path steps); the caller's
``RunOptions`` object is never modified; unknown ``add_auto_profiling``
commands are rejected when added, not in the middle of training; callables are
steps; the profiler stays usable after ``__exit__``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import logging
import os
import threading
from collections.abc import Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from tfprof_lite.capture.patching import AttributePatch
from tfprof_lite.capture.schedule import (
    MAX_TRACED_STEPS,
    WARMUP_STEPS,
    Capture,
    Plan,
    TraceDecision,
)

if TYPE_CHECKING:  # monitoring wiring (see tfprof_lite/capture/monitor.py)
    from tfprof_lite.capture.monitor import Monitor

__all__ = ["MAX_TRACED_STEPS", "STEP_SOURCES", "WARMUP_STEPS", "ProfileContext", "fetch_key"]

log = logging.getLogger("tfprof_lite")

#: Accepted values of ``ProfileContext(step_source=...)``.
STEP_SOURCES = ("run_count", "global_step")

_OPTIONS_ATTR = "_tfprof_lite_callable_options"
_TWIN_ATTR = "_tfprof_lite_traced_twin"
_FULL_TRACE = 3  # RunOptions.FULL_TRACE

_active: Optional[ProfileContext] = None
_active_lock = threading.Lock()

#: (step, ordinal) of a run that may be a step; None: not a step.
_Token = Optional[tuple[int, int]]


class _CannotTraceError(Exception):
    """A step cannot be traced (explained in the message); it runs untraced."""


def fetch_key(graph: Any, fetches: Any) -> str:
    """Sorted names of the unique ``Session.run`` fetches joined by ``-``.

    TensorFlow's key for "fetches never traced before" (automatic tracing).
    """
    from tensorflow.python.client import session as tf_session

    with graph.as_default():
        mapper = tf_session._FetchMapper.for_fetch(fetches)
        names = [fetch.name for fetch in mapper.unique_fetches()]
    return "-".join(sorted(names))


def _new_run_metadata() -> Any:
    from tensorflow.core.protobuf import config_pb2

    return config_pb2.RunMetadata()


def _full_trace(options: Any) -> Any:
    """A copy of ``options`` (RunOptions or None) with FULL_TRACE."""
    if options is None:
        from tensorflow.core.protobuf import config_pb2

        return config_pb2.RunOptions(trace_level=_FULL_TRACE)
    traced = type(options)()
    traced.CopyFrom(options)
    traced.trace_level = _FULL_TRACE
    return traced


class _SessionRun:
    """One ``BaseSession.run`` call seen by the context."""

    __slots__ = (
        "_trace_options",
        "feed_dict",
        "fetches",
        "options",
        "original",
        "run_metadata",
        "session",
        "trace_meta",
    )

    def __init__(self, original: Callable[..., Any], session: Any, args: tuple[Any, ...]):
        self.original = original
        self.session = session
        self.fetches, self.feed_dict, self.options, self.run_metadata = args
        self.trace_meta: Any = None
        self._trace_options: Any = None

    @property
    def graph(self) -> Any:
        return self.session.graph

    def fetch_key(self) -> str | None:
        return fetch_key(self.graph, self.fetches)

    def prepare_trace(self) -> None:
        self._trace_options = _full_trace(self.options)
        self.trace_meta = self.run_metadata
        if self.trace_meta is None:
            self.trace_meta = _new_run_metadata()

    def run(self, traced: bool) -> Any:
        if traced:
            args = (self.fetches, self.feed_dict, self._trace_options, self.trace_meta)
        else:
            args = (self.fetches, self.feed_dict, self.options, self.run_metadata)
        return self.original(self.session, *args)


class _CallableRun:
    """One call of a ``BaseSession._Callable`` seen by the context."""

    def __init__(
        self,
        originals: _Originals,
        callable_: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ):
        self.originals = originals
        self.callable = callable_
        self.session = callable_._session
        self.args = args
        self.kwargs = kwargs
        self.trace_meta: Any = None
        self._twin: Any = None

    @property
    def graph(self) -> Any:
        return self.session.graph

    def _options(self) -> Any:
        options = getattr(self.callable, _OPTIONS_ATTR, None)
        if options is None:
            raise _CannotTraceError(
                "a session callable made before the ProfileContext was entered "
                "(e.g. an earlier K.function call) cannot be traced; enter the "
                "context before the first call"
            )
        return options

    def fetch_key(self) -> str | None:
        options = self._options()
        return "-".join(sorted([*options.fetch, *options.target]))

    def prepare_trace(self) -> None:
        options = self._options()
        twin = self.callable
        if options.run_options.trace_level != _FULL_TRACE:
            twin = getattr(self.callable, _TWIN_ATTR, None)
            if twin is None:
                traced = type(options)()
                traced.CopyFrom(options)
                traced.run_options.trace_level = _FULL_TRACE
                twin = self.originals.make_callable(self.session, traced)
                setattr(self.callable, _TWIN_ATTR, twin)
        self._twin = twin
        self.trace_meta = self.kwargs.get("run_metadata")
        if self.trace_meta is None:
            self.trace_meta = _new_run_metadata()

    def run(self, traced: bool) -> Any:
        if not traced:
            return self.originals.call(self.callable, *self.args, **self.kwargs)
        kwargs = dict(self.kwargs, run_metadata=self.trace_meta)
        return self.originals.call(self._twin, *self.args, **kwargs)


_Call = Union[_SessionRun, _CallableRun]


@dataclasses.dataclass
class _Originals:
    """The patched TensorFlow functions as they were before ``__enter__``."""

    run: Callable[..., Any]
    call: Callable[..., Any]
    make_callable: Callable[..., Any]


class _RunCountClock:
    """Steps are ``Session.run`` calls, numbered from 0 (TensorFlow's rule)."""

    def __init__(self) -> None:
        self.next_step = 0
        self._lock = threading.Lock()

    def begin(self, call: _Call) -> _Token:
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

    def commit(self, call: _Call, token: _Token) -> int | None:
        return None if token is None else token[0]


class _GlobalStepClock:
    """Steps are runs that advance the graph's global step, keyed by its new value.

    Before a run the step is predicted as ``last + 1``; after it the global
    step is read (one extra, tiny ``Session.run``); a run that did not advance
    it is not a step.
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

    def read(self, call: _Call) -> int | None:
        """The global step's value in ``call``'s session, or None if unavailable."""
        try:
            variable = self._variable(call.graph)
            if variable is None:
                return None
            return int(self._original_run(call.session, variable))
        except Exception as err:  # uninitialized, closed session, ...
            log.debug("cannot read the global step: %s", err)
            return None

    def begin(self, call: _Call) -> _Token:
        if self.last is None:
            self.last = self.read(call)
        if self.last is None:
            return None
        return self.last + 1, self.counted + 1

    def skip(self) -> None:
        """Runs of other threads are not steps in this mode."""

    def commit(self, call: _Call, token: _Token) -> int | None:
        value = self.read(call)
        self.last = value
        if token is None or value is None or value <= token[0] - 1:
            return None
        self.counted += 1
        return value


_Clock = Union[_RunCountClock, _GlobalStepClock]


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
            (see :mod:`tfprof_lite.capture.monitor`); or a ready
            :class:`~tfprof_lite.capture.monitor.Monitor`.
        monitor_every: steps per monitoring line.

    Raises:
        ValueError: empty ``profile_dir``, more than 100 ``trace_steps``, an
            unknown ``step_source`` or ``monitor``.
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
    ) -> None:
        super().__init__(profile_dir, trace_steps, dump_steps, enabled, debug)
        # --- monitoring wiring (tfprof_lite/capture/monitor.py) ---
        self._monitor: Monitor | None = None
        if enabled and monitor:
            from tfprof_lite.capture.monitor import monitor_for

            self._monitor = monitor_for(monitor, monitor_every, profile_dir)
        # --- end of monitoring wiring ---
        if not enabled:
            return
        if step_source not in STEP_SOURCES:
            raise ValueError(
                f"step_source must be one of {', '.join(STEP_SOURCES)}; got {step_source!r}"
            )
        self._step_source = step_source
        self._dump_on_exit = dump_on_exit
        self._lock = threading.Lock()
        self._clock: _Clock | None = None
        self._patch: _Patch | None = None
        self._warned_untraceable = False

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
            patch = _Patch.install()
            patch.base.profile_context = self  # as TensorFlow did
            self._patch = patch
            if self._clock is None:
                self._clock = (
                    _GlobalStepClock(patch.originals.run)
                    if self._step_source == "global_step"
                    else _RunCountClock()
                )
            _active = self
        if self._monitor is not None:  # monitoring wiring: installed over our patch
            self._monitor._start_owned()
        return self

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
        if not self._enabled or self._patch is None:
            return
        if self._monitor is not None:  # monitoring wiring: removed before our patch
            self._monitor._stop_owned()
        with _active_lock:
            if _active is self:
                _active = None
            self._patch.base.profile_context = None  # as TensorFlow did
            self._patch.remove()
            self._patch = None
        if self._dump_on_exit:
            self._final_dump()
        self._report_failures()

    # ------------------------------------------------------------- the steps
    def _begin_untraced(self) -> int | None:
        """Start a ``Session.run`` step that is sure to run untouched, if it is one.

        With steps counted by runs, the schedule tells before the call whether the
        next step is traced, dumped or profiled; when it is none of these (most
        steps), the run is counted here and its number returned, with the
        context's lock held until :meth:`_end_untraced`: the wrapper then calls
        TensorFlow's ``run`` directly, with no per-call record (what
        :meth:`_execute` would do, with less code on every step). Returns None,
        having done nothing, otherwise.
        """
        clock = self._clock
        if type(clock) is not _RunCountClock or not self._lock.acquire(blocking=False):
            return None
        step = clock.begin_if(self._untouched)
        if step is None:
            self._lock.release()
        return step

    def _untouched(self, step: int, ordinal: int) -> bool:
        """Whether a step runs untouched: not traced, dumped or profiled."""
        return not (self._trace_next or self._dump_next or self._schedule.is_slow(step, ordinal))

    def _end_untraced(self, step: int) -> None:
        """End a step begun by :meth:`_begin_untraced`."""
        try:
            self._counted(step)
        finally:
            self._lock.release()

    def _execute(self, call: _Call) -> Any:
        """Run one step, tracing, dumping and profiling it as scheduled."""
        clock = self._clock
        assert clock is not None
        if not self._lock.acquire(blocking=False):
            clock.skip()
            return call.run(False)
        try:
            token = clock.begin(call)
            if token is not None and self._untouched(*token):
                # The fast path of every untraced step: what _plan would decide, without
                # building its arguments (the schedule's answer cannot fail).
                try:
                    result = call.run(False)
                finally:
                    self._counted(clock.commit(call, token))
                return result
            plan = None
            if token is not None:
                plan = self._guard("planning a step", self._plan_call, call, token)
            traced = plan is not None and plan.decision.trace
            try:
                result = call.run(traced)
            except BaseException:
                self._counted(clock.commit(call, token))
                raise
            step = self._counted(clock.commit(call, token))
            if plan is not None:
                self._finish(call, plan, step)
            return result
        finally:
            self._lock.release()

    def _plan_call(self, call: _Call, token: tuple[int, int]) -> Plan | None:
        plan = self._plan(*token, functools.partial(self._fetch_key, call))
        if plan is not None and plan.decision.trace:
            try:
                call.prepare_trace()
            except _CannotTraceError as err:
                self._warn_untraceable(str(err))
                self._schedule.undo(plan.decision)
                plan.decision = TraceDecision(False)
        return plan

    def _fetch_key(self, call: _Call) -> str | None:
        try:
            key = call.fetch_key()
        except _CannotTraceError:
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

    def _finish(self, call: _Call, plan: Plan, step: int | None) -> None:
        if step is None:  # global-step mode: the run did not advance the step
            self._schedule.undo(plan.decision)
            return
        graph = self._guard("reading the session's graph", lambda: call.graph)
        self._record(plan, step, graph, call.trace_meta)


class _Patch(AttributePatch):
    """The TensorFlow methods replaced while a context is active."""

    def __init__(self, base: type, callable_cls: type, originals: _Originals) -> None:
        super().__init__("profiling")
        self.base: Any = base  # TensorFlow's BaseSession
        self.callable_cls = callable_cls
        self.originals = originals

    @classmethod
    def install(cls) -> _Patch:
        """Patch ``BaseSession.run``, ``_make_callable_from_options`` and
        ``BaseSession._Callable.__call__``."""
        tf_session = importlib.import_module("tensorflow.python.client.session")
        base = tf_session.BaseSession
        callable_cls = base._Callable
        originals = _Originals(
            run=base.run,
            call=callable_cls.__call__,
            make_callable=base._make_callable_from_options,
        )
        patch = cls(base, callable_cls, originals)
        patch.set(base, "run", _run_wrapper(originals))
        patch.set(base, "_make_callable_from_options", _make_callable_wrapper(originals))
        patch.set(callable_cls, "__call__", _call_wrapper(originals))
        return patch


def _run_wrapper(originals: _Originals) -> Callable[..., Any]:
    original = originals.run

    @functools.wraps(original)
    def run(
        self: Any,
        fetches: Any,
        feed_dict: Any = None,
        options: Any = None,
        run_metadata: Any = None,
    ) -> Any:
        context = _active
        if context is None:
            return original(self, fetches, feed_dict, options, run_metadata)
        step = context._begin_untraced()
        if step is None:
            call = _SessionRun(original, self, (fetches, feed_dict, options, run_metadata))
            return context._execute(call)
        try:
            return original(self, fetches, feed_dict, options, run_metadata)
        finally:
            context._end_untraced(step)

    return run


def _make_callable_wrapper(originals: _Originals) -> Callable[..., Any]:
    original = originals.make_callable

    @functools.wraps(original)
    def make_callable_from_options(self: Any, callable_options: Any) -> Any:
        made = original(self, callable_options)
        with contextlib.suppress(Exception):
            kept = type(callable_options)()
            kept.CopyFrom(callable_options)
            setattr(made, _OPTIONS_ATTR, kept)
        return made

    return make_callable_from_options


def _call_wrapper(originals: _Originals) -> Callable[..., Any]:
    original = originals.call

    @functools.wraps(original)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        context = _active
        if context is None:
            return original(self, *args, **kwargs)
        return context._execute(_CallableRun(originals, self, args, kwargs))

    return call
