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
* Inside ``ProfileContext(monitor=...)`` the monitor's patch is installed
  *over* the context's, so it sees the caller's runs (not the context's
  global-step reads) and recognises the steps the context traced.
* Failures of the monitor (unwritable directory, a sample that cannot be
  analysed) are logged once on the ``tfprof_lite`` logger and never reach the
  training loop. Only one monitor can be active: entering a second one raises
  ``RuntimeError`` (a ``ProfileContext`` whose monitor cannot start logs a
  warning and profiles without it).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import itertools
import json
import logging
import os
import sys
import threading
import time
from types import TracebackType
from typing import Any, Callable, Optional, TextIO

from tfprof_lite.analysis.monitor_log import MONITOR_FILE
from tfprof_lite.analysis.monitoring import (
    SCHEMA_VERSION,
    MonitorSummary,
    SampleMetrics,
    WindowRecord,
    sample_metrics,
    summarize,
    window_stats,
)
from tfprof_lite.capture import profile_context as _pc
from tfprof_lite.capture.patching import AttributePatch
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.records import NodeSpec

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


class _WindowState:
    """Accumulators of the open window."""

    def __init__(self, index: int, first_step: int, sample_due: bool) -> None:
        self.index = index
        self.first_step = first_step
        self.start = _clock()
        self.start_cpu = time.process_time()
        self.durations: list[float] = []
        self.traced = 0
        self.in_run = 0.0
        self.sample_due = sample_due


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
        self._stream = stream
        self._logger = logger
        self._summary = summary
        self._this_thread_only = this_thread_only
        self._lock = threading.Lock()
        self._patch: _MonitorPatch | None = None
        self._owned = False
        self._warned: set[str] = set()
        self._nodes: tuple[Any, int, list[NodeSpec]] | None = None
        self._reset()

    def _reset(self) -> None:
        self.run_id = ""
        self._thread: int | None = None
        self._fd: int | None = None
        self._running = False
        self._step = 0
        self._records: list[WindowRecord] = []
        self._latest: SampleMetrics | None = None
        self._sample_pending = False
        self._window = _WindowState(0, 0, self._due(0))

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
            self._patch = _MonitorPatch.install()
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
            if self._patch is not None:
                self._patch.remove()
                self._patch = None
        self._finish_run()

    def _start_owned(self) -> None:
        """Enter on behalf of a ``ProfileContext``; a failure is only logged."""
        try:
            self.__enter__()
        except RuntimeError as err:
            log.warning("tfprof_lite: monitoring is off for this ProfileContext: %s", err)
            return
        self._owned = True

    def _stop_owned(self) -> None:
        """Leave what :meth:`_start_owned` entered."""
        if self._owned:
            self._owned = False
            self.__exit__(None, None, None)

    # ------------------------------------------------------------ run life
    def _begin_run(self) -> None:
        self._reset()
        self.run_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{next(_RUN_IDS)}"
        self._thread = threading.get_ident() if self._this_thread_only else None
        self._open_file()
        self._running = True
        self._write_json(
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
        self._window = _WindowState(0, 0, self._due(0))
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
        self._write_json({**end, "steps": self._step, "summary": summary.to_dict()})
        if self._summary:
            self._write_line(summary.to_line())
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

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

    def _tick(self, seconds: float, traced: bool) -> None:
        """Count one finished run of ``seconds`` (traced runs are not timed)."""
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

    def _close_window(self, partial: bool) -> WindowRecord:
        """The record of the open window; opens the next one (lock held)."""
        window = self._window
        now = _clock()
        wall = max(now - window.start, 1e-9)
        steps = self._step - window.first_step
        record = WindowRecord(
            run=self.run_id,
            window=window.index,
            first_step=window.first_step,
            last_step=self._step - 1,
            steps=steps,
            traced=window.traced,
            stats=window_stats(window.durations),
            period_ms=round(1000.0 * wall / steps, 4) if steps else 0.0,
            in_run=round(window.in_run / wall, 4),
            host_cpu=round((time.process_time() - window.start_cpu) / wall, 4),
            sample=self._latest,
            time=time.time(),
            partial=partial,
        )
        index = window.index + 1
        self._window = _WindowState(index, self._step, self._due(index))
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

    def _sampled_run(
        self, original: Callable[..., Any], session: Any, args: tuple[Any, ...]
    ) -> Any:
        """One ``Session.run`` with FULL_TRACE, analysed as the window's sample."""
        fetches, feed_dict, options, run_metadata = args
        meta = run_metadata if run_metadata is not None else _pc._new_run_metadata()
        start = _clock()
        try:
            result = original(session, fetches, feed_dict, _pc._full_trace(options), meta)
        except BaseException:
            self._sample_pending = True
            raise
        elapsed = _clock() - start
        self._take_sample(session, meta)
        self._tick(elapsed, traced=True)
        return result

    # -------------------------------------------------------------- samples
    def _take_sample(self, session: Any, meta: Any) -> None:
        """Analyse a traced run; failures are logged once."""
        step = self._step
        try:
            metrics = sample_metrics(self._sample_model(session.graph, meta), step)
        except Exception as err:
            self._warn_once("sample", f"a monitoring sample failed (training continues): {err}")
            return
        with self._lock:
            self._sample_pending = False
            self._window.sample_due = False
            if metrics is not None:
                self._latest = metrics

    def _sample_model(self, graph: Any, meta: Any) -> ProfileModel:
        """A one-step model: the graph's nodes plus the traced step."""
        from tfprof_lite.model import decode
        from tfprof_lite.proto import messages as pb
        from tfprof_lite.proto.codec import parse

        model = ProfileModel()
        model.add_graph(self._graph_nodes(graph))
        model.add_step(0, decode.step_records(parse(pb.RunMetadata, meta, "run_metadata")))
        return model

    def _graph_nodes(self, graph: Any) -> list[NodeSpec]:
        """The graph's nodes, decoded once per graph version."""
        from tfprof_lite.capture.oplog import graph_def_message
        from tfprof_lite.model import decode

        version = int(getattr(graph, "version", -1))
        cached = self._nodes
        if cached is None or cached[0] is not graph or cached[1] != version:
            cached = (graph, version, list(decode.graph_nodes(graph_def_message(graph))))
            self._nodes = cached
        return cached[2]

    # --------------------------------------------------------------- output
    def _emit(self, record: WindowRecord) -> None:
        self._records.append(record)
        self._write_line(record.to_line(self.level))
        self._write_json(record.to_dict())

    def _write_line(self, line: str) -> None:
        """One whole line to the logger or the stream (one write + flush)."""
        try:
            if self._logger is not None:
                self._logger.info("%s", line)
                return
            stream = self._stream if self._stream is not None else sys.stderr
            stream.write(line + "\n")
            stream.flush()
        except Exception as err:  # a closed stream must not stop training
            self._warn_once("line", f"cannot write a monitoring line: {err}")

    def _open_file(self) -> None:
        path = self.path
        if path is None:
            return
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        except OSError as err:
            self._warn_once("open", f"cannot write {path}: {err.strerror}; printing lines only")

    def _write_json(self, doc: dict[str, Any]) -> None:
        """One JSON line, written with one ``os.write`` (O_APPEND: never torn)."""
        if self._fd is None:
            return
        data = (json.dumps(doc, separators=(",", ":")) + "\n").encode("utf-8")
        try:
            while data:
                data = data[os.write(self._fd, data) :]
        except OSError as err:
            self._warn_once("write", f"cannot append to {self.path}: {err.strerror}")

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning("tfprof_lite: %s", message)


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


class _MonitorPatch(AttributePatch):
    """``BaseSession.run`` and ``BaseSession._Callable.__call__`` while monitoring."""

    def __init__(self) -> None:
        super().__init__("monitoring")

    @classmethod
    def install(cls) -> _MonitorPatch:
        """Patch the two entry points (over any ``ProfileContext`` patch)."""
        base = importlib.import_module("tensorflow.python.client.session").BaseSession
        patch = cls()
        patch.set(base, "run", _run_wrapper(base.run))
        patch.set(base._Callable, "__call__", _call_wrapper(base._Callable.__call__))
        return patch


def _run_wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def run(
        self: Any,
        fetches: Any,
        feed_dict: Any = None,
        options: Any = None,
        run_metadata: Any = None,
    ) -> Any:
        monitor = _active
        if monitor is None or (monitor._thread is not None and monitor._thread != _ident()):
            return original(self, fetches, feed_dict, options, run_metadata)
        if monitor._sample_pending and monitor._claim_sample():
            return monitor._sampled_run(original, self, (fetches, feed_dict, options, run_metadata))
        pctx = _pc._active  # a ProfileContext whose patch runs inside ours
        marker = pctx._schedule.traced_steps if pctx is not None else 0
        start = _clock()
        result = original(self, fetches, feed_dict, options, run_metadata)
        elapsed = _clock() - start
        traced = pctx is not None and pctx._schedule.traced_steps != marker
        if run_metadata is not None and monitor._caller_trace(self, run_metadata):
            traced = True
        monitor._tick(elapsed, traced)
        return result

    return run


def _call_wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        monitor = _active
        if monitor is None or (monitor._thread is not None and monitor._thread != _ident()):
            return original(self, *args, **kwargs)
        pctx = _pc._active
        marker = pctx._schedule.traced_steps if pctx is not None else 0
        start = _clock()
        result = original(self, *args, **kwargs)
        elapsed = _clock() - start
        traced = pctx is not None and pctx._schedule.traced_steps != marker
        meta = kwargs.get("run_metadata")
        if meta is not None and monitor._caller_trace(self._session, meta):
            traced = True
        monitor._tick(elapsed, traced)
        return result

    return call
