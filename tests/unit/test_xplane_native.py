"""The native XSpace decoder (``_native/_xplanedecode.c``) against protobuf and
the pure walk: equal columns on the real JAX captures and on hand-made files
(both timestamp conventions, compressed strings, ref values, missing metadata,
derived lines, empty planes, protobuf's merge rules written by hand), declines
where it must, and agreement (same columns or the same error) on seeded byte
mutations. The TF 2.21 captures are compared in
``tests/integration/test_xplane_native_tf.py``."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import xspace_cases, xspace_files
from tests.mutations import mutate
from tests.xspacecols import (
    XSpaceMismatch,
    check_xspace,
    column_differences,
    require_xspace_native,
)
from tfprof_lite._native import PURE_PYTHON_ENV, load
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.formats.xspace.wire import columns as xcols
from tfprof_lite.formats.xspace.wire import decode as xplane
from tfprof_lite.formats.xspace.wire import native as xplane_native

MUTATIONS = 1500
REAL_MUTATIONS = 40


@pytest.fixture(autouse=True)
def _native_built() -> None:
    require_xspace_native()


@pytest.mark.parametrize("case", xspace_files.jax_cases())
def test_real_captures_decode_natively_and_equal(case: str) -> None:
    data = xspace_files.jax_file(case).read_bytes()
    assert check_xspace(data) == "decoded"
    cols = xplane_native.native_columns(data)
    assert cols is not None and cols.relative and len(cols.event_line) > 1000
    assert {"/host:CPU", "/device:GPU:0", "/host:metadata"} <= set(cols.plane_name)
    assert cols.meta_stats.kind.tolist().count(xcols.KIND_BYTES) > 0  # the HLO protos


@pytest.mark.parametrize("name", sorted(xspace_cases.MESSAGES))
def test_hand_made_messages_decode_natively(name: str) -> None:
    assert check_xspace(xspace_cases.MESSAGES[name]().SerializeToString()) == "decoded"


@pytest.mark.parametrize("name", sorted(xspace_cases.WIRE))
def test_protobuf_rules_written_by_hand(name: str) -> None:
    assert check_xspace(xspace_cases.WIRE[name]) == "decoded"


@pytest.mark.parametrize("name", sorted(xspace_cases.DECLINED))
def test_declined_inputs_go_to_protobuf(name: str) -> None:
    data = xspace_cases.DECLINED[name]
    assert xplane_native.native_columns(data) is None
    assert check_xspace(data) == "declined"


def test_rules_give_protobufs_values() -> None:
    """The hand-written merge cases read as protobuf reads them (not just equal)."""
    cols = xplane.decode_xspace(xspace_cases.WIRE["map_key_repeated"])
    assert cols.meta_name == ["b"] and cols.event_meta.tolist() == [0]
    cols = xplane.decode_xspace(xspace_cases.WIRE["oneof_offset_then_count"])
    assert cols.event_offset_ps.tolist() == [0] and cols.event_occurrences.tolist() == [3]
    cols = xplane.decode_xspace(xspace_cases.WIRE["oneof_count_then_offset"])
    assert cols.event_offset_ps.tolist() == [9] and cols.event_occurrences.tolist() == [0]
    cols = xplane.decode_xspace(xspace_cases.WIRE["stat_value_replaced"])
    assert [cols.stat_value(cols.plane_stats, i) for i in range(2)] == ["text", 2.0]
    cols = xplane.decode_xspace(xspace_cases.WIRE["fields_in_any_order"])
    assert cols.plane_name == ["second"] and cols.plane_id.tolist() == [4]
    assert cols.event_stat_dict(0) == {"s": "s"} and cols.plane_stat_dict(0) == {"s": 1}
    cols = xplane.decode_xspace(xspace_cases.WIRE["line_fields_after_events"])
    assert cols.line_timestamp_ns.tolist() == [6]


def test_compressed_strings_and_timestamps() -> None:
    cols = xplane.decode_xspace(xspace_cases.MESSAGES["compressed"]().SerializeToString())
    assert cols.event_stat_dict(0) == {"long": "", "\u00e9t\u00e9 \u2603": "long"}
    assert cols.strings[:4] == ["", "long", "x" * 5000, "\u00e9t\u00e9 \u2603"]
    mixed = xplane.decode_xspace(xspace_cases.MESSAGES["start_int64"]().SerializeToString())
    start = xspace_cases.START
    assert mixed.relative and mixed.origin_ns == start
    assert mixed.event_start_ns().tolist() == [start + 5, start + 5, start + 100]
    for name in ("start_zero", "start_absent"):
        cols = xplane.decode_xspace(xspace_cases.MESSAGES[name]().SerializeToString())
        assert not cols.relative and cols.origin_ns == int(cols.line_timestamp_ns.min())


def test_sparse_ids_resolve() -> None:
    cols = xplane.decode_xspace(xspace_cases.MESSAGES["sparse_ids"]().SerializeToString())
    assert [cols.event_name(e) for e in range(6)] == ["e-5", "e3", f"e{1 << 40}", "", "", ""]
    assert cols.event_stat_dict(1) == {"s-2": f"s{1 << 33}", f"s{1 << 33}": 3, "": ""}


def test_pure_python_env_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    data = xspace_files.hand_space().SerializeToString()
    assert xplane_native.native_columns(data) is not None
    monkeypatch.setenv(PURE_PYTHON_ENV, "1")
    assert xplane_native.native_columns(data) is None
    assert not column_differences(xplane.decode_xspace(data), xplane.decode_xspace(data))


def test_out_of_range_times_are_one_line_errors() -> None:
    with pytest.raises(InvalidInputError, match="event times beyond 64 bits of picoseconds"):
        xplane.decode_xspace(xspace_cases.DECLINED["event_start_overflow"], "f.xplane.pb")


def test_native_columns_are_what_the_model_reads() -> None:
    """The columns are ordinary arrays (views of the decoder's buffers)."""
    cols = xplane_native.native_columns(xspace_files.hand_space().SerializeToString())
    assert cols is not None
    assert cols.event_start_ns().dtype.name == "int64"
    assert cols.event_stat_dict(3)["note"] == "long text"


def test_seeded_mutations_agree() -> None:
    rng = random.Random(23)
    seeds = [make().SerializeToString() for make in xspace_cases.MESSAGES.values()]
    seeds += list(xspace_cases.WIRE.values())
    outcomes = {"decoded": 0, "declined": 0}
    for i in range(MUTATIONS):
        data = mutate(seeds[i % len(seeds)], rng)
        try:
            outcomes[check_xspace(data)] += 1
        except XSpaceMismatch as err:
            raise AssertionError(f"mutation {i}: {err}; input {data.hex()}") from None
    assert outcomes["decoded"] > MUTATIONS // 20 and outcomes["declined"] > MUTATIONS // 20


def test_real_capture_mutations_agree() -> None:
    rng = random.Random(5)
    data = xspace_files.jax_file("jax_h100_mlp").read_bytes()
    seen = set()
    for _ in range(REAL_MUTATIONS):
        seen.add(check_xspace(mutate(data, rng)))
    assert seen == {"decoded", "declined"}


OUT_OF_MEMORY = textwrap.dedent(
    """
    import os, resource
    from tfprof_lite._native._xplanedecode import decode
    from tfprof_lite.proto.wire import len_field
    event = len_field(4, b"\\x08\\x01\\x10\\x02")  # XLine.events: metadata 1, offset 2
    data = len_field(1, len_field(2, b"p") + len_field(3, event * 5_000_000))
    used = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (used + (100 << 20),) * 2)
    try:
        decode(data, str)
    except MemoryError:
        print("MemoryError")
    print(decode(len_field(1, len_field(2, b"cpu")), str)[5])
    """
)


def test_out_of_memory_is_a_memory_error() -> None:
    """A buffer that cannot grow is a MemoryError (the error path frees what it
    holds), and the next call works: 5M events need ~240 MB of columns, the
    process may use 100 MB more than it does."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", OUT_OF_MEMORY], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["MemoryError", "['cpu']"]


class _Stop(BaseException):
    """Not an Exception: a decoder must let it through, not decline."""


def test_gunzip_callback_errors() -> None:
    """A failing or odd ``gunzip`` declines (the pure path then reports the
    string); an interrupt-like BaseException propagates."""
    module = load("_xplanedecode")
    data = xspace_cases.MESSAGES["compressed"]().SerializeToString()

    def fails(raw: bytes) -> str:
        raise ValueError("bad")

    def stops(raw: bytes) -> str:
        raise _Stop

    assert module.decode(data, fails) is None
    assert module.decode(data, lambda raw: b"not text") is None
    with pytest.raises(_Stop):
        module.decode(data, stops)
    assert module.decode(data, xplane_native.gunzip_text) is not None
    with pytest.raises(TypeError):
        module.decode(bytearray(data), xplane_native.gunzip_text)


def test_no_python_objects_leak() -> None:
    """Decoding and declining, over and over, leaves no Python allocation behind
    (every path releases the lists, strings, bytes and buffers it made)."""
    import gc
    import tracemalloc

    decode = load("_xplanedecode").decode
    inputs = xspace_cases.all_inputs()
    for data in inputs:  # warm-up: interned strings, caches
        decode(data, xplane_native.gunzip_text)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(30):
            for data in inputs:
                decode(data, xplane_native.gunzip_text)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 4096, grown
