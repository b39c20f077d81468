"""The ``xspace`` fuzz target: the native XSpace decoder against protobuf.

Each input is a mutated XSpace; :func:`tests.xspacecols.check_xspace` then
requires that bytes upb (or the pure walk) rejects are declined by the native
decoder, that columns it returns equal the pure walk's, and that
``decode_xspace`` gives the pure path's columns or its error. An input ends
``accepted`` when the native decoder returned (equal) columns, ``clean`` when
it declined, ``other`` on a disagreement (``XSpaceMismatch``), a crash or a hang.

Seeds (:func:`xspace_seeds`): the hand-made XSpaces of
:mod:`tests.xspace_cases` (messages and hand-written wire bytes) and, when the
shared data is on the machine, the JAX MLP capture. Inputs get the shared
mutator's edits (:func:`tests.fuzz.mutate.mutate`) or the edits aimed at the
native decoders' rules (:mod:`tests.fuzz.native`: unknown fields, non-minimal
keys and lengths, split messages, cut packed fields, invalid UTF-8).
"""

from __future__ import annotations

import contextlib
import functools
import random
from typing import Optional

import pytest

from tests import xspace_cases, xspace_files
from tests.fuzz.cases import Case, Corpus
from tests.fuzz.mutate import mutate
from tests.fuzz.native import _aimed
from tests.fuzz.wire_tree import MessageIndex, index_message
from tfprof_lite.proto import messages as pb

__all__ = ["XSPACE_TARGET", "run_xspace", "warm", "xspace_case", "xspace_seeds"]

#: Name of the target (like ``native``, not in :data:`tests.fuzz.cases.TARGETS`).
XSPACE_TARGET = "xspace"
#: The name of the input file of a case.
FILE = "xspace"


@functools.lru_cache(maxsize=1)
def _seeds() -> tuple[tuple[bytes, Optional[MessageIndex]], ...]:
    seeds = [make().SerializeToString() for make in xspace_cases.MESSAGES.values()]
    seeds += list(xspace_cases.WIRE.values())
    with contextlib.suppress(pytest.skip.Exception):  # the shared data may be absent
        seeds.append(xspace_files.jax_file("jax_h100_mlp").read_bytes())
    return tuple((bytes(data), _index(bytes(data))) for data in seeds)


def _index(data: bytes) -> Optional[MessageIndex]:
    try:
        return index_message(data, pb.XSpace.DESCRIPTOR)
    except Exception:  # noqa: BLE001 - a hand-written seed the indexer cannot walk
        return None


def xspace_seeds() -> list[bytes]:
    """The unmutated inputs of the target (see the module docstring)."""
    return [data for data, _ in _seeds()]


def warm(corpus: Corpus) -> None:
    """Build the seeds and their field indexes (before forking workers)."""
    del corpus
    _seeds()


def xspace_case(corpus: Corpus, index: int, seed: int) -> Case:
    """Case ``index`` of the xspace target for campaign seed ``seed`` (deterministic)."""
    rng = random.Random(f"{seed}/{XSPACE_TARGET}/{index}")
    seeds = _seeds()
    pick = rng.randrange(len(seeds))
    data, field_index = seeds[pick]
    notes = [f"seed(xspace #{pick})"]
    if field_index is not None and field_index.fields and rng.random() < 0.4:
        data, edits = _aimed(rng, field_index)
        if rng.random() < 0.3:
            data, more = mutate(rng, data, None, corpus.donors)
            edits += more
    else:
        data, edits = mutate(rng, data, field_index, corpus.donors)
    return Case(XSPACE_TARGET, index, {FILE: data}, notes=notes + edits)


def run_xspace(case: Case) -> str:
    """The outcome status of one case (``accepted`` or ``clean``); raises
    :class:`tests.xspacecols.XSpaceMismatch` on a disagreement."""
    from tests.xspacecols import check_xspace

    return "accepted" if check_xspace(case.files[FILE]) == "decoded" else "clean"
