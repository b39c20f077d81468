"""Suite-wide pytest hooks and fixtures: the report header says which step decoder
runs; ``native_in_reach`` keeps the native decoders in reach for their own tests."""

from __future__ import annotations

import pytest


def pytest_report_header(config: pytest.Config) -> str:
    """``step decoder: native`` or ``pure-Python`` (and why), see docs/native.md."""
    from tfprof_lite.proto import steps

    if steps._pure_forced():
        return f"step decoder: pure-Python ({steps.PURE_PYTHON_ENV} is set)"
    if not steps.native_available():
        return "step decoder: pure-Python (the native extension is not built)"
    return "step decoder: native"


@pytest.fixture
def native_in_reach(monkeypatch: pytest.MonkeyPatch) -> None:
    """The native decoders' own tests: they stay in reach even when the suite runs
    with TFPROF_LITE_PURE_PYTHON set (tests that want it set set it)."""
    monkeypatch.delenv("TFPROF_LITE_PURE_PYTHON", raising=False)
