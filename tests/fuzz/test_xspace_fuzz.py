"""A bounded slice of the ``xspace`` fuzz target (:mod:`tests.fuzz.xspace`).

Mutated XSpaces through the native decoder, protobuf and the pure walk: whatever
upb or the walk rejects must be declined, whatever the decoder returns must
equal the pure-Python columns. A disagreement, crash or hang fails the test with
a reproducer. ``make fuzz`` runs many more inputs (``--xspace``, see
``docs/fuzzing.md``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.fuzz import xspace
from tests.fuzz.cases import Case, Corpus, make_case
from tests.fuzz.repro import save_reproducer
from tests.fuzz.runner import RunConfig, run_cases
from tests.fuzz.test_fuzz import KNOWN, SEED
from tests.xspacecols import check_xspace, require_xspace_native
from tfprof_lite._native import pure_forced
from tfprof_lite.formats.xspace.wire import native as xplane_native

#: Mutated inputs of the suite's slice.
SLICE = 1500
CONFIG = RunConfig(seed=SEED, timeout=20.0, batch=500)


@pytest.fixture(autouse=True)
def _native_built(corpus: Corpus) -> None:
    require_xspace_native()
    xspace.warm(corpus)


def test_seeds_decode_natively() -> None:
    seeds = xspace.xspace_seeds()
    assert [check_xspace(data) for data in seeds] == ["decoded"] * len(seeds)


def test_cases_are_deterministic(corpus: Corpus) -> None:
    one, two = make_case(corpus, "xspace", 17, 3), make_case(corpus, "xspace", 17, 3)
    assert (one.files, one.notes) == (two.files, two.notes)
    assert len({make_case(corpus, "xspace", 17, s).files["xspace"] for s in range(6)}) > 1


def test_mutated_inputs_agree(corpus: Corpus, tmp_path: Path) -> None:
    outcomes = list(run_cases([("xspace", i) for i in range(SLICE)], corpus, CONFIG))
    counts = Counter(o.status for o in outcomes)
    assert len(outcomes) == SLICE
    assert counts["accepted"] >= SLICE // 10, counts
    assert counts["clean"] >= SLICE // 10, counts
    problems = []
    for outcome in outcomes:
        if outcome.status == "other" and outcome.signature not in KNOWN:
            case = make_case(corpus, "xspace", outcome.index, SEED)
            where = save_reproducer(tmp_path, case, outcome, SEED)
            problems.append(f"{outcome.signature}: {outcome.message[:300]} reproducer: {where}")
    assert not problems, "native XSpace decoder disagreements:\n" + "\n".join(problems[:10])


class _Planted:
    """A stand-in for the extension module that returns a wrong plane name."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def decode(self, data: bytes, gunzip: Any, keep: Any = None) -> Any:
        return self._planted(self.real.decode(data, gunzip, keep))

    def decode_fd(self, fd: int, size: int, gunzip: Any, keep: Any = None) -> Any:
        return self._planted(self.real.decode_fd(fd, size, gunzip, keep))

    @staticmethod
    def _planted(parts: Any) -> Any:
        if parts is None or not parts[5]:
            return parts
        return (*parts[:5], ["planted", *parts[5][1:]], *parts[6:])


def test_a_planted_bug_is_found(corpus: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    real = xplane_native.active(xplane_native._MODULE)
    planted = _Planted(real)
    monkeypatch.setattr(xplane_native, "active", lambda name: None if pure_forced() else planted)
    cases: list[Case | tuple[str, int]] = [("xspace", i) for i in range(40)]
    outcomes = list(run_cases(cases, corpus, RunConfig(seed=SEED, timeout=20.0, batch=40)))
    signatures = {o.signature for o in outcomes if o.status == "other"}
    assert any(s.startswith("XSpaceMismatch") for s in signatures), signatures
