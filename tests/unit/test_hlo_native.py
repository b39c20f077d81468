"""The native HloProto decoder (``_native/_hlodecode.c``) against protobuf.

On the HLO programs of both JAX captures, on a hand-made program that sets
every field of ``hlo.proto`` (buffer assignment included), on wire-level edge
cases and on mutated inputs: whatever either entry point returns equals
protobuf's parse of the same bytes, field by field (``decode``: the module, as
an ``HloProtoModule`` reads it; ``decode_program``: the whole ``HloProto``), and
whatever protobuf rejects it declines (then :func:`read_hlo_module` and
:func:`parse_program` give protobuf's answer or error).
"""

from __future__ import annotations

import gc
import random
from typing import Any

import pytest

from tests.fuzz.mutate import mutation_outcomes
from tests.hlo_cases import canonical, full_program, jax_protos
from tests.stepcols import skip_or_fail
from tfprof_lite._native import PURE_PYTHON_ENV, load
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.proto import hlo, hlo_module
from tfprof_lite.proto.xla_program import parse_program

#: Mutated inputs per seed (a few seconds in all).
MUTATIONS = 300


@pytest.fixture(autouse=True)
def _native(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PURE_PYTHON_ENV, raising=False)
    if load("_hlodecode") is None:
        skip_or_fail("the native HLO decoder is not built (python setup.py build_ext --inplace)")


def _parsed(parse: Any, data: bytes) -> Any:
    try:
        return parse(data)
    except InvalidInputError:
        return None


def agrees(data: bytes) -> str:
    """``decoded`` (both entry points equal protobuf's parse), ``module`` (only
    the module: the buffer assignment declined) or ``declined``; fails otherwise."""
    module, program = hlo_module.native_module(data), hlo_module.native_program(data)
    parsed_module = _parsed(hlo.parse_hlo_module, data)
    parsed = _parsed(hlo.parse_hlo_proto, data)
    assert parsed_module is not None or module is None, "protobuf rejects a module it accepted"
    assert parsed is not None or program is None, "protobuf rejects a program it accepted"
    if module is not None:
        assert canonical(module) == canonical(parsed_module)
    if program is None:
        return "module" if module is not None else "declined"
    assert module is not None, "the program decoded, its module declined"
    assert canonical(program) == canonical(parsed)
    assert program.hlo_module == module
    return "decoded"


def test_real_programs_decode_as_protobuf_parses_them() -> None:
    protos = jax_protos()
    assert len(protos) > 10 and max(map(len, protos)) > 10**6
    assert [agrees(data) for data in protos] == ["decoded"] * len(protos)
    program = hlo_module.native_program(max(protos, key=len))
    assert program is not None and len(program.buffer_assignment.buffer_allocations) > 100
    shapes = [i.shape for c in program.hlo_module.computations for i in c.instructions]
    assert len({id(s) for s in shapes}) < len(shapes) // 10  # equal shapes: one tuple


def test_every_field_and_extreme_value() -> None:
    data = full_program()
    assert agrees(data) == "decoded"
    program = parse_program(data)
    assert isinstance(program, hlo_module.HloProgram)
    module = hlo_module.read_hlo_module(data)
    assert isinstance(module, hlo_module.HloModule) and module == program.hlo_module
    dot = module.computations[0].instructions[0]
    assert dot.shape.tuple_shapes[0].is_dynamic_dimension == (False, True)
    assert dot.shape.tuple_shapes[0] != dot.shape.tuple_shapes[1]
    call, param = module.computations[1].instructions
    assert call.metadata.source_line == -(2**31) and call.called_computation_ids == (1, 1)
    assert call.window.dimensions[0].window_reversal is True
    assert call.batch_group_count == -(2**63) and call.parameter_number == 2**31
    assert param.shape.layout.element_size_in_bits == 0 and param.window == hlo_module.Window()
    assert module.schedule.sequences[-7].instruction_ids == ()
    assert module.computations[0].is_fusion_computation is True
    ba = program.buffer_assignment
    assert ba.buffer_allocations[0].is_constant is True and ba.logical_buffers[0].size == 2**40
    assert ba.heap_simulator_traces[0].events[2].kind == -(2**31)


def _key(number: int, wire: int) -> bytes:
    value, out = number << 3 | wire, b""
    while value > 0x7F:
        out += bytes([value & 0x7F | 0x80])
        value >>= 7
    return out + bytes([value])


def _len(number: int, payload: bytes) -> bytes:
    size, prefix = len(payload), b""
    while size > 0x7F:
        prefix += bytes([size & 0x7F | 0x80])
        size >>= 7
    return _key(number, 2) + prefix + bytes([size]) + payload


def _varint(number: int, value: int) -> bytes:
    value &= (1 << 64) - 1
    out = b""
    while value > 0x7F:
        out += bytes([value & 0x7F | 0x80])
        value >>= 7
    return _key(number, 0) + out + bytes([value])


def _instr(fields: bytes) -> bytes:
    """A module whose one computation holds one instruction with ``fields``."""
    return _len(3, _len(2, _len(1, b"a") + _len(2, b"add") + fields))


def _entry(key: int, ids: bytes) -> bytes:
    return _len(1, _key(1, 0) + bytes([key]) + _len(2, ids))


def _deep_shape(depth: int) -> bytes:
    """A tuple shape ``depth`` levels deep."""
    shape = _varint(2, 11)
    for _ in range(depth):
        shape = _varint(2, 13) + _len(4, shape)
    return shape


UNKNOWN = (
    _key(4, 0) + b"\x96\x01" + _key(9, 1) + bytes(8) + _key(10, 5) + bytes(4) + _len(99, b"zz")
)
#: HloModuleProto bytes (wrapped as field 1 of an HloProto) that both decode.
DECODED = {
    "empty": b"",
    "last name wins": _len(1, b"x") + _len(1, b"y"),
    "unknown fields of every wire type": UNKNOWN,
    "unpacked and packed operands": _instr(_key(36, 0) + b"\x05" + _len(36, b"\x01\x02")),
    "negative int32 as ten bytes": _instr(_len(7, _key(4, 0) + b"\xff" * 9 + b"\x01")),
    "duplicate schedule keys": _len(7, _entry(3, b"\x08\x01") + _entry(3, b"\x08\x02")),
    "map entry without key": _len(7, _len(1, _len(2, b"\x08\x04"))),
    "bools of any varint": _instr(_len(3, _len(6, b"\x02\x00\x80\x01") + _varint(6, 2**63)))
    + _len(3, _varint(7, 256)),
    "element type as a negative int32": _instr(_len(3, _varint(2, -5) + _varint(2, 2**32 + 7))),
    "an empty layout and window": _instr(_len(3, _len(5, b"")) + _len(15, b"")),
    "a shape nested 15 deep": _instr(_len(3, _deep_shape(15))),
    "repeated messages split": _instr(_len(17, _varint(1, 1)) + _len(17, _varint(2, 2))),
}
#: Whole HloProto bytes that decode_program declines (decode may read the module).
DECLINED = {
    "truncated": _len(1, _len(1, b"abc"))[:-1],
    "invalid UTF-8": _len(1, _len(1, b"\xc3\x28")),
    "group": _len(1, _key(20, 3) + _key(20, 4)),
    "metadata twice (protobuf merges)": _len(1, _instr(_len(7, b"") + _len(7, b""))),
    "shape twice": _len(1, _instr(_len(3, b"") + _len(3, b""))),
    "layout twice": _len(1, _instr(_len(3, _len(5, b"") + _len(5, b"")))),
    "a varint where a message is due": _len(1, _key(3, 0) + b"\x01"),
    "a message where a varint is due": _len(1, _instr(_len(35, b""))),
    "wire type 7": _len(1, _key(20, 7)),
    "field number 0": _len(1, b"\x00\x01"),
    "a shape nested 20 deep": _len(1, _instr(_len(3, _deep_shape(20)))),
    "buffer assignment twice": _len(3, b"") + _len(3, b""),
    "event name not UTF-8": _len(3, _len(4, _len(1, _len(4, b"\xff")))),
    "allocation truncated": _len(3, _len(3, _key(1, 0))),
    "location twice": _len(3, _len(1, _len(3, b"") + _len(3, b""))),
}


@pytest.mark.parametrize("name", DECODED)
def test_wire_cases_decode(name: str) -> None:
    assert agrees(_len(1, DECODED[name])) == "decoded"


@pytest.mark.parametrize("name", DECLINED)
def test_unusual_bytes_are_declined(name: str) -> None:
    data = DECLINED[name]
    assert hlo_module.native_program(data) is None
    assert agrees(data) in ("declined", "module")


def test_the_module_alone_skips_the_buffer_assignment() -> None:
    data = full_program() + DECLINED["event name not UTF-8"]
    assert agrees(data) == "module"
    with pytest.raises(InvalidInputError, match="program 4: not a serialized XLA HloProto"):
        parse_program(data, "program 4")
    whole = hlo_module.native_program(full_program())
    assert whole is not None and hlo_module.read_hlo_module(data) == whole.hlo_module


def test_deep_shapes_take_protobufs_path() -> None:
    data = _len(1, _instr(_len(3, _deep_shape(20))))  # 25 levels: protobuf takes 32
    shape = parse_program(data).hlo_module.computations[0].instructions[0].shape
    for _ in range(20):
        assert shape.element_type == 13
        shape = shape.tuple_shapes[0]
    assert shape.element_type == 11


def test_declined_bytes_take_protobufs_path() -> None:
    data = _len(1, _instr(_len(7, _len(2, b"a")) + _len(7, _len(1, b"T"))))
    assert hlo_module.native_module(data) is None
    module = hlo_module.read_hlo_module(data)  # protobuf merges the two metadata
    meta = module.computations[0].instructions[0].metadata
    assert (meta.op_name, meta.op_type) == ("a", "T")
    merged = parse_program(data + _len(3, _len(1, _varint(1, 4))) + _len(3, _len(1, _varint(2, 8))))
    assert [(b.id, b.size) for b in merged.buffer_assignment.logical_buffers] == [(4, 0), (0, 8)]
    with pytest.raises(InvalidInputError, match="program 3: not a serialized XLA HloProto"):
        hlo_module.read_hlo_module(b"\x0a\x05ab", "HLO proto of program 3")


def test_pure_path_is_protobufs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PURE_PYTHON_ENV, "1")
    module = hlo_module.read_hlo_module(full_program())
    program = parse_program(full_program())
    assert not isinstance(module, hlo_module.HloModule)
    assert not isinstance(program, hlo_module.HloProgram)
    monkeypatch.delenv(PURE_PYTHON_ENV)
    assert canonical(module) == canonical(hlo_module.read_hlo_module(full_program()))
    assert canonical(program) == canonical(parse_program(full_program()))


def test_wrong_classes_are_a_type_error() -> None:
    native = load("_hlodecode")
    with pytest.raises(TypeError, match="29 HLO tuple classes"):
        native.decode(b"", hlo_module.CLASSES[:-1])
    with pytest.raises(TypeError, match="tuple subclasses"):
        native.decode_program(b"", (int,) * len(hlo_module.CLASSES))
    assert native.decode(b"", hlo_module.CLASSES) == hlo_module.native_module(b"")


def test_a_call_within_a_call_decodes_alike() -> None:
    """A decode started while another runs (here from the garbage collector's
    callback, which the outer one's allocations set off) uses state of its own."""
    data = full_program()
    expected = canonical(hlo_module.native_program(data))
    inner: list[tuple[bool, Any]] = []
    running = [False]

    def callback(phase: str, _info: dict[str, int]) -> None:
        if phase == "start" and len(inner) < 20:
            inner.append((running[0], hlo_module.native_program(data)))

    threshold = gc.get_threshold()
    gc.callbacks.append(callback)
    gc.set_threshold(1)
    try:
        running[0] = True
        outer = [hlo_module.native_program(data) for _ in range(5)]
    finally:
        running[0] = False
        gc.set_threshold(*threshold)
        gc.callbacks.remove(callback)
    assert any(nested for nested, _ in inner)
    assert all(canonical(p) == expected for p in [p for _, p in inner] + outer)


def test_mutated_programs_agree() -> None:
    rng = random.Random(23)
    protos = sorted(jax_protos(), key=len)
    seeds = [full_program(), protos[0], protos[len(protos) // 2], protos[3 * len(protos) // 4]]
    counts = mutation_outcomes(rng, seeds, hlo.HloProto.DESCRIPTOR, MUTATIONS, agrees)
    assert counts.get("decoded", 0) > len(seeds) * MUTATIONS // 10, counts
    assert counts.get("declined", 0) > len(seeds) * MUTATIONS // 20, counts
