"""``Monitor``: one compact line every N steps while a TF1-style session trains.

The ``Session``-program analogue of ``capture_tpu_profile --monitoring_level=1|2``.
Usable alone (``with tfprof_lite.Monitor(dir, level=2, every=100): ...``) or
through ``ProfileContext(dir, monitor=1|2, monitor_every=N)``. This module does
not import TensorFlow; entering a monitor does.

Contract:

* While active, every ``Session.run`` of any session and every call of a
  session callable (graph-mode ``tf_keras``) is one *step*, numbered from 0 per
  monitored run; runs that raise are not counted. Each is timed with
  ``time.perf_counter`` around the real call (the cheap part: a lock, two clock
  reads, a list append). ``this_thread_only=True`` ignores runs of other
  threads (queue runners).
* Every ``every`` steps a window closes and one line is written (level 1: mean
  step time and device utilisation; level 2: also min/max step time, share of
  the loop spent inside runs, host and device idle, input wait, devices; see
  :mod:`tfprof_lite.analysis.monitoring`) to ``logger.info`` if a logger is
  given, else to ``stream`` (default ``sys.stderr``) as one ``write`` of the
  whole line plus ``flush``. The same record goes, as one JSON line written
  with a single ``os.write``, to ``<profile_dir>/monitor.jsonl`` (appended,
  created ``0666`` less the umask; no file when ``profile_dir`` is None), between a ``start``
  and an ``end`` record. On exit the unfinished window is written
  (``partial``) and, with ``summary=True``, one summary line.
* Utilisation, idle and input-wait figures come from *samples*: one step
  traced with FULL_TRACE (options merged into a copy of the caller's
  ``RunOptions``; the caller's ``RunMetadata``, if any, is filled) and analysed
  with :func:`tfprof_lite.analysis.monitoring.sample_metrics`. The last step of
  windows 0, K, 2K, ... is sampled (``K = sample_every``; 0 disables
  sampling). A step traced by someone else (an active ``ProfileContext`` or the
  caller's own FULL_TRACE run with a ``RunMetadata``) is used instead when a
  sample is due (or none was taken yet). Traced steps are counted in the window
  but not timed. Session callables are timed but never sampled by the monitor.
* The monitor is a listener of the shared ``Session.run`` patch
  (:mod:`tfprof_lite.session.dispatch`), outside any ``ProfileContext``: it sees
  the caller's runs (not the context's global-step reads) and is told which
  runs another listener traced.
* Failures of the monitor (unwritable directory, a sample that cannot be
  analysed) are logged once on the ``tfprof_lite`` logger and never reach the
  training loop. Only one monitor can be active: entering a second one raises
  ``RuntimeError`` (a ``ProfileContext`` whose monitor cannot start logs a
  warning and profiles without it).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
import time
from types import TracebackType
from typing import Any, Optional, TextIO

from tfprof_lite.analysis.monitor_log import MONITOR_FILE
from tfprof_lite.analysis.monitoring import (
    SCHEMA_VERSION,
    MonitorSummary,
    SampleMetrics,
    WindowRecord,
    summarize,
)
from tfprof_lite.session import dispatch
from tfprof_lite.session.calls import RunCall
from tfprof_lite.session.monitor_output import MonitorOutput, OnceWarner
from tfprof_lite.session.monitor_sample import SampleAnalyser
from tfprof_lite.session.monitor_window import WindowState

__all__ = ["DEFAULT_EVERY", "DEFAULT_SAMPLE_EVERY", "LEVELS", "Monitor", "monitor_for"]

log = logging.getLogger("tfprof_lite")

#: Accepted monitoring levels.
LEVELS = (1, 2)
#: Default window length (steps).
DEFAULT_EVERY = 100
#: Default sampling period (windows).
DEFAULT_SAMPLE_EVERY = 10

_RUN_IDS = itertools.count()
_active: Optional[Monitor] = None
_active_lock = threading.Lock()
_clock = time.perf_counter
_ident = threading.get_ident


class Monitor(contextlib.ContextDecorator):
    """Prints a compact step-time / utilisation line every ``every`` steps.

    Args:
        profile_dir: directory of ``monitor.jsonl`` (created when needed), or
            None for printed lines only.
        level: 1 (step time, utilisation) or 2 (also min/max, idle, input wait,
            devices).
        every: steps per window (one line per window).
        sample_every: trace one step every this many windows (0: never; then
            utilisation and idle figures are ``n/a`` unless others trace).
        stream: where lines go (default: ``sys.stderr`` at write time).
        logger: if given, lines go to ``logger.info`` instead of ``stream``.
        summary: write one summary line when the block ends.
        this_thread_only: count only runs of the thread that entered the block.

    Raises:
        ValueError: a level other than 1 or 2, ``every`` < 1 or ``sample_every`` < 0.
    """

    def __init__(
        self,
        profile_dir: str | os.PathLike[str] | None = None,
        level: int = 1,
        every: int = DEFAULT_EVERY,
        *,
        sample_every: int = DEFAULT_SAMPLE_EVERY,
        stream: TextIO | None = None,
        logger: logging.Logger | None = None,
        summary: bool = True,
        this_thread_only: bool = False,
    ) -> None:
        _check_int("level", level, 1)
        if level not in LEVELS:
            raise ValueError(f"level must be 1 or 2; got {level!r}")
        _check_int("every", every, 1)
        _check_int("sample_every", sample_every, 0)
        self.profile_dir = None if profile_dir is None else os.fspath(profile_dir)
        self.level = level
        self.every = every
        self.sample_every = sample_every
        self._summary = summary
        self._this_thread_only = this_thread_only
        self._lock = threading.Lock()
        self._registered = False
        self._owned = False
        self._warner = OnceWarner()
        self._output = MonitorOutput(self.path, stream, logger, self._warner)
        self._analyser = SampleAnalyser()
        self._reset()

    def _reset(self) -> None:
        self.run_id = ""
        self._thread: int | None = None
        self._running = False
        self._step = 0
        self._records: list[WindowRecord] = []
        self._latest: SampleMetrics | None = None
        self._sample_pending = False
        self._window = WindowState(0, 0, self._due(0))

    # ----------------------------------------------------------- public API
    @property
    def path(self) -> str | None:
        """``<profile_dir>/monitor.jsonl``, or None without a directory."""
        return None if self.profile_dir is None else os.path.join(self.profile_dir, MONITOR_FILE)

    @property
    def records(self) -> list[WindowRecord]:
        """The window records of the current (or last) run, in order."""
        return list(self._records)

    @property
    def latest_sample(self) -> SampleMetrics | None:
        """The most recent trace sample of the current (or last) run."""
        return self._latest

    @property
    def steps(self) -> int:
        """Steps counted in the current (or last) run."""
        return self._step

    def summary(self) -> MonitorSummary:
        """The current (or last) run folded into one summary."""
        return summarize(self._records, self.run_id)

    # ------------------------------------------------------ context manager
    def __enter__(self) -> Monitor:
        global _active
        with _active_lock:
            if _active is not None:
                raise RuntimeError("a tfprof_lite Monitor is already active; monitors cannot nest")
            self._begin_run()
            dispatch.add_listener(self, dispatch.OUTER)
            self._registered = True
            _active = self
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        global _active
        with _active_lock:
            if _active is self:
                _active = None
            if self._registered:
                dispatch.remove_listener(self)
                self._registered = False
        self._finish_run()

    def start_owned(self) -> None:
        """Enter on behalf of a ``ProfileContext``; if another monitor is active,
        only log a warning (the context profiles without monitoring)."""
        try:
            self.__enter__()
        except RuntimeError as err:
            log.warning("tfprof_lite: monitoring is off for this ProfileContext: %s", err)
            return
        self._owned = True

    def stop_owned(self) -> None:
        """Leave what :meth:`start_owned` entered (nothing if it did not start)."""
        if self._owned:
            self._owned = False
            self.__exit__(None, None, None)

    # ------------------------------------------------------------ run life
    def _begin_run(self) -> None:
        self._reset()
        self.run_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{next(_RUN_IDS)}"
        self._thread = threading.get_ident() if self._this_thread_only else None
        self._output.open()
        self._running = True
        self._output.record(
            {
                "v": SCHEMA_VERSION,
                "event": "start",
                "run": self.run_id,
                "level": self.level,
                "every": self.every,
                "sample_every": self.sample_every,
                "pid": os.getpid(),
                "time": time.time(),
            }
        )
        self._window = WindowState(0, 0, self._due(0))
        self._sample_pending = self._window.sample_due and self.every == 1

    def _finish_run(self) -> None:
        with self._lock:
            if not self._running:
                return
            self._running = False
            record = self._close_window(partial=True) if self._window_steps() else None
        if record is not None:
            self._emit(record)
        summary = self.summary()
        end = {"v": SCHEMA_VERSION, "event": "end", "run": self.run_id, "time": time.time()}
        self._output.record({**end, "steps": self._step, "summary": summary.to_dict()})
        if self._summary:
            self._output.line(summary.to_line())
        self._output.close()

    # ------------------------------------------------- run listener: fast path
    def begin_untraced(self, run_metadata: Any) -> float | None:
        """Start timing a run that needs nothing else (no sample due, no caller
        ``RunMetadata``, a monitored thread); None otherwise."""
        if run_metadata is not None or self._sample_pending:
            return None
        thread = self._thread
        if thread is not None and thread != _ident():
            return None
        return _clock()

    def end_untraced(
        self, ticket: float, failed: bool, traced: bool, stop: float | None = None
    ) -> None:
        """Count a run that started at ``ticket`` and ended now (or at ``stop``);
        runs that raise are not counted, traced runs are counted but not timed."""
        if failed:
            return
        seconds = (_clock() if stop is None else stop) - ticket
        with self._lock:
            if not self._running:
                return
            window = self._window
            self._step += 1
            window.in_run += seconds
            if traced:
                window.traced += 1
            else:
                window.durations.append(seconds)
            done = self._step - window.first_step
            if done < self.every:
                if window.sample_due and done == self.every - 1:
                    self._sample_pending = True
                return
            record = self._close_window(partial=False)
        self._emit(record)

    # ------------------------------------------------- run listener: full path
    def before_run(self, call: RunCall) -> tuple[float, bool] | None:
        """Claim a due sample (FULL_TRACE) for a ``Session.run``; start timing.
        None for runs of other threads when ``this_thread_only``."""
        thread = self._thread
        if thread is not None and thread != _ident():
            return None
        sampled = not call.is_callable and self._sample_pending and self._claim_sample()
        if sampled:
            call.request_trace()
        return _clock(), sampled

    def after_run(self, call: RunCall, ticket: tuple[float, bool], failed: bool) -> None:
        """Count the run; analyse it if it is a sample (not timed: traced)."""
        start, sampled = ticket
        if failed:
            if sampled:
                self._sample_pending = True
            return
        if sampled:
            stop = _clock()
            self._take_sample(call.session, call.trace_meta)
            self.end_untraced(start, False, True, stop)
            return
        traced = call.traced
        meta = call.run_metadata
        if meta is not None and self._caller_trace(call.session, meta):
            traced = True
        self.end_untraced(start, False, traced)

    # ------------------------------------------------------------ the steps
    def _due(self, window: int) -> bool:
        return self.sample_every > 0 and window % self.sample_every == 0

    def _window_steps(self) -> int:
        return self._step - self._window.first_step

    def _claim_sample(self) -> bool:
        """Take the pending sample for this run (True at most once per request)."""
        with self._lock:
            if not self._sample_pending or not self._running:
                return False
            self._sample_pending = False
            return True

    def _wants_free_sample(self) -> bool:
        return self._sample_pending or self._window.sample_due or self._latest is None

    def _close_window(self, partial: bool) -> WindowRecord:
        """The record of the open window; opens the next one (lock held)."""
        record = self._window.record(self.run_id, self._step, self._latest, partial)
        index = self._window.index + 1
        self._window = WindowState(index, self._step, self._due(index))
        if self._window.sample_due and self.every == 1:
            self._sample_pending = True
        return record

    def _caller_trace(self, session: Any, meta: Any) -> bool:
        """Whether a run filled the caller's ``RunMetadata`` with a trace (it may
        then serve as the sample)."""
        if not len(meta.step_stats.dev_stats):
            return False
        if self._wants_free_sample():
            self._take_sample(session, meta)
        return True

    def _take_sample(self, session: Any, meta: Any) -> None:
        """Analyse a traced run; failures are logged once."""
        step = self._step
        try:
            metrics = self._analyser.metrics(session.graph, meta, step)
        except Exception as err:
            self._warner.warn("sample", f"a monitoring sample failed (training continues): {err}")
            return
        with self._lock:
            self._sample_pending = False
            self._window.sample_due = False
            if metrics is not None:
                self._latest = metrics

    def _emit(self, record: WindowRecord) -> None:
        self._records.append(record)
        self._output.line(record.to_line(self.level))
        self._output.record(record.to_dict())


def _check_int(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")


def monitor_for(
    spec: int | Monitor | None, every: int, profile_dir: str | os.PathLike[str]
) -> Monitor | None:
    """The monitor a ``ProfileContext(monitor=spec, monitor_every=every)`` owns.

    Args:
        spec: 0/None (off), 1 or 2 (a level), or a ready :class:`Monitor`.
        every: window length for a level.
        profile_dir: the context's directory (``monitor.jsonl`` goes there).

    Raises:
        ValueError: any other ``spec``, or a bad ``every``.
    """
    if isinstance(spec, Monitor):
        return spec
    if spec is None or (isinstance(spec, int) and not isinstance(spec, bool) and spec == 0):
        return None
    if isinstance(spec, int) and not isinstance(spec, bool) and spec in LEVELS:
        return Monitor(profile_dir, level=spec, every=every)
    raise ValueError(f"monitor must be 0, 1, 2 or a tfprof_lite.Monitor; got {spec!r}")
