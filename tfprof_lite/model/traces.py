"""The nodes' code traces of a profile model, and traces still to be computed.

:class:`DeferredTraces` holds :attr:`~DeferredTraces.traces` (one call stack
or None per node) and :attr:`~DeferredTraces.has_trace` for
:class:`~tfprof_lite.model.profile.ProfileModel`, and lets a reader hand in
a computation that fills them (:meth:`~DeferredTraces.defer_traces`) instead
of filling them while loading: reading an XSpace gathers what the call stacks
come from and leaves the HLO programs' parse to the first reader of a trace
(:func:`~tfprof_lite.formats.xspace.read.code.defer_code_stacks`). Any access to
either attribute, to read or to change it, runs the pending computations
first, in the order they were handed in, so every reader and writer sees the
traces the eager load would have given.
"""

from __future__ import annotations

from collections.abc import Callable

from tfprof_lite.model.records import CodeFrame

__all__ = ["DeferredTraces"]

Trace = list[CodeFrame] | None


class DeferredTraces:
    """Per-node code traces, filled by pending computations when first used."""

    _traces: list[Trace]
    _has_trace: bool
    _pending_traces: list[Callable[[], None]] | None = None

    def defer_traces(self, compute: Callable[[], None]) -> None:
        """Run ``compute`` (which fills traces through this object) before the
        next access to :attr:`traces` or :attr:`has_trace`."""
        if self._pending_traces is None:
            self._pending_traces = []
        self._pending_traces.append(compute)

    @property
    def traces_pending(self) -> bool:
        """Whether a computation will still add traces on first use."""
        return bool(self._pending_traces)

    def _settle_traces(self) -> None:
        # Taken off before running: a computation reads and writes the traces itself.
        while self._pending_traces:
            pending, self._pending_traces = self._pending_traces, None
            for compute in pending:
                compute()

    @property
    def traces(self) -> list[Trace]:
        """Each node's call stack (outermost frame first), None when it has none."""
        if self._pending_traces:
            self._settle_traces()
        return self._traces

    @traces.setter
    def traces(self, value: list[Trace]) -> None:
        if self._pending_traces:
            self._settle_traces()
        self._traces = value

    @property
    def has_trace(self) -> bool:
        """Whether any node has a call stack (the code view needs them)."""
        if self._pending_traces:
            self._settle_traces()
        return self._has_trace

    @has_trace.setter
    def has_trace(self, value: bool) -> None:
        if self._pending_traces:
            self._settle_traces()
        self._has_trace = value
