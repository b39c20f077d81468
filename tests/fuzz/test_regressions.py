"""Every crash the fuzzer ever found, replayed: each must now end accepted or as a
clean rejection. A reproducer directory (``case.json`` + ``files/``, as the
campaign saves them) is added under ``tests/fuzz/regressions/`` with its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.repro import replay

REGRESSIONS = Path(__file__).parent / "regressions"
CASES = sorted(p for p in REGRESSIONS.iterdir() if (p / "case.json").is_file())


def test_regressions_are_kept() -> None:
    """The directory holds the cases this suite promises to replay."""
    assert {p.name for p in CASES} >= {"pprof_extended_wrapped_totals", "input_pipeline_end_wraps"}


@pytest.mark.parametrize("case", CASES, ids=[p.name for p in CASES])
def test_fixed_crash_stays_fixed(case: Path) -> None:
    outcome = replay(case)
    assert outcome.status in ("accepted", "clean"), (outcome.signature, outcome.message)
