"""The native XSpace decoder (``_native/_xplanedecode.c``) against protobuf and
the pure walk: equal columns on the real JAX captures and on hand-made files
(both timestamp conventions, compressed strings, ref values, missing metadata,
derived lines, empty planes, protobuf's merge rules written by hand), declines
where it must, and agreement (same columns or the same error) on seeded byte
mutations. The TF 2.21 captures are compared in
``tests/integration/test_xplane_native_tf.py``."""

from __future__ import annotations

import random

import pytest

from tests import xspace_cases, xspace_files
from tests.mutations import mutate
from tests.xspacecols import (
    XSpaceMismatch,
    check_xspace,
    column_differences,
    require_xspace_native,
)
from tfprof_lite._native import PURE_PYTHON_ENV
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.proto import xplane, xplane_native

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
    assert cols.meta_stats.kind.tolist().count(xplane.KIND_BYTES) > 0  # the HLO protos


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
    with pytest.raises(InvalidInputError, match="event times beyond int64"):
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
