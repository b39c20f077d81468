"""Suite-wide pytest hooks: the report header says which step decoder runs."""

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
