"""The proxy of TF's ``_pywrap_tfprof`` that `tests.integration.tf_oracle` relies on.

`_TrackingPywrap`, installed once as ``model_analyzer.print_mdl`` (`_pywrap`),
counts every ``NewProfiler`` / ``DeleteProfiler`` / ``ProfilerFromFile`` made
through ``model_analyzer`` (``generation``) and keeps the raw bytes of the latest
``Profile`` / ``PrintModelAnalysis`` call (``last``, taken by `_take_last`); see
the quirks listed in `tests.integration.tf_oracle`, which re-exports these names.
"""

from __future__ import annotations

from typing import Any

from tensorflow.python.profiler import model_analyzer


class _TrackingPywrap:
    """Transparent proxy for ``_pywrap_tfprof`` installed as ``model_analyzer.print_mdl``.

    * ``generation`` counts every ``NewProfiler``/``DeleteProfiler``/
      ``ProfilerFromFile`` made through ``model_analyzer`` by *anyone* (e.g. a
      plain ``tf.compat.v1.profiler.Profiler`` created by another test, or its
      ``__del__``), so an oracle notices that the global C++ profiler is no
      longer its own and rebuilds instead of crashing or reading foreign data.
    * ``last`` keeps the raw bytes of the latest ``Profile``/
      ``PrintModelAnalysis`` call, i.e. TF's C++ result *before* Python parses
      it (that parse can fail, see `canonical_proto`).

    ``model_analyzer`` looks ``print_mdl`` up at call time, so the public
    Python code paths run unchanged through the proxy.
    """

    def __init__(self, wrapped: Any) -> None:
        self._wrapped = wrapped
        self.generation = 0
        self.last: bytes | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._wrapped, name)

    def NewProfiler(self, *args: Any) -> Any:  # noqa: N802 (mirrors the pywrap name)
        """``_pywrap_tfprof.NewProfiler`` (bumps ``generation``)."""
        self.generation += 1
        return self._wrapped.NewProfiler(*args)

    def DeleteProfiler(self) -> None:  # noqa: N802
        """``_pywrap_tfprof.DeleteProfiler`` (bumps ``generation``)."""
        self.generation += 1
        self._wrapped.DeleteProfiler()

    def ProfilerFromFile(self, *args: Any) -> None:  # noqa: N802
        """``_pywrap_tfprof.ProfilerFromFile`` (bumps ``generation``)."""
        self.generation += 1
        self._wrapped.ProfilerFromFile(*args)

    def Profile(self, *args: Any) -> bytes:  # noqa: N802
        """Record and return ``_pywrap_tfprof.Profile(*args)``."""
        self.last = bytes(self._wrapped.Profile(*args))
        return self.last

    def PrintModelAnalysis(self, *args: Any) -> bytes:  # noqa: N802
        """Record and return ``_pywrap_tfprof.PrintModelAnalysis(*args)``."""
        self.last = bytes(self._wrapped.PrintModelAnalysis(*args))
        return self.last


def _install_pywrap() -> _TrackingPywrap:
    current = model_analyzer.print_mdl
    if isinstance(current, _TrackingPywrap):
        return current
    proxy = _TrackingPywrap(current)
    model_analyzer.print_mdl = proxy
    return proxy


_pywrap = _install_pywrap()


def _take_last() -> bytes:
    """Raw bytes of the TF call just made (must exist)."""
    raw = _pywrap.last
    _pywrap.last = None
    if raw is None:
        raise RuntimeError("TF's pywrap was bypassed; no raw result recorded")
    return raw
