"""A bounded slice of the ``native`` fuzz target (:mod:`tests.fuzz.native`).

Mutated RunMetadata through the native decoder and protobuf: whatever upb rejects
must be declined, whatever the decoder returns must equal the pure-Python columns.
A disagreement, crash or hang fails the test with a reproducer. ``make fuzz``
runs many more inputs (``--native``, see ``docs/fuzzing.md``).
"""

from __future__ import annotations

import faulthandler
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.fuzz import native
from tests.fuzz.cases import Case, Corpus, make_case
from tests.fuzz.repro import save_reproducer
from tests.fuzz.runner import RunConfig, run_cases
from tests.fuzz.test_fuzz import KNOWN, SEED
from tests.stepcols import check_decoders, native_decode, require_native
from tfprof_lite.proto import steps

#: Mutated inputs of the suite's slice (a few seconds).
SLICE = 3000
CONFIG = RunConfig(seed=SEED, timeout=10.0, batch=1000)


@pytest.fixture(autouse=True)
def _native_built(corpus: Corpus) -> None:
    require_native()
    native.warm(corpus)


def test_seeds_decode_and_cover_the_columns(corpus: Corpus) -> None:
    seeds = native.native_seeds(corpus)
    assert [check_decoders(data) for data in seeds] == ["decoded"] * len(seeds)
    decoded = [native_decode(data) for data in seeds]
    cols = [c for c in decoded if c is not None]
    # Every kind of column is filled by some seed, so mutations reach its code.
    for name in ("o_row", "a_row", "r_row"):
        assert any(len(getattr(c, name)) for c in cols), name
    assert any(c.gpu_allocs.any() for c in cols)
    assert any(c.temp.any() and c.persist.any() for c in cols)


def test_cases_are_deterministic(corpus: Corpus) -> None:
    one, two = make_case(corpus, "native", 17, 3), make_case(corpus, "native", 17, 3)
    assert (one.files, one.notes) == (two.files, two.notes)
    assert len({make_case(corpus, "native", 17, s).files["run_meta"] for s in range(6)}) > 1


def test_mutated_inputs_agree(corpus: Corpus, tmp_path: Path) -> None:
    outcomes = list(run_cases([("native", i) for i in range(SLICE)], corpus, CONFIG))
    counts = Counter(o.status for o in outcomes)
    assert len(outcomes) == SLICE
    # Both ends must be exercised: decoded inputs and declined ones.
    assert counts["accepted"] >= SLICE // 10, counts
    assert counts["clean"] >= SLICE // 10, counts
    problems = []
    for outcome in outcomes:
        if outcome.status == "other" and outcome.signature not in KNOWN:
            case = make_case(corpus, "native", outcome.index, SEED)
            where = save_reproducer(tmp_path, case, outcome, SEED)
            problems.append(f"{outcome.signature}: {outcome.message[:300]} reproducer: {where}")
    assert not problems, "native decoder disagreements:\n" + "\n".join(problems[:10])


class _Planted:
    """A stand-in for the extension module with a planted bug."""

    def __init__(self, real: Any, kind: str) -> None:
        self.real, self.kind = real, kind

    def decode(self, data: bytes) -> Any:
        if self.kind == "crash":
            faulthandler.disable()  # no dump of the planted crash on the terminal
            os.abort()
        if self.kind == "accept_invalid":  # columns of an empty RunMetadata for anything
            return self.real.decode(b"")
        parts = self.real.decode(data)
        if parts is None or not parts[1]:
            return parts
        return (parts[0], ["planted", *parts[1][1:]], *parts[2:])  # a wrong device name


@pytest.mark.parametrize(
    ("kind", "signature"),
    [
        ("wrong_column", "NativeMismatch @ stepcols.py:assert_same_columns"),
        ("accept_invalid", "NativeMismatch @ stepcols.py:check_decoders"),
        ("crash", "WorkerDied @ native"),
    ],
)
def test_planted_bugs_are_found(
    corpus: Corpus, monkeypatch: pytest.MonkeyPatch, kind: str, signature: str
) -> None:
    """A decoder that returns a wrong column, accepts bytes upb rejects, or crashes
    gives an ``other`` outcome with its signature (the workers are forked after the
    planted module is in place)."""
    planted = _Planted(steps._native(), kind)
    monkeypatch.setattr(steps, "_native", lambda: planted)
    cases: list[Case | tuple[str, int]] = [("native", i) for i in range(60)]
    outcomes = list(run_cases(cases, corpus, RunConfig(seed=SEED, timeout=5.0, batch=60)))
    others = [o for o in outcomes if o.status == "other"]
    assert others, Counter(o.status for o in outcomes)
    assert signature in {o.signature for o in others}
