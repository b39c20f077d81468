"""One ``Session.run`` or session-callable call, as the run listeners see it.

Contract: a :class:`RunCall` carries the caller's arguments unchanged. A listener
may ask for a traced run with :meth:`RunCall.request_trace` before the run: the
call then runs once with ``trace_level=FULL_TRACE`` merged into a *copy* of the
caller's ``RunOptions`` and fills the caller's ``RunMetadata`` (or a new one,
:attr:`RunCall.trace_meta`). Asking twice is the same as asking once, so two
listeners share one traced run. Without a request the call runs exactly as
called. TensorFlow is imported only by the functions that need it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Union

__all__ = [
    "OPTIONS_ATTR",
    "CallableRun",
    "CannotTraceError",
    "Originals",
    "RunCall",
    "SessionRun",
    "fetch_key",
    "full_trace",
    "new_run_metadata",
]

#: Attribute of a session callable holding a copy of its CallableOptions.
OPTIONS_ATTR = "_tfprof_lite_callable_options"
_TWIN_ATTR = "_tfprof_lite_traced_twin"
_FULL_TRACE = 3  # RunOptions.FULL_TRACE


class CannotTraceError(Exception):
    """A call cannot be traced (explained in the message); it runs untraced."""


@dataclasses.dataclass
class Originals:
    """TensorFlow's session class and its methods as they were before patching.

    Attributes:
        session_class: ``tensorflow.python.client.session.BaseSession``.
        run: ``BaseSession.run``.
        call: ``BaseSession._Callable.__call__``.
        make_callable: ``BaseSession._make_callable_from_options``.
    """

    session_class: Any
    run: Callable[..., Any]
    call: Callable[..., Any]
    make_callable: Callable[..., Any]


def fetch_key(graph: Any, fetches: Any) -> str:
    """Sorted names of the unique ``Session.run`` fetches joined by ``-``.

    TensorFlow's key for "fetches never traced before" (automatic tracing).
    """
    from tensorflow.python.client import session as tf_session

    with graph.as_default():
        mapper = tf_session._FetchMapper.for_fetch(fetches)
        names = [fetch.name for fetch in mapper.unique_fetches()]
    return "-".join(sorted(names))


def new_run_metadata() -> Any:
    """An empty TensorFlow ``RunMetadata``."""
    from tensorflow.core.protobuf import config_pb2

    return config_pb2.RunMetadata()


def full_trace(options: Any) -> Any:
    """A copy of ``options`` (RunOptions or None) with FULL_TRACE."""
    if options is None:
        from tensorflow.core.protobuf import config_pb2

        return config_pb2.RunOptions(trace_level=_FULL_TRACE)
    traced = type(options)()
    traced.CopyFrom(options)
    traced.trace_level = _FULL_TRACE
    return traced


class SessionRun:
    """One ``BaseSession.run`` call.

    Attributes:
        session: the session.
        run_metadata: the caller's ``RunMetadata`` (None if not given).
        traced: a listener asked for FULL_TRACE.
        trace_meta: the ``RunMetadata`` a traced run fills.
    """

    __slots__ = (
        "_original",
        "_trace_options",
        "feed_dict",
        "fetches",
        "options",
        "run_metadata",
        "session",
        "trace_meta",
        "traced",
    )

    #: Session callables are told apart by this flag (the monitor samples runs only).
    is_callable = False

    def __init__(
        self,
        original: Callable[..., Any],
        session: Any,
        fetches: Any,
        feed_dict: Any,
        options: Any,
        run_metadata: Any,
    ) -> None:
        self._original = original
        self.session = session
        self.fetches = fetches
        self.feed_dict = feed_dict
        self.options = options
        self.run_metadata = run_metadata
        self.traced = False
        self.trace_meta: Any = None
        self._trace_options: Any = None

    @property
    def graph(self) -> Any:
        """The session's graph."""
        return self.session.graph

    def fetch_key(self) -> str:
        """See :func:`fetch_key`."""
        return fetch_key(self.graph, self.fetches)

    def request_trace(self) -> None:
        """Run with FULL_TRACE (idempotent)."""
        if self.traced:
            return
        self._trace_options = full_trace(self.options)
        self.trace_meta = self.run_metadata
        if self.trace_meta is None:
            self.trace_meta = new_run_metadata()
        self.traced = True

    def run(self) -> Any:
        """Call TensorFlow's ``run``, traced if requested."""
        if self.traced:
            args = (self.fetches, self.feed_dict, self._trace_options, self.trace_meta)
        else:
            args = (self.fetches, self.feed_dict, self.options, self.run_metadata)
        return self._original(self.session, *args)


class CallableRun:
    """One call of a ``BaseSession._Callable`` (graph-mode Keras).

    Attributes: as :class:`SessionRun`; ``run_metadata`` is the caller's
    ``run_metadata=`` keyword argument.
    """

    is_callable = True

    def __init__(
        self, originals: Originals, callable_: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        self._originals = originals
        self._callable = callable_
        self.session = callable_._session
        self._args = args
        self._kwargs = kwargs
        self.run_metadata = kwargs.get("run_metadata")
        self.traced = False
        self.trace_meta: Any = None
        self._twin: Any = None

    @property
    def graph(self) -> Any:
        """The session's graph."""
        return self.session.graph

    def _options(self) -> Any:
        options = getattr(self._callable, OPTIONS_ATTR, None)
        if options is None:
            raise CannotTraceError(
                "a session callable made before the ProfileContext was entered "
                "(e.g. an earlier K.function call) cannot be traced; enter the "
                "context before the first call"
            )
        return options

    def fetch_key(self) -> str:
        """Sorted fetch and target names joined by ``-``.

        Raises:
            CannotTraceError: the callable's options are unknown.
        """
        options = self._options()
        return "-".join(sorted([*options.fetch, *options.target]))

    def request_trace(self) -> None:
        """Run a FULL_TRACE twin of the callable (made once, idempotent).

        Raises:
            CannotTraceError: the callable's options are unknown.
        """
        if self.traced:
            return
        options = self._options()
        twin = self._callable
        if options.run_options.trace_level != _FULL_TRACE:
            twin = getattr(self._callable, _TWIN_ATTR, None)
            if twin is None:
                traced = type(options)()
                traced.CopyFrom(options)
                traced.run_options.trace_level = _FULL_TRACE
                twin = self._originals.make_callable(self.session, traced)
                setattr(self._callable, _TWIN_ATTR, twin)
        self._twin = twin
        self.trace_meta = self.run_metadata
        if self.trace_meta is None:
            self.trace_meta = new_run_metadata()
        self.traced = True

    def run(self) -> Any:
        """Call the callable (its traced twin if requested)."""
        call = self._originals.call
        if not self.traced:
            return call(self._callable, *self._args, **self._kwargs)
        kwargs = dict(self._kwargs, run_metadata=self.trace_meta)
        return call(self._twin, *self._args, **kwargs)


#: What a listener receives.
RunCall = Union[SessionRun, CallableRun]
