"""The native HLO and memory-record decoders built with ASan and UBSan.

As :mod:`tests.unit.test_native_sanitizer` does for the step decoder:
``_hlodecode.c`` and ``_memdecode.c`` are compiled with gcc's sanitizers and run
in a child Python with ``libasan`` preloaded, on the inputs of their tests (real
programs and records of the JAX captures, hand-made ones with every field),
truncations and seeded mutations; the HLO decoder through both its entry points
(``decode``: the module, ``decode_program``: the whole program with its buffer
assignment). Any sanitizer report, crash or non-zero exit fails; every result
(the named tuples, or a decline) must equal the regular build's, also when the
tuples are made through ``tuple.__new__`` (the way taken on CPython 3.14 and
later, ``-DTUPLES_VIA_NEW``).
"""

from __future__ import annotations

import hashlib
import pickle
import random
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.fuzz.mutate import mutate
from tests.unit.test_native_sanitizer import build, libasan, problems
from tests.unit.test_native_sanitizer_codecs import _run_child
from tfprof_lite._native import load
from tfprof_lite.model import decode
from tfprof_lite.proto import hlo_module

__all__ = ["libasan"]  # the fixture, imported for this module's tests

NATIVE = Path(__file__).resolve().parents[2] / "tfprof_lite" / "_native"
MUTATIONS = 400

#: The child: the tuple classes rebuilt from (name, fields), then every input
#: decoded twice by each function named in argv[4]; one digest of the result's
#: repr per input and function (``-``: declined).
CHILD = textwrap.dedent(
    """
    import collections, hashlib, importlib, pickle, sys
    sys.path.insert(0, sys.argv[1])
    module = importlib.import_module(sys.argv[2])
    specs, inputs = pickle.load(open(sys.argv[3], "rb"))
    classes = tuple(collections.namedtuple(name, fields) for name, fields in specs)
    for data in inputs:
        for name in sys.argv[4].split(","):
            decode = getattr(module, name)
            for _ in range(2):
                result = decode(data, classes) if len(classes) > 3 else decode(data, classes, {})
            print("-" if result is None else hashlib.sha256(repr(result).encode()).hexdigest())
    """
)


def _digest(result: Any) -> str:
    return "-" if result is None else hashlib.sha256(repr(result).encode()).hexdigest()


def _inputs(seeds: list[bytes], index_of: Any) -> list[bytes]:
    rng = random.Random(7)
    out = list(seeds)
    out.extend(seeds[0][:n] for n in range(0, len(seeds[0]), 7))
    for seed in seeds:
        index = index_of(seed)
        out.extend(mutate(rng, seed, index, seeds)[0] for _ in range(MUTATIONS))
    return out


def _check(libasan: str, tmp_path: Path, name: str, classes: tuple[type, ...],
           inputs: list[bytes], *defines: str, functions: str = "decode") -> None:  # fmt: skip
    regular = load(name)
    if regular is None:
        pytest.skip(f"{name} is not built")
    module = build(tmp_path, NATIVE / f"{name}.c", name, *defines)
    specs = [(cls.__name__, cls._fields) for cls in classes]  # type: ignore[attr-defined]
    data_file = tmp_path / "inputs.pickle"
    data_file.write_bytes(pickle.dumps((specs, inputs)))
    done = _run_child(libasan, CHILD, [str(module.parent), name, str(data_file), functions])
    assert problems(done) == [], done.stderr[-3000:]
    expected = []
    for d in inputs:
        for function in functions.split(","):
            decode = getattr(regular, function)
            found = decode(d, classes) if len(classes) > 3 else decode(d, classes, {})
            expected.append(_digest(found))
    assert done.stdout.split() == expected
    assert "-" in expected and len(set(expected)) > len(inputs) // 10


@pytest.mark.parametrize("defines", [(), ("-DTUPLES_VIA_NEW",)], ids=["allocated", "via_new"])
def test_hlo_decoder_under_sanitizers(
    libasan: str, tmp_path: Path, defines: tuple[str, ...]
) -> None:
    from tests.fuzz.wire_tree import index_message
    from tests.hlo_cases import full_program, jax_protos
    from tfprof_lite.proto import hlo

    protos = sorted(jax_protos(), key=len)
    seeds = [full_program(), protos[0], protos[len(protos) // 2], protos[-1]]
    inputs = _inputs(seeds[:3], lambda d: index_message(d, hlo.HloProto.DESCRIPTOR))
    _check(libasan, tmp_path, "_hlodecode", hlo_module.CLASSES, [*inputs, seeds[-1]], *defines,
           functions="decode,decode_program")  # fmt: skip


def test_memory_decoder_under_sanitizers(libasan: str, tmp_path: Path) -> None:
    from tests.fuzz.wire_tree import index_message
    from tests.unit.test_memory_native import _records, full_record
    from tfprof_lite.proto import messages as pb

    records = sorted(_records(), key=len)
    seeds = [full_record(), records[0], records[len(records) // 2], records[-1]]
    inputs = _inputs(seeds, lambda d: index_message(d, pb.NodeExecStats.DESCRIPTOR))
    _check(libasan, tmp_path, "_memdecode", decode._RECORDS, inputs)
