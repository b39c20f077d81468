"""The profiler of one capture, its files and views, and its failure log.

Contract:

* :class:`FailureLog` logs the first failure of each kind (what was being done
  and the exception type) as one warning on the ``tfprof_lite`` logger, only
  counts the repeats, and logs one summary line with the counts when the
  capture ends (``ProfileContext.__exit__``, ``ProfilerHook.end``).
* :class:`ProfileRecorder` owns the :class:`~tfprof_lite.profiler.Profiler`
  (created lazily, re-pointed at the session's graph for each traced step),
  writes ``<profile_dir>/profile_<step>`` atomically and runs the views
  registered with ``add_auto_profiling`` at their steps, keeping the results
  for ``get_profiles``. Its capture runs in
  :func:`~tfprof_lite.capture.notes.internal_capture`: tfprof's incomplete-shapes
  note is printed once per process, not for every context or traced graph.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
from collections.abc import Iterable
from typing import Any

from tfprof_lite.capture.notes import internal_capture
from tfprof_lite.errors import TfprofLiteError
from tfprof_lite.formats.xspace.write.export import run_name
from tfprof_lite.model.cluster import normalize_task
from tfprof_lite.profiler import Profiler
from tfprof_lite.session.schedule import step_set

__all__ = ["FailureLog", "ProfileRecorder"]

log = logging.getLogger("tfprof_lite")

_VIEW_METHODS = {
    "graph": "profile_graph",
    "scope": "profile_name_scope",
    "op": "profile_operations",
    "code": "profile_python",
}


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


def task_tag(task: str) -> str:
    """The file tag of a task: ``/job:worker/replica:0/task:1`` -> ``worker-0-1``.

    Raises:
        ValueError: ``task`` names no ``/job:J/replica:R/task:T``.
    """
    full = normalize_task(task)
    if full is None:
        raise ValueError(f"task must look like /job:worker/replica:0/task:1, got {task!r}")
    job, replica, number = (part.split(":", 1)[1] for part in full.strip("/").split("/"))
    return f"{job}-{replica}-{number}"


class ProfileRecorder:
    """The profiler of one capture, its profile files and auto-profiling views.

    Args:
        profile_dir: directory of the ``profile_<step>`` (and debug) files.
        debug: also write ``run_meta_<step>`` text files and ``debug:`` lines
            on stderr.
        xspace_logdir: at each dump, also write the profile as an XSpace under
            ``xspace_logdir/plugins/profile/<time>_step_<step>/`` (XProf,
            TensorBoard's Profile tab).
    """

    def __init__(
        self,
        profile_dir: str,
        debug: bool = False,
        task: str | None = None,
        global_steps: bool = False,
        xspace_logdir: str | None = None,
    ) -> None:
        self.profile_dir = profile_dir
        self.xspace_logdir = xspace_logdir
        self.debug = debug
        self.task = normalize_task(task) if task else None
        if task:
            task_tag(task)  # a task that names none is refused up front
        self.global_steps = global_steps
        self._task_steps: dict[str, int] = {}
        self._profiler: Profiler | None = None
        self._auto_profiles: list[tuple[str, Any, frozenset[int]]] = []
        self._views: dict[str, dict[int, Any]] = {}
        self.dirty = False
        self.written: list[str] = []

    @property
    def profiler(self) -> Profiler:
        """The profiler (created on TensorFlow's default graph if none yet)."""
        if self._profiler is None:
            with internal_capture():
                self._profiler = Profiler()
        return self._profiler

    @property
    def coverage(self) -> float:
        """Share of the graph's nodes seen in traced steps (0 before any)."""
        if self._profiler is None:
            return 0.0
        return self._profiler.coverage

    def say(self, message: str) -> None:
        """Write a ``debug:`` line on stderr in debug mode (as TensorFlow does)."""
        if self.debug:
            sys.stderr.write(f"debug: {message}\n")

    def profiler_for(self, graph: Any) -> Profiler:
        """The profiler, following ``graph`` (a ``tf.Graph``) from now on."""
        with internal_capture():  # tfprof's capture notes once per process
            if self._profiler is None:
                self._profiler = Profiler(graph)
                return self._profiler
            self._profiler.follow_graph(graph)
        return self._profiler

    def add_trace(self, step: int, graph: Any, run_meta: Any) -> None:
        """Add the traced RunMetadata of ``step`` (of a run on ``graph``)."""
        profiler = self.profiler_for(graph)
        with internal_capture():
            profiler.add_step(step, run_meta)
        self.dirty = True

    def write_debug_trace(self, step: int, run_meta: Any) -> None:
        """In debug mode, write ``run_meta_<step>`` (the RunMetadata as text)."""
        if self.debug:
            self.write_file(f"run_meta_{step}", str(run_meta))

    def write_task_trace(self, step: int, run_meta: Any) -> None:
        """With a task, write ``run_meta.<tag>.<step>.pb`` and the sidecar
        ``task.<tag>.json`` that names the task (see ``docs/cluster.md``)."""
        if not self.task:
            return
        tag = task_tag(self.task)
        self.write_file(f"run_meta.{tag}.{step}.pb", run_meta.SerializeToString())
        if self.global_steps:
            self._task_steps[str(step)] = step
        sidecar = {
            "task": self.task,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "steps": self._task_steps,
        }
        self.write_file(f"task.{tag}.json", json.dumps(sidecar, indent=1) + "\n")

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
        if self.xspace_logdir is not None and profiler.model.steps:
            host = task_tag(self.task) if self.task else None
            run = f"{run_name()}_step_{step}"
            for written in profiler.write_xspace(self.xspace_logdir, run=run, host=host):
                self.say(f"wrote XSpace {written}")
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
