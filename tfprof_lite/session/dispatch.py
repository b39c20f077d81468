"""One patch of ``Session.run`` shared by every run listener.

Contract:

* While at least one listener is registered (:func:`add_listener`),
  ``BaseSession.run``, ``BaseSession._make_callable_from_options`` and
  ``BaseSession._Callable.__call__`` (graph-mode ``tf_keras``) are replaced by
  wrappers; the last :func:`remove_listener` restores exactly what was there
  (:class:`~tfprof_lite.session.patching.AttributePatch`). With no listener the
  wrappers call TensorFlow directly.
* Listeners (:class:`RunListener`: the ``ProfileContext``, the ``Monitor``) are
  called in ``order`` (lower first, i.e. outside) before a run and in reverse
  order after it, with one :class:`~tfprof_lite.session.calls.RunCall`; a
  listener asks for FULL_TRACE with ``call.request_trace()`` and learns the
  outcome in ``after_run`` (``failed``, ``call.traced``, ``call.trace_meta``).
  A listener whose ``before_run`` returns None is not called after the run.
* Fast path: most runs need nothing from a listener but to be counted or timed.
  ``begin_untraced`` says so before the run (returning a ticket, with no per-call
  record); those listeners get ``end_untraced`` after it, told whether another
  listener traced the run. A single listener on the fast path costs one method
  call before and one after TensorFlow's ``run``.
* Listeners call TensorFlow's unpatched methods through :func:`originals` (e.g.
  the ``ProfileContext``'s global-step reads), so those are never seen as runs.
* Errors of the run propagate unchanged, after every listener was told.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import threading
from collections.abc import Mapping
from typing import Any, Callable, Optional, Protocol

from tfprof_lite.capture.requirement import require_tensorflow
from tfprof_lite.session.calls import OPTIONS_ATTR, CallableRun, Originals, RunCall, SessionRun
from tfprof_lite.session.patching import AttributePatch

__all__ = ["INNER", "OUTER", "RunListener", "add_listener", "originals", "remove_listener"]

#: ``order`` of a listener that sees runs first (the monitor: it times the others).
OUTER = 0
#: ``order`` of a listener inside the outer ones (the ProfileContext).
INNER = 1

# (the only listener or None, all listeners): read without the lock on every run
_route: tuple[Optional[RunListener], tuple[RunListener, ...]] = (None, ())
_NO_KWARGS: Mapping[str, Any] = {}
_orders: list[tuple[int, RunListener]] = []
_lock = threading.Lock()
_patch: Optional[AttributePatch] = None
_originals: Optional[Originals] = None


class RunListener(Protocol):
    """What the dispatcher calls around each run (see the module docstring)."""

    def begin_untraced(self, run_metadata: Any) -> Any:
        """Begin a run that needs only counting or timing; a ticket, or None for
        :meth:`before_run` instead. ``run_metadata``: the caller's (or None)."""

    def end_untraced(self, ticket: Any, failed: bool, traced: bool) -> None:
        """End a run begun by :meth:`begin_untraced` (``traced``: another
        listener traced it)."""

    def before_run(self, call: RunCall) -> Any:
        """Prepare ``call`` (maybe ``call.request_trace()``); a ticket, or None to
        ignore this run."""

    def after_run(self, call: RunCall, ticket: Any, failed: bool) -> None:
        """After a run :meth:`before_run` took a ticket for (``failed``: it raised)."""


def add_listener(listener: RunListener, order: int) -> Originals:
    """Register ``listener``; patches TensorFlow if it is the first.

    Returns:
        TensorFlow's unpatched methods.
    """
    global _patch, _originals
    with _lock:
        if _patch is None:
            _patch, _originals = _install()
        assert _originals is not None
        _orders.append((order, listener))
        _orders.sort(key=lambda entry: entry[0])
        _publish()
        return _originals


def remove_listener(listener: RunListener) -> None:
    """Unregister ``listener``; restores TensorFlow's methods after the last one."""
    global _patch, _originals
    with _lock:
        _orders[:] = [entry for entry in _orders if entry[1] is not listener]
        _publish()
        if not _orders and _patch is not None:
            _patch.remove()
            _patch = _originals = None


def _publish() -> None:
    """Make the registered listeners the ones the wrappers call (lock held)."""
    global _route
    listeners = tuple(entry[1] for entry in _orders)
    _route = (listeners[0] if len(listeners) == 1 else None, listeners)


def originals() -> Originals | None:
    """TensorFlow's unpatched methods while patched, else None."""
    return _originals


def _install() -> tuple[AttributePatch, Originals]:
    require_tensorflow("profiling or monitoring a Session")
    base = importlib.import_module("tensorflow.python.client.session").BaseSession
    callable_cls = base._Callable
    saved = Originals(
        session_class=base,
        run=base.run,
        call=callable_cls.__call__,
        make_callable=base._make_callable_from_options,
    )
    patch = AttributePatch("profiling or monitoring")
    patch.set(base, "run", _run_wrapper(saved))
    patch.set(base, "_make_callable_from_options", _make_callable_wrapper(saved))
    patch.set(callable_cls, "__call__", _call_wrapper(saved))
    return patch, saved


# ----------------------------------------------------------------- dispatching
def _dispatch(
    call: RunCall, listeners: tuple[RunListener, ...], fast: list[tuple[RunListener, Any]]
) -> Any:
    """Run ``call`` with ``listeners`` on the full protocol; ``fast`` holds the
    (listener, ticket) pairs begun on the fast path (outside them)."""
    begun: list[tuple[RunListener, Any]] = []
    failed = True
    try:
        for listener in listeners:
            ticket = listener.before_run(call)
            if ticket is not None:
                begun.append((listener, ticket))
        result = call.run()
        failed = False
        return result
    finally:
        for listener, ticket in reversed(begun):
            listener.after_run(call, ticket, failed)
        _end_untraced(fast, failed, call.traced)


def _end_untraced(fast: list[tuple[RunListener, Any]], failed: bool, traced: bool) -> None:
    for listener, ticket in reversed(fast):
        listener.end_untraced(ticket, failed, traced)


def _chain(
    listeners: tuple[RunListener, ...],
    run_metadata: Any,
    invoke: Callable[..., Any],
    make_call: Callable[..., RunCall],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
) -> Any:
    """Several listeners: the fast path as far as they take it, then the full
    protocol. ``invoke(*args, **kwargs)`` is TensorFlow's call, ``make_call``
    builds the call record from the same arguments."""
    if len(listeners) == 2:  # a monitor and a context: no per-call lists
        return _pair(listeners, run_metadata, invoke, make_call, args, kwargs)
    fast: list[tuple[RunListener, Any]] = []
    for listener in listeners:
        ticket = listener.begin_untraced(run_metadata)
        if ticket is None:
            return _dispatch(make_call(*args, **kwargs), listeners[len(fast) :], fast)
        fast.append((listener, ticket))
    try:
        result = invoke(*args, **kwargs)
    except BaseException:
        _end_untraced(fast, True, False)
        raise
    _end_untraced(fast, False, False)
    return result


def _pair(
    listeners: tuple[RunListener, ...],
    run_metadata: Any,
    invoke: Callable[..., Any],
    make_call: Callable[..., RunCall],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
) -> Any:
    """:func:`_chain` for two listeners."""
    outer, inner = listeners
    outer_ticket = outer.begin_untraced(run_metadata)
    if outer_ticket is None:
        return _dispatch(make_call(*args, **kwargs), listeners, [])
    inner_ticket = inner.begin_untraced(run_metadata)
    if inner_ticket is None:
        return _dispatch(make_call(*args, **kwargs), (inner,), [(outer, outer_ticket)])
    try:
        result = invoke(*args, **kwargs) if kwargs else invoke(*args)
    except BaseException:
        inner.end_untraced(inner_ticket, True, False)
        outer.end_untraced(outer_ticket, True, False)
        raise
    inner.end_untraced(inner_ticket, False, False)
    outer.end_untraced(outer_ticket, False, False)
    return result


def _run_wrapper(saved: Originals) -> Callable[..., Any]:
    original = saved.run
    make_call = functools.partial(SessionRun, original)

    @functools.wraps(original)
    def run(
        self: Any,
        fetches: Any,
        feed_dict: Any = None,
        options: Any = None,
        run_metadata: Any = None,
    ) -> Any:
        solo, listeners = _route
        if solo is None:
            if not listeners:
                return original(self, fetches, feed_dict, options, run_metadata)
            args = (self, fetches, feed_dict, options, run_metadata)
            chain = _pair if len(listeners) == 2 else _chain
            return chain(listeners, run_metadata, original, make_call, args, _NO_KWARGS)
        ticket = solo.begin_untraced(run_metadata)
        if ticket is None:
            call = SessionRun(original, self, fetches, feed_dict, options, run_metadata)
            return _dispatch(call, listeners, [])
        try:
            result = original(self, fetches, feed_dict, options, run_metadata)
        except BaseException:
            solo.end_untraced(ticket, True, False)
            raise
        solo.end_untraced(ticket, False, False)
        return result

    return run


def _make_callable_wrapper(saved: Originals) -> Callable[..., Any]:
    original = saved.make_callable

    @functools.wraps(original)
    def make_callable_from_options(self: Any, callable_options: Any) -> Any:
        made = original(self, callable_options)
        with contextlib.suppress(Exception):
            kept = type(callable_options)()
            kept.CopyFrom(callable_options)
            setattr(made, OPTIONS_ATTR, kept)
        return made

    return make_callable_from_options


def _call_wrapper(saved: Originals) -> Callable[..., Any]:
    original = saved.call

    def make_call(callable_: Any, *args: Any, **kwargs: Any) -> CallableRun:
        return CallableRun(saved, callable_, args, kwargs)

    @functools.wraps(original)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        listeners = _route[1]
        if not listeners:
            return original(self, *args, **kwargs)
        run_metadata = kwargs.get("run_metadata")
        return _chain(listeners, run_metadata, original, make_call, (self, *args), kwargs)

    return call
