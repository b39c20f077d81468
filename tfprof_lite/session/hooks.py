"""``ProfilerHook``: tfprof_lite profiles from ``MonitoredTrainingSession`` / Estimator.

A ``tf.compat.v1.train.SessionRunHook`` (this module imports TensorFlow;
``import tfprof_lite`` does not, ``tfprof_lite.ProfilerHook`` imports this module
on first use). It needs no patching of ``Session.run``: it asks the monitored
session for FULL_TRACE on chosen steps through ``SessionRunArgs``.

Contract:

* A step is a run that advances the global step; it is keyed by the global
  step's value after the run (the first training step from a fresh start is
  1). The hook reads the global step after session creation and after every
  run (one tiny extra ``Session.run``; a read fetched *with* the train op, as
  TensorFlow's hooks do, races with the increment of
  ``optimizer.minimize(global_step=...)``), and plans the coming step as that
  value + 1. Runs that do not advance it (evaluation) are not steps; a trace
  taken for one is dropped. A graph without a global step is an error at
  ``begin()`` (``tf.compat.v1.train.get_or_create_global_step()`` fixes it).
* Which steps are traced, dumped and profiled follows
  :mod:`tfprof_lite.session.schedule` (TensorFlow's ``ProfileContext`` rules; the
  10 warm-up steps and the random-sampling limit count the steps seen by the hook,
  not the global step, so a restored run warms up again).
* Traced steps go to :attr:`ProfilerHook.profiler`; ``profile_<step>`` files are
  written atomically into ``profile_dir`` at ``dump_steps`` and, with
  ``dump_on_end`` (default), at ``end()`` if steps were traced since the last
  dump. Failures are logged on the ``tfprof_lite`` logger (once per kind, with
  a summary line at ``end()``), never raised into training.
* The caller's own ``RunOptions``/``RunMetadata`` are merged by
  ``MonitoredSession`` (trace levels are combined, the caller's metadata filled).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from tfprof_lite.capture.requirement import require_tensorflow

require_tensorflow("ProfilerHook")

from tensorflow.core.protobuf import config_pb2  # noqa: E402
from tensorflow.python.training import session_run_hook, training_util  # noqa: E402

from tfprof_lite.session.base import Capture, Plan  # noqa: E402
from tfprof_lite.session.calls import fetch_key  # noqa: E402

__all__ = ["ProfilerHook"]


class ProfilerHook(Capture, session_run_hook.SessionRunHook):  # type: ignore[misc]
    """Traces chosen training steps and writes ``profile_<global step>`` files.

    Usable wherever a ``SessionRunHook`` is: ``MonitoredTrainingSession(hooks=
    [...])``, ``MonitoredSession``, ``Estimator.train(hooks=[...])``.

    Args:
        profile_dir: directory for ``profile_<step>`` files (created when needed).
        trace_steps: global steps to trace (at most 100), or None for automatic
            sampling after 10 warm-up runs.
        dump_steps: global steps after which the profile is written, or None
            for ``[100]``.
        enabled: False makes the hook a no-op (``profiler`` is None).
        debug: also write ``run_meta_<step>`` text files and ``debug:`` lines.
        dump_on_end: write ``profile_<last step>`` at ``end()`` when steps were
            traced since the last dump.
        task: the task this process runs in a distributed job
            (``/job:worker/task:1``): traced steps are also written task-tagged,
            keyed by global step, for ``tfprof-lite cluster`` (``docs/cluster.md``).
        xspace_logdir: at every dump also write the profile as an XSpace under
            ``xspace_logdir/plugins/profile/<time>_step_<step>/`` for XProf or
            TensorBoard's Profile tab (``docs/xspace_write.md``).

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
        *,
        dump_on_end: bool = True,
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
            global_steps=True,
            xspace_logdir=xspace_logdir,
        )
        self._dump_on_end = dump_on_end
        self._global_step: Any = None
        self._last: int | None = None
        self._runs = 0
        self._pending: Plan | None = None

    def begin(self) -> None:
        """Find the global step (creating its read tensor, as TensorFlow's hooks).

        Raises:
            RuntimeError: the graph has no global step.
        """
        if not self._enabled:
            return
        self._global_step = training_util._get_or_create_global_step_read()
        if self._global_step is None:
            raise RuntimeError(
                "ProfilerHook needs a global step; create one with "
                "tf.compat.v1.train.get_or_create_global_step()"
            )
        self._last = None

    def after_create_session(self, session: Any, coord: Any) -> None:
        """Read the starting global step (after initialization or restore)."""
        if self._enabled:
            self._last = self._read(session)

    def before_run(self, run_context: Any) -> Any:
        """Request FULL_TRACE when the coming step (global step + 1) is traced."""
        if not self._enabled:
            return None
        self._pending = None
        if self._last is not None:
            self._pending = self._guard(
                "planning a step", self._plan_run, run_context, self._last + 1
            )
        if self._pending is None or not self._pending.decision.trace:
            return None
        options = config_pb2.RunOptions(trace_level=config_pb2.RunOptions.FULL_TRACE)
        return session_run_hook.SessionRunArgs(None, options=options)

    def _plan_run(self, run_context: Any, step: int) -> Plan | None:
        graph = run_context.session.graph
        fetches = run_context.original_args.fetches
        return self._plan(step, self._runs + 1, lambda: fetch_key(graph, fetches))

    def _read(self, session: Any) -> int | None:
        value = self._guard("reading the global step", session.run, self._global_step)
        return None if value is None else int(value)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        """Read the global step; if it advanced, record the step as planned."""
        if not self._enabled:
            return
        plan, self._pending = self._pending, None
        before, self._last = self._last, self._read(run_context.session)
        step = self._last
        if before is None or step is None or step <= before:  # not a training step
            if plan is not None:
                self._schedule.undo(plan.decision)
            return
        self._runs += 1
        self._counted(step)
        if plan is not None:
            graph = self._guard("reading the session's graph", lambda: run_context.session.graph)
            self._record(plan, step, graph, run_values.run_metadata)

    def end(self, session: Any) -> None:
        """Write the final profile (``dump_on_end``); log the failure summary."""
        if not self._enabled:
            return
        if self._dump_on_end:
            self._final_dump()
        self._report_failures()
