"""Profile an unmodified TF1-style script, configured by environment variables.

``TFPROF_LITE_DIR=/tmp/prof python -m tfprof_lite.run train.py --its --args``
runs ``train.py`` as ``__main__`` (``-m package.module`` works too) inside a
:class:`~tfprof_lite.session.profile_context.ProfileContext` and leaves
``profile_<step>`` files in ``/tmp/prof``. Code that can be changed may call
:func:`start_from_env` instead (e.g. from a ``sitecustomize`` it already has).

Environment (only ``TFPROF_LITE_DIR`` is required; without it nothing is
profiled and the script runs as usual):

=============================  ==============================================
``TFPROF_LITE_DIR``            directory of the profile files
``TFPROF_LITE_TRACE_STEPS``    ``auto`` (default: TensorFlow's sampling) or
                               steps such as ``5,10,20-30,40-100:10``
``TFPROF_LITE_DUMP_STEPS``     steps to write ``profile_<step>`` at (default
                               ``100``; empty for none)
``TFPROF_LITE_STEP_SOURCE``    ``run_count`` (default) or ``global_step``
``TFPROF_LITE_DUMP_ON_EXIT``   ``1`` (default): also write the profile of the
                               last step at exit if it has unsaved traces
``TFPROF_LITE_DEBUG``          ``1``: write ``run_meta_<step>`` files too
=============================  ==============================================

TensorFlow is not imported early: the context is entered right after the
script's own ``import tensorflow`` loads ``tensorflow.python.client.session``
(a one-shot import watcher), so environment variables the script sets before
importing TensorFlow still take effect. The context is left (and the final
profile written) when the script ends, also through ``sys.exit`` or an
exception, and at interpreter exit for :func:`start_from_env` users.
``python -m tfprof_lite.run`` then prints one line with the files written, or
why there are none (:func:`outcome`).
"""

from __future__ import annotations

import atexit
import dataclasses
import importlib.abc
import importlib.machinery
import logging
import os
import runpy
import sys
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any, Callable

from tfprof_lite.session.eager import executing_eagerly
from tfprof_lite.session.profile_context import STEP_SOURCES, ProfileContext

__all__ = [
    "ENV_DIR",
    "Settings",
    "main",
    "outcome",
    "parse_steps",
    "settings_from_env",
    "start",
    "start_from_env",
    "stop",
]

log = logging.getLogger("tfprof_lite")

ENV_DIR = "TFPROF_LITE_DIR"
ENV_TRACE_STEPS = "TFPROF_LITE_TRACE_STEPS"
ENV_DUMP_STEPS = "TFPROF_LITE_DUMP_STEPS"
ENV_STEP_SOURCE = "TFPROF_LITE_STEP_SOURCE"
ENV_DUMP_ON_EXIT = "TFPROF_LITE_DUMP_ON_EXIT"
ENV_DEBUG = "TFPROF_LITE_DEBUG"

_SESSION_MODULE = "tensorflow.python.client.session"
_USAGE = (
    "usage: python -m tfprof_lite.run (script.py | -m module) [args...]\n"
    f"Profiles the program into ${ENV_DIR} (see: tfprof-lite help capture); without "
    f"{ENV_DIR} it runs unprofiled.\n"
)


@dataclasses.dataclass(frozen=True)
class Settings:
    """A ``ProfileContext`` configuration read from the environment."""

    profile_dir: str
    trace_steps: list[int] | None = None
    dump_steps: list[int] | None = None
    step_source: str = "run_count"
    dump_on_exit: bool = True
    debug: bool = False

    def context(self) -> ProfileContext:
        """A new (not yet entered) context with these settings."""
        return ProfileContext(
            self.profile_dir,
            trace_steps=self.trace_steps,
            dump_steps=self.dump_steps,
            debug=self.debug,
            step_source=self.step_source,
            dump_on_exit=self.dump_on_exit,
        )


def _parse_item(item: str, what: str) -> list[int]:
    first, _, stride_text = item.partition(":")
    low, dash, high = first.partition("-")
    try:
        start = int(low)
        end = int(high) if dash else start
        stride = int(stride_text) if stride_text else 1
    except ValueError:
        raise ValueError(f"{what}: {item!r} is not a step, a range a-b or a-b:stride") from None
    if stride < 1 or end < start:
        raise ValueError(f"{what}: bad range {item!r} (need a <= b and stride >= 1)")
    return list(range(start, end + 1, stride))


def parse_steps(text: str, what: str = "steps") -> list[int]:
    """Steps from ``"5,10,20-30,40-100:10"`` (ranges inclusive; ``:`` = stride).

    Raises:
        ValueError: a malformed item.
    """
    steps: list[int] = []
    for item in text.replace(" ", "").split(","):
        if item:
            steps.extend(_parse_item(item, what))
    return steps


def _flag(environ: Mapping[str, str], name: str, default: bool) -> bool:
    value = environ.get(name, "").strip().lower()
    if not value:
        return default
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name}: expected 1 or 0, got {value!r}")


def settings_from_env(environ: Mapping[str, str] | None = None) -> Settings | None:
    """The settings in ``environ`` (default ``os.environ``); None without a directory.

    Raises:
        ValueError: a malformed variable (the message names it).
    """
    env = os.environ if environ is None else environ
    profile_dir = env.get(ENV_DIR, "").strip()
    if not profile_dir:
        return None
    trace_text = env.get(ENV_TRACE_STEPS, "auto").strip()
    trace = None if trace_text.lower() in ("", "auto") else parse_steps(trace_text, ENV_TRACE_STEPS)
    dump_text = env.get(ENV_DUMP_STEPS)
    dump = None if dump_text is None else parse_steps(dump_text, ENV_DUMP_STEPS)
    source = env.get(ENV_STEP_SOURCE, "").strip() or "run_count"
    if source not in STEP_SOURCES:
        raise ValueError(f"{ENV_STEP_SOURCE}: expected one of {', '.join(STEP_SOURCES)}")
    return Settings(
        profile_dir=profile_dir,
        trace_steps=trace,
        dump_steps=dump,
        step_source=source,
        dump_on_exit=_flag(env, ENV_DUMP_ON_EXIT, True),
        debug=_flag(env, ENV_DEBUG, False),
    )


class _NotifyingLoader(importlib.abc.Loader):
    """Wraps a module's loader and calls ``callback`` once the module ran."""

    def __init__(self, loader: Any, callback: Callable[[], None]) -> None:
        self._loader = loader
        self._callback = callback

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._callback()


class _SessionImportWatcher(importlib.abc.MetaPathFinder):
    """Calls ``callback`` right after TensorFlow's session module is imported."""

    def __init__(self, callback: Callable[[], None]) -> None:
        self._callback = callback

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _SESSION_MODULE:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _NotifyingLoader(spec.loader, self._callback)
                return spec
        return None


class _Autostart:
    """The process-wide autostarted context and its import watcher."""

    def __init__(self) -> None:
        self.context: ProfileContext | None = None
        self.watcher: _SessionImportWatcher | None = None
        self.entered = False
        self.atexit_registered = False
        #: the context :func:`stop` left last, and whether it was ever entered
        self.last: ProfileContext | None = None
        self.last_entered = False

    def enter(self) -> None:
        self.remove_watcher()
        if self.context is None or self.entered:
            return
        try:
            self.context.__enter__()
            self.entered = self.last_entered = True
        except Exception as err:
            log.warning("tfprof_lite: cannot start profiling: %s", err)

    def remove_watcher(self) -> None:
        if self.watcher is not None and self.watcher in sys.meta_path:
            sys.meta_path.remove(self.watcher)
        self.watcher = None


_state = _Autostart()


def start(settings: Settings) -> ProfileContext:
    """Profile this process with ``settings`` until :func:`stop` (or exit).

    The context is entered now if TensorFlow is imported, else as soon as it
    is. Returns the context (its ``profiler`` etc. are usable as usual).

    Raises:
        RuntimeError: profiling was already started.
    """
    if _state.context is not None:
        raise RuntimeError("tfprof_lite autostart is already running; call stop() first")
    _state.context = settings.context()
    _state.last, _state.last_entered = None, False
    if _SESSION_MODULE in sys.modules:
        _state.enter()
    else:
        _state.watcher = _SessionImportWatcher(_state.enter)
        sys.meta_path.insert(0, _state.watcher)
    if not _state.atexit_registered:
        atexit.register(stop)
        _state.atexit_registered = True
    return _state.context


def start_from_env(environ: Mapping[str, str] | None = None) -> ProfileContext | None:
    """:func:`start` with :func:`settings_from_env`; None if ``TFPROF_LITE_DIR`` is unset."""
    settings = settings_from_env(environ)
    return None if settings is None else start(settings)


def stop() -> list[str]:
    """Leave the autostarted context (writing the final profile if configured).

    Returns:
        the basenames of the profile files written during the run.
    """
    _state.remove_watcher()
    context, _state.context = _state.context, None
    if context is None:
        return []
    _state.last = context
    if _state.entered:
        _state.entered = False
        context.__exit__(None, None, None)
    return context.written_profiles


def outcome(written: Sequence[str]) -> str:
    """What the end-of-run line says after ``profiles in DIR:``: the files written,
    or why there are none (TensorFlow never imported, no ``Session.run`` seen, or
    runs but no dump step reached)."""
    if written:
        return ", ".join(written)
    context = _state.last
    if not _state.last_entered or context is None:
        if _SESSION_MODULE in sys.modules:
            return "none (profiling could not start; see the warning above)"
        return "none (TensorFlow was not imported, so profiling never started)"
    if not context.saw_session_run:
        if executing_eagerly():
            return "none (the program ran eagerly: no graph-mode Session.run was seen)"
        return "none (no Session.run was seen)"
    return "none (Session.run calls were seen, but no dump step was reached)"


def _run_program(argv: list[str]) -> None:
    if argv[0] == "-m":
        if len(argv) < 2:
            raise SystemExit(_USAGE.rstrip())
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return
    script = argv[0]
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tfprof_lite.run``: run a program profiled per the environment.

    Returns:
        0 after the program ended normally (its ``sys.exit`` status passes
        through as ``SystemExit``), 2 on a usage or configuration error.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        sys.stderr.write(_USAGE)
        return 2 if not args else 0
    try:
        settings = settings_from_env()
    except ValueError as err:
        sys.stderr.write(f"tfprof_lite.run: {err}\n")
        return 2
    if settings is not None:
        start(settings)
    try:
        _run_program(args)
    finally:
        written = stop()
        if settings is not None:
            names = outcome(written)
            sys.stderr.write(f"tfprof_lite: profiles in {settings.profile_dir}: {names}\n")
    return 0
