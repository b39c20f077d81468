"""The native HloProto decoder (``_native/_hlodecode.c``) against protobuf.

On the HLO programs of both JAX captures, on a hand-made module that sets every
field it reads, on wire-level edge cases and on mutated inputs: whatever it
returns equals protobuf's parse of the same bytes (field by field), and whatever
protobuf rejects it declines (then :func:`read_hlo_module` gives protobuf's
answer or error).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.fuzz.mutate import mutation_outcomes
from tests.stepcols import skip_or_fail
from tests.xspace_files import jax_cases, jax_file
from tfprof_lite._native import PURE_PYTHON_ENV, load
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.model.xspace_events import event_table
from tfprof_lite.model.xspace_xla import hlo_protos
from tfprof_lite.proto import hlo, hlo_module
from tfprof_lite.proto.xplane import decode_xspace_file

#: Mutated inputs per seed (a few seconds in all).
MUTATIONS = 300


@pytest.fixture(autouse=True)
def _native(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PURE_PYTHON_ENV, raising=False)
    if load("_hlodecode") is None:
        skip_or_fail("the native HLO decoder is not built (python setup.py build_ext --inplace)")


#: The fields the readers use (``model/xla_hlo.py``, ``model/xspace_code.py``).
META = ("op_type", "op_name", "source_file", "source_line", "stack_frame_id")
INSTR = ("name", "opcode", "fusion_kind", "custom_call_target", "id")
LOCATION = ("file_name_id", "function_name_id", "line")


def _fields(message: Any, names: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(getattr(message, name) for name in names)


def _instruction(i: Any) -> tuple[Any, ...]:
    ids = (tuple(i.operand_ids), tuple(i.called_computation_ids))
    return (*_fields(i, INSTR), _fields(i.metadata, META), *ids, bytes(i.backend_config))


def canonical(module: Any) -> tuple[Any, ...]:
    """Every field the readers use, from a message or the decoder's tuples."""
    comps = tuple(
        (c.name, tuple(map(_instruction, c.instructions)), c.id, c.root_id)
        for c in module.computations
    )
    index = module.stack_frame_index
    return (
        module.name,
        module.entry_computation_name,
        comps,
        module.id,
        module.entry_computation_id,
        {k: tuple(v.instruction_ids) for k, v in module.schedule.sequences.items()},
        tuple(index.file_names),
        tuple(index.function_names),
        tuple(_fields(loc, LOCATION) for loc in index.file_locations),
        tuple((f.file_location_id, f.parent_frame_id) for f in index.stack_frames),
    )


def agrees(data: bytes) -> str:
    """``decoded`` (equal to protobuf's parse) or ``declined``; fails otherwise."""
    native = hlo_module.native_module(data)
    try:
        parsed = hlo.parse_hlo_proto(data).hlo_module
    except InvalidInputError:
        assert native is None, "protobuf rejects bytes the native decoder accepted"
        return "declined"
    if native is None:
        return "declined"
    assert canonical(native) == canonical(parsed)
    return "decoded"


def _jax_protos() -> list[bytes]:
    out = []
    for case in jax_cases():
        cols = decode_xspace_file(str(jax_file(case)), "test")
        out.extend(data for _, data in hlo_protos(event_table(cols)))
    return out


def full_module() -> bytes:
    """A module with every field the decoder reads set, extremes included."""
    proto = hlo.HloProto()
    mod = proto.hlo_module
    mod.name, mod.entry_computation_name, mod.id, mod.entry_computation_id = "m", "main", -5, 2
    fused = mod.computations.add(name="fused", id=1, root_id=11, is_fusion_computation=True)
    fused.execution_thread = "main"
    fused.instructions.add(name="dot.1", opcode="dot", id=11, operand_ids=[-1, 2**62])
    main = mod.computations.add(name="main", id=2, root_id=21)
    call = main.instructions.add(name="fusion.1", opcode="fusion", id=21, fusion_kind="kCustom")
    call.called_computation_ids.extend([1, 1])
    call.custom_call_target = "__cublas$gemm"
    call.backend_config = b'{"known_trip_count":{"n":"3"}}\xff'
    meta = call.metadata
    meta.op_type, meta.op_name, meta.source_file = "MatMul", "jit(f)/dot", "f.py"
    meta.source_line, meta.stack_frame_id = -(2**31), 2**31 - 1
    meta.deduplicated_name, meta.scheduling_name = "d", "s\u00e9"
    mod.schedule.sequences[2].instruction_ids.extend([21, 0])
    mod.schedule.sequences[-7].SetInParent()
    index = mod.stack_frame_index
    index.file_names.extend(["a.py", ""])
    index.function_names.append("f")
    index.file_locations.add(
        file_name_id=1, function_name_id=1, line=3, column=-1, end_line=4, end_column=2**31 - 1
    )
    index.stack_frames.add(file_location_id=1, parent_frame_id=0)
    index.stack_frames.add(file_location_id=1, parent_frame_id=1)
    return proto.SerializeToString()


def test_real_programs_decode_as_protobuf_parses_them() -> None:
    protos = _jax_protos()
    assert len(protos) > 10 and max(map(len, protos)) > 10**6
    assert [agrees(data) for data in protos] == ["decoded"] * len(protos)


def test_every_field_and_extreme_value() -> None:
    data = full_module()
    assert agrees(data) == "decoded"
    module = hlo_module.read_hlo_module(data)
    assert isinstance(module, hlo_module.HloModule)
    instr = module.computations[1].instructions[0]
    assert instr.metadata.source_line == -(2**31) and instr.called_computation_ids == (1, 1)
    assert module.schedule.sequences[-7].instruction_ids == ()


def _key(number: int, wire: int) -> bytes:
    value, out = number << 3 | wire, b""
    while value > 0x7F:
        out += bytes([value & 0x7F | 0x80])
        value >>= 7
    return out + bytes([value])


def _len(number: int, payload: bytes) -> bytes:
    return _key(number, 2) + bytes([len(payload)]) + payload


def _instr(fields: bytes) -> bytes:
    """A module whose one computation holds one instruction with ``fields``."""
    return _len(3, _len(2, _len(1, b"a") + _len(2, b"add") + fields))


def _entry(key: int, ids: bytes) -> bytes:
    return _len(1, _key(1, 0) + bytes([key]) + _len(2, ids))


UNKNOWN = (
    _key(4, 0) + b"\x96\x01" + _key(9, 1) + bytes(8) + _key(10, 5) + bytes(4) + _len(99, b"zz")
)
DECODED = {
    "empty": b"",
    "last name wins": _len(1, b"x") + _len(1, b"y"),
    "unknown fields of every wire type": UNKNOWN,
    "unpacked and packed operands": _instr(_key(36, 0) + b"\x05" + _len(36, b"\x01\x02")),
    "negative int32 as ten bytes": _instr(_len(7, _key(4, 0) + b"\xff" * 9 + b"\x01")),
    "duplicate schedule keys": _len(7, _entry(3, b"\x08\x01") + _entry(3, b"\x08\x02")),
    "map entry without key": _len(7, _len(1, _len(2, b"\x08\x04"))),
}
DECLINED = {
    "truncated": _len(1, _len(1, b"abc"))[:-1],
    "invalid UTF-8": _len(1, _len(1, b"\xc3\x28")),
    "group": _len(1, _key(20, 3) + _key(20, 4)),
    "metadata twice (protobuf merges)": _len(1, _instr(_len(7, b"") + _len(7, b""))),
    "a varint where a message is due": _len(1, _key(3, 0) + b"\x01"),
    "wire type 7": _len(1, _key(20, 7)),
    "field number 0": _len(1, b"\x00\x01"),
}


@pytest.mark.parametrize("name", DECODED)
def test_wire_cases_decode(name: str) -> None:
    assert agrees(_len(1, DECODED[name])) == "decoded"


@pytest.mark.parametrize("name", DECLINED)
def test_unusual_bytes_are_declined(name: str) -> None:
    assert hlo_module.native_module(DECLINED[name]) is None
    assert agrees(DECLINED[name]) == "declined"


def test_declined_bytes_take_protobufs_path() -> None:
    data = _len(1, _instr(_len(7, _len(2, b"a")) + _len(7, _len(1, b"T"))))
    assert hlo_module.native_module(data) is None
    module = hlo_module.read_hlo_module(data)  # protobuf merges the two metadata
    meta = module.computations[0].instructions[0].metadata
    assert (meta.op_name, meta.op_type) == ("a", "T")
    with pytest.raises(InvalidInputError, match="program 3: not a serialized XLA HloProto"):
        hlo_module.read_hlo_module(b"\x0a\x05ab", "HLO proto of program 3")


def test_pure_path_is_protobufs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PURE_PYTHON_ENV, "1")
    module = hlo_module.read_hlo_module(full_module())
    assert not isinstance(module, hlo_module.HloModule)
    monkeypatch.delenv(PURE_PYTHON_ENV)
    assert canonical(module) == canonical(hlo_module.read_hlo_module(full_module()))


def test_mutated_modules_agree() -> None:
    rng = random.Random(23)
    protos = sorted(_jax_protos(), key=len)
    seeds = [full_module(), protos[0], protos[len(protos) // 2], protos[3 * len(protos) // 4]]
    counts = mutation_outcomes(rng, seeds, hlo.HloProto.DESCRIPTOR, MUTATIONS, agrees)
    assert counts.get("decoded", 0) > len(seeds) * MUTATIONS // 10, counts
    assert counts.get("declined", 0) > len(seeds) * MUTATIONS // 10, counts
