"""The programs of an XSpace read without its events (:mod:`tfprof_lite.formats.xspace.wire.meta`).

They equal what the full decode gives
(:func:`tfprof_lite.formats.xspace.read.programs.load_programs`)
on the H100 samples and on hand-made files (ids, names, bytes; a program without
an id, a plane of another name, int64 and uint64 ids), cut or corrupted bytes
give one error naming the file, and reading them imports no NumPy.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.program_cases import basic_program, xspace_file
from tests.xspace_files import SpaceBuilder, stat
from tests.xspace_kernels import JAX_CASES, jax_file
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.formats.xspace.read.programs import load_programs
from tfprof_lite.formats.xspace.read.records import read_program_records
from tfprof_lite.formats.xspace.wire.meta import hlo_programs


def _key(records: list) -> list[tuple[object, str, bytes]]:  # type: ignore[type-arg]
    return sorted(((r.program_id, r.module, r.hlo) for r in records), key=repr)


@pytest.mark.parametrize("case", JAX_CASES)
def test_equal_to_the_full_decode_on_real_files(case: str) -> None:
    path = str(jax_file(case))
    full, _ = load_programs(path)
    assert full is not None
    assert _key(read_program_records(path)) == _key(full.programs)


def test_hand_made_programs(tmp_path: Path) -> None:
    path = xspace_file(tmp_path / "a.xplane.pb", [(7, basic_program()), (2**40, basic_program())])
    found = sorted(hlo_programs(path.read_bytes()), key=repr)  # (the map's order)
    assert [(p, name) for p, name, _ in found] == [(2**40, "jit_f"), (7, "jit_f")]
    assert found[0][2] == basic_program().SerializeToString()


def test_ids_names_and_other_planes() -> None:
    b = SpaceBuilder()
    other = b.space.planes.add(id=2, name="/host:other")
    other.event_metadata[1].id = 1
    other.event_metadata[1].name = "not_a_program(1)"
    meta = b.space.planes.add(id=1, name="/host:metadata")
    names: dict[str, int] = {}
    for at, (name, stats) in enumerate(
        [("jit_a(5)", {"uint64_value": 5}), ("jit_b", None), ("no_hlo(9)", "skip")], start=1
    ):
        meta.event_metadata[at].id = at
        meta.event_metadata[at].name = name
        if stats == "skip":
            continue
        meta.event_metadata[at].stats.append(stat(meta, names, "Hlo Proto", bytes_value=b"x"))
        if stats:
            meta.event_metadata[at].stats.append(stat(meta, names, "program_id", **stats))
    meta.event_metadata[4].id = 4
    meta.event_metadata[4].name = "jit_c(-3)"
    meta.event_metadata[4].stats.append(stat(meta, names, "Hlo Proto", bytes_value=b"y"))
    meta.event_metadata[4].stats.append(stat(meta, names, "program_id", int64_value=-3))
    found = sorted(hlo_programs(b.bytes()), key=repr)
    assert found == sorted(
        [(5, "jit_a", b"x"), (None, "jit_b", b"x"), (-3, "jit_c", b"y")], key=repr
    )


@pytest.mark.parametrize("cut", [1, 7, 100])
def test_cut_bytes_are_one_error(tmp_path: Path, cut: int) -> None:
    data = xspace_file(tmp_path / "a.xplane.pb", [(7, basic_program())]).read_bytes()
    with pytest.raises(InvalidInputError, match=r"^x\.pb: not a readable XSpace \("):
        hlo_programs(data[: len(data) - cut], "x.pb")
    with pytest.raises(InvalidInputError, match="wire type"):
        hlo_programs(b"\x0f\x00", "x.pb")


def test_reading_imports_no_numpy() -> None:
    code = (
        "import sys; from tfprof_lite.formats.xspace.read.records import read_program_records;"
        f"r = read_program_records({str(jax_file(JAX_CASES[0]))!r});"
        "print(len(r), 'numpy' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    count, numpy = done.stdout.split()
    assert int(count) > 10 and numpy == "False"
