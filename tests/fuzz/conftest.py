"""Fixtures of the fuzz tests: the checked-in seed corpus, indexed once."""

from __future__ import annotations

import pytest

from tests.fuzz.cases import Corpus


@pytest.fixture(scope="session")
def corpus() -> Corpus:
    """The seed corpus of ``tests/fuzz/corpus`` with every file's field index built."""
    seeds = Corpus()
    seeds.warm()
    return seeds
