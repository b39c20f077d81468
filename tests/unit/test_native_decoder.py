"""The native RunMetadata decoder (``_stepdecode.c``) against the pure-Python walker.

Hand-built RunMetadata (our message classes and hand-written wire bytes) covering
every field the step columns read; each must give equal columns on both paths
(:func:`tests.stepcols.check_decoders`). Then the decline rules: bytes outside the
plain subset the decoder reads (unknown fields, wrong wire types, non-canonical
encodings, invalid UTF-8, truncation, ...) must be declined, so that protobuf
parses them and the caller gets its usual result or error. No TensorFlow needed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.handmade import CPU, GPU, STREAM_ALL, ns, run_meta
from tests.native_cases import (
    I64_MAX,
    MALFORMED,
    MESSAGES,
    WIRE,
    all_inputs,
    bad_utf8_cases,
    device_of,
    empty_step_stats,
    extremes,
    graph_of_two_nodes,
    in_node,
    meta_of,
    only_others,
    others,
    rich,
    unknown_field_cases,
    vfield,
    wrong_wire_cases,
)
from tests.stepcols import (
    check_decoders,
    in_ci,
    native_decode,
    parse_or_none,
    require_native,
)
from tfprof_lite import Profiler
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto import steps
from tfprof_lite.proto.wire import len_field


@pytest.fixture(autouse=True)
def _native_built() -> None:
    require_native()


@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_message_columns_equal(name: str) -> None:
    data = MESSAGES[name]().SerializeToString()
    assert check_decoders(data) == "decoded"


@pytest.mark.parametrize("name", sorted(WIRE))
def test_wire_columns_equal(name: str) -> None:
    assert parse_or_none(WIRE[name]) is not None
    assert check_decoders(WIRE[name]) == "decoded"


def test_columns_read_the_fields() -> None:
    """Spot values, so that the comparison is not between two empty results."""
    cols = native_decode(rich().SerializeToString())
    assert cols is not None
    assert cols.devices == [GPU, STREAM_ALL, "", CPU]
    assert cols.dev.tolist() == [0, 0, 0, 0, 1, 3, 3]
    assert cols.gpu_allocs.tolist() == [1, 1, 0, 0, 1, 0, 0]
    assert cols.gpu_in_use.tolist() == [5000, 6000, 0, 0, 0, 0, 0]
    assert cols.a_row.tolist() == [0, 0, 4]
    assert cols.o_row.tolist() == [0, 0, 0, 1, 5]
    assert cols.o_slot.tolist() == [0, 1, -1, 0, 0]
    assert cols.o_bytes.tolist() == [32, 17, 0, 32, 24]
    assert cols.r_row.tolist() == [0, 1, 4, 6]
    assert cols.temp.tolist()[:4] == [16, 4, 0, 0] and cols.persist.tolist()[2] == 12
    wrapped = native_decode(extremes().SerializeToString())
    assert wrapped is not None
    assert wrapped.total.tolist()[0] == I64_MAX + I64_MAX + 2 - 2**64
    assert wrapped.gpu_in_use.tolist()[0] == I64_MAX
    assert wrapped.o_ptr.dtype == np.uint64 and wrapped.o_ptr.tolist()[-1] == 2**64 - 1


def test_has_step_stats_present_empty_and_absent() -> None:
    empty = native_decode(empty_step_stats().SerializeToString())
    absent = native_decode(only_others().SerializeToString())
    assert empty is not None and empty.has_step_stats and len(empty) == 0
    assert absent is not None and not absent.has_step_stats


# ---------------------------------------------------------------- declined inputs


@pytest.mark.parametrize("name", sorted(bad_utf8_cases()))
def test_invalid_utf8_is_declined(name: str) -> None:
    data = bad_utf8_cases()[name]
    assert parse_or_none(data) is None  # upb refuses it too
    assert native_decode(data) is None
    assert check_decoders(data) == "invalid"


def test_valid_utf8_edges_decode() -> None:
    edges = (b"\x7f", b"\xc2\x80", b"\xe0\xa0\x80", b"\xed\x9f\xbf", b"\xee\x80\x80")
    for text in (*edges, b"\xf0\x90\x80\x80", b"\xf4\x8f\xbf\xbf", b"\xdf\xbf"):
        assert check_decoders(meta_of(device_of(name=text))) == "decoded"
        assert check_decoders(in_node(len_field(6, len_field(1, text)))) == "decoded"


@pytest.mark.parametrize("name", sorted(unknown_field_cases()))
def test_unknown_fields_are_declined(name: str) -> None:
    data = unknown_field_cases()[name]
    assert native_decode(data) is None
    assert check_decoders(data) in ("declined", "invalid")


@pytest.mark.parametrize("name", sorted(wrong_wire_cases()))
def test_wrong_wire_types_are_declined(name: str) -> None:
    data = wrong_wire_cases()[name]
    assert native_decode(data) is None
    assert check_decoders(data) in ("declined", "invalid")


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_and_non_canonical_are_declined(name: str) -> None:
    data = MALFORMED[name]
    assert native_decode(data) is None
    assert check_decoders(data) in ("declined", "invalid")


def test_every_truncation_and_bit_flip_of_a_rich_message() -> None:
    """Each prefix, and each single-bit flip, of a rich message: decline or agree."""
    data = rich().SerializeToString() + others().SerializeToString()
    outcomes: dict[str, int] = {}
    variants = [data[:cut] for cut in range(len(data))]
    variants += [
        data[:i] + bytes([data[i] ^ (1 << bit)]) + data[i + 1 :]
        for i in range(len(data))
        for bit in range(8)
    ]
    for variant in variants:
        outcome = check_decoders(variant)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    assert set(outcomes) == {"decoded", "declined", "invalid"}, outcomes


# ---------------------------------------------------------------- entry points


def test_decode_takes_bytes_only() -> None:
    module = steps._native()
    with pytest.raises(TypeError):
        module.decode(bytearray(b"\x0a\x00"))
    with pytest.raises(TypeError):
        module.decode("text")
    data = MESSAGES["rich"]().SerializeToString()
    for form in (bytearray(data), memoryview(data)):
        cols = native_decode(form)  # type: ignore[arg-type]
        assert cols is not None and len(cols) == 7


def test_pure_python_env_keeps_native_out(monkeypatch: pytest.MonkeyPatch) -> None:
    data = MESSAGES["rich"]().SerializeToString()
    monkeypatch.setenv(steps.PURE_PYTHON_ENV, "1")
    assert steps.native_columns(data) is None
    assert len(steps.decode_step_columns(data)) == 7
    monkeypatch.setenv(steps.PURE_PYTHON_ENV, "0")
    assert steps.native_columns(data) is not None


def _add_step(data: bytes, pure: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[str, object]:
    """``Profiler(graph=b"").add_step(0, data)`` on one path: the profile it
    serializes (as a message: the two paths' encoders may order map entries
    differently), or the error message."""
    monkeypatch.setenv(steps.PURE_PYTHON_ENV, "1" if pure else "0")
    prof = Profiler(graph=pb.GraphDef().SerializeToString())
    try:
        prof.add_step(0, data)
    except InvalidInputError as err:
        return "error", str(err)
    return "ok", pb.ProfileProto.FromString(prof.serialize_to_string())


def test_others_with_a_wrong_wire_type_are_declined(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: a skipped top-level field with a wrong wire type inside made the
    pure path refuse the bytes ("looks like an OpLogProto") but the native path
    accept them; the native path now declines such bytes, so both refuse."""
    bad_graph = len_field(3, len_field(1, vfield(1, 5)))  # NodeDef.name as a varint
    data = run_meta([("CPU", [ns("a", 5, 1)])]).SerializeToString() + bad_graph
    assert native_decode(data) is None
    assert check_decoders(data) == "declined"
    native, pure = _add_step(data, False, monkeypatch), _add_step(data, True, monkeypatch)
    assert native == pure and native[0] == "error" and "OpLogProto" in native[1]


def test_add_step_gives_the_same_result_on_both_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every hand-made input through ``add_step`` on each path: the same profile
    bytes, or the same error (empty input, invalid bytes, another kind)."""
    inputs = {**all_inputs(), "empty": b"", "graph_def": graph_of_two_nodes()}
    outcomes: set[str] = set()
    for name, data in inputs.items():
        native = _add_step(data, False, monkeypatch)
        assert native == _add_step(data, True, monkeypatch), name
        outcomes.add(native[0])
    assert outcomes == {"ok", "error"}


def test_native_extensions_are_built_in_ci() -> None:
    """Under CI=true every extension (one per C source in ``tfprof_lite/_native``)
    must be built, or the suite tests one path only."""
    from pathlib import Path

    from tfprof_lite import _native

    sources = sorted(Path(_native.__file__).parent.glob("_*.c"))
    assert len(sources) >= 5
    if in_ci():
        assert steps.native_available(), "CI=true but tfprof_lite._native._stepdecode is not built"
        missing = [src.stem for src in sources if _native.load(src.stem) is None]
        assert missing == [], f"CI=true but these extensions are not built: {missing}"


OUT_OF_MEMORY = textwrap.dedent(
    """
    import os, resource
    from tfprof_lite._native._stepdecode import decode
    from tfprof_lite.proto.wire import len_field
    memory = len_field(1, b"GPU_0_bfc") + b"\\x32\\x00" * 5_000_000  # 5M empty records
    data = len_field(1, len_field(1, len_field(2, len_field(6, memory))))
    used = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (used + (100 << 20),) * 2)
    try:
        decode(data)
    except MemoryError:
        print("MemoryError")
    print(decode(len_field(1, len_field(1, len_field(1, b"cpu"))))[1])
    """
)


def test_out_of_memory_is_a_memory_error() -> None:
    """A buffer that cannot grow is a MemoryError (the error path frees what it
    holds), and the next call works: 5M allocation records need ~180 MB of
    columns, the process is limited to 100 MB more than it uses."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", OUT_OF_MEMORY], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["MemoryError", "['cpu']"]


def test_no_python_objects_leak() -> None:
    """Decoding and declining, over and over, leaves no Python allocation behind
    (every path releases the lists, strings and buffers it made)."""
    import gc
    import tracemalloc

    decode = steps._native().decode
    inputs = list(all_inputs().values())
    for data in inputs:  # warm-up: interned strings, caches
        decode(data)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(50):
            for data in inputs:
                decode(data)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 4096, grown
