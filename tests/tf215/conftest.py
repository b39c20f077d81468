"""Collection guard for the TensorFlow 2.15 tests (run by ``make test215``).

These modules need ``tf.estimator``, which TensorFlow removed in 2.16. In any
environment where ``tensorflow_estimator`` cannot be imported together with a
TensorFlow that still has ``tf.estimator`` (the main ``.venv`` with TF 2.21),
every module here is reported as one skipped item without being imported, so
``pytest tests`` stays clean there. Nothing is imported or set at conftest
import time: the check (which imports TensorFlow) runs only when a module of
this directory is collected, and only if ``tensorflow_estimator`` is installed.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Optional, Union

import pytest


@functools.cache
def missing_reason() -> Optional[str]:
    """Why the TF 2.15 Estimator tests cannot run here, or None if they can."""
    if importlib.util.find_spec("tensorflow_estimator") is None:
        return "needs tensorflow_estimator (TensorFlow <= 2.15): run `make test215`"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        importlib.import_module("tensorflow_estimator")
        tf = importlib.import_module("tensorflow")
        tf.estimator.Estimator  # noqa: B018 (gone in TensorFlow >= 2.16)
    except Exception as err:  # any failure means "not this environment"
        return f"tensorflow_estimator is not importable here ({type(err).__name__}: {err})"
    return None


class _SkippedModule(pytest.Module):
    """A test module reported as skipped instead of being imported."""

    def collect(self) -> Iterable[Union[pytest.Item, pytest.Collector]]:
        pytest.skip(missing_reason() or "")


def pytest_pycollect_makemodule(
    module_path: Path, parent: pytest.Collector
) -> Optional[pytest.Module]:
    """Replace every test module of this directory by a skip when TF 2.15 is missing."""
    if missing_reason() is None:
        return None
    return _SkippedModule.from_parent(parent, path=module_path)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Delete TensorFlow's global C++ profiler if a test module left one."""
    helper = sys.modules.get("tests.tf215.tfprof215")
    if helper is not None:
        helper.delete_global_profiler()
