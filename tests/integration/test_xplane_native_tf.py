"""The native XSpace decoder on TF 2.21 profiles made here: every mode of
:mod:`tests.integration.xspace_tf_small` (step markers, Keras ``fit``, a TF1
``Session`` under the TF2 profiler) is decoded natively, with the columns of the
pure walk of protobuf's parse, and mutations of one agree on all three paths."""

from __future__ import annotations

import random

import pytest

from tests.integration import xspace_tf_small
from tests.mutations import mutate
from tests.xspacecols import check_xspace, require_xspace_native
from tfprof_lite.formats.xspace.wire import native as xplane_native

pytestmark = pytest.mark.tf

MUTATIONS = 30


@pytest.fixture(scope="module", params=["markers", "keras", "session"])
def tf_capture(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The bytes of a TF 2.21 capture of mode ``request.param``."""
    pytest.importorskip("tensorflow")
    require_xspace_native()
    logdir = tmp_path_factory.mktemp(f"xspace_native_{request.param}") / "logdir"
    return xspace_tf_small.capture(logdir, request.param).read_bytes()


def test_tf_capture_decodes_natively_and_equal(tf_capture: bytes) -> None:
    assert check_xspace(tf_capture) == "decoded"
    cols = xplane_native.native_columns(tf_capture)
    assert cols is not None and cols.relative
    assert cols.plane_name[0] == "/host:CPU" and len(cols.event_line) > 100


def test_tf_capture_mutations_agree(tf_capture: bytes) -> None:
    rng = random.Random(len(tf_capture))
    outcomes = {check_xspace(mutate(tf_capture, rng)) for _ in range(MUTATIONS)}
    assert "declined" in outcomes
