"""Fixtures for the TF-backed integration tests.

Nothing here imports TensorFlow at import time (unit-test runs collect this
file too); the fixtures import it lazily and skip when it is missing. Tests
that need TF should also carry ``pytest.mark.tf``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.integration.tf_models import Capture
    from tests.integration.tf_oracle import TfOracle

#: Names of the captures in `tests.integration.tf_models.ALL_CAPTURES`.
CAPTURE_NAMES = ("dense_net", "cnn", "rnn", "data_pipeline", "two_cpus")


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``tf`` marker (also declared in pyproject.toml)."""
    config.addinivalue_line("markers", "tf: needs TensorFlow installed")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Delete TF's global C++ profiler at the end, if an oracle was ever made."""
    oracle_module = sys.modules.get("tests.integration.tf_oracle")
    if oracle_module is not None:
        oracle_module.close_current()


@pytest.fixture(scope="session", params=CAPTURE_NAMES)
def capture(request: pytest.FixtureRequest) -> Capture:
    """Each real-model capture in turn (built once per process, cached)."""
    pytest.importorskip("tensorflow")
    from tests.integration import tf_models

    return tf_models.ALL_CAPTURES[request.param]()


@pytest.fixture
def oracle(capture: Capture) -> TfOracle:
    """TF's tfprof loaded with ``capture`` (the process-wide current oracle)."""
    from tests.integration import tf_oracle

    return tf_oracle.oracle_for(capture)


@pytest.fixture(scope="session")
def jax_train(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A JAX CPU training loop profiled in a child process and what ran
    (``tests/jax_train_capture.py``: its ``capture.json``, with ``xspace``, the
    step count and times, XLA's cost and memory analysis). JAX never runs in the
    test process."""
    from tests.stepcols import skip_or_fail

    try:
        import jax  # noqa: F401
    except ImportError:
        skip_or_fail("jax is not installed (pip install 'jax[cpu]')")
    out = tmp_path_factory.mktemp("jax_train")
    script = Path(__file__).resolve().parents[1] / "jax_train_capture.py"
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [sys.executable, str(script), str(out)],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, Any] = json.loads((out / "capture.json").read_text())
    return found


@pytest.fixture
def pristine() -> Any:
    """Asserts that the test leaves TensorFlow's session methods (the ones a
    ``ProfileContext`` replaces) as it found them; yields them."""
    from tests.integration.capture_helpers import patched_attributes

    before = patched_attributes()
    yield before
    assert patched_attributes() == before
