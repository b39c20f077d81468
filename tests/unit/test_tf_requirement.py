"""require_tensorflow: one error line when TensorFlow is missing or older than 2.15
(a stand-in ``tensorflow`` module plays each version; no TensorFlow is imported)."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

from tfprof_lite.capture import requirement
from tfprof_lite.errors import MissingDependencyError


@pytest.fixture(autouse=True)
def _unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(requirement, "_checked", None)


def _fake_tf(monkeypatch: pytest.MonkeyPatch, version: str) -> types.ModuleType:
    module = types.ModuleType("tensorflow")
    module.__version__ = version  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tensorflow", module)
    return module


@pytest.mark.parametrize("version", ["2.15.1", "2.16.0rc1", "2.21.0"])
def test_supported_versions(monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    module = _fake_tf(monkeypatch, version)
    assert requirement.require_tensorflow("capture") is module


@pytest.mark.parametrize("version", ["2.14.1", "1.15.5", "3.0.0", "nightly"])
def test_unsupported_versions_are_one_line(monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    _fake_tf(monkeypatch, version)
    with pytest.raises(MissingDependencyError) as info:
        requirement.require_tensorflow("ProfilerHook")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(
        f"ProfilerHook needs TensorFlow 2.x from 2.15 on; this is TensorFlow {version};"
    )


def test_missing_tensorflow_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tensorflow", None)  # type: ignore[arg-type]
    with pytest.raises(MissingDependencyError, match=r"^capture needs TensorFlow, which cannot"):
        requirement.require_tensorflow("capture")


def test_parse_version() -> None:
    assert requirement.parse_version("2.15.1") == (2, 15)
    assert requirement.parse_version("2.16.0-rc1") == (2, 16)
    assert requirement.parse_version("dev") is None


@pytest.mark.parametrize(
    "code",
    [
        "with tfprof_lite.ProfileContext('out'): pass",
        "with tfprof_lite.Monitor('out'): pass",
        "tfprof_lite.ProfilerHook('out')",
    ],
)
def test_capture_entry_points_without_tensorflow(code: str, tmp_path: Path) -> None:
    script = f"import sys; sys.modules['tensorflow'] = None\nimport tfprof_lite\n{code}\n"
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("tfprof_lite.errors.MissingDependencyError: ")
    assert "needs TensorFlow, which cannot be imported" in last


def test_version_while_tensorflow_is_still_importing(monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m tfprof_lite.run`` enters its context while ``import tensorflow``
    runs, before the package sets ``__version__``: the version comes from
    ``tensorflow.python.framework.versions``."""
    module = types.ModuleType("tensorflow")
    monkeypatch.setitem(sys.modules, "tensorflow", module)
    versions = types.ModuleType("tensorflow.python.framework.versions")
    versions.__version__ = "2.15.1"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tensorflow.python.framework.versions", versions)
    assert requirement.require_tensorflow("capture") is module
    monkeypatch.setattr(requirement, "_checked", None)
    versions.__version__ = "2.13.0"  # type: ignore[attr-defined]
    with pytest.raises(MissingDependencyError, match="this is TensorFlow 2.13.0"):
        requirement.require_tensorflow("capture")
