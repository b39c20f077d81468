"""The saved-profile decoders and encoders (native and pure Python) give equal results.

Profiles come from the hand-made cases (written by our own ``serialize_to_string``)
and from hand-built ProfileProto messages that reach the corners: unsorted and
non-contiguous ids, several devices per map, repeated and missing values,
extreme integers, empty and absent traces. Malformed or unusual bytes must make
the native decoder decline (None), never give another answer than protobuf's
parse; a seeded mutation loop checks that on a few thousand inputs.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import tests.hand_cases as hc
import tfprof_lite
from tests.mutations import attr_values, mutate
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto import profiles
from tfprof_lite.proto.profiles import ProfileColumns, columns_from_profile

pytestmark = pytest.mark.skipif(
    not profiles.native_profile_available() and os.environ.get("CI") != "true",
    reason="the native profile decoder is not built (python setup.py build_ext --inplace)",
)

#: Mutated inputs of the decline-or-agree loop (``make fuzz`` raises it).
PROFILE_FUZZ_ENV = "FUZZ_CODEC_N"


@pytest.fixture(autouse=True)
def _both_paths_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests pick each path themselves: a forced pure path is lifted."""
    monkeypatch.delenv("TFPROF_LITE_PURE_PYTHON", raising=False)


CASES = (hc.gpu_case, hc.steps_case, hc.shapes_case, hc.numbers_case, hc.code_case, hc.names_case)
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


def _saved(case: Any) -> bytes:
    prof = tfprof_lite.Profiler(case.graph_def, op_log=case.op_log or None)
    for step, meta in case.run_metas:
        prof.add_step(step, meta)
    data: bytes = prof.serialize_to_string()
    return data


def assert_same(native: ProfileColumns, pure: ProfileColumns) -> None:
    """Field by field; AttrValue bytes compared as messages (encodings may differ)."""
    assert native.has_trace == pure.has_trace
    assert native.steps == pure.steps
    assert native.id_to_string == pure.id_to_string
    assert len(native.nodes) == len(pure.nodes)
    for a, b in zip(native.nodes, pure.nodes):
        assert a[:11] == b[:11] and a[12] == b[12]
        assert attr_values(a[11]) == attr_values(b[11])
    assert [(b.step, b.devices) for b in native.blocks] == [
        (b.step, b.devices) for b in pure.blocks
    ]
    for x, y in zip(native.blocks, pure.blocks):
        for name, dtype in profiles.BLOCK_COLUMNS:
            assert x.cols[name].dtype == np.dtype(dtype) == y.cols[name].dtype, name
            assert np.array_equal(x.cols[name], y.cols[name]), (x.step, name)


def _both(raw: bytes) -> tuple[ProfileColumns | None, ProfileColumns | None]:
    native = profiles.native_profile_columns(raw)
    try:
        message = pb.ProfileProto.FromString(raw)
    except Exception:  # noqa: BLE001 - protobuf's DecodeError
        return native, None
    return native, columns_from_profile(message)


def _hand_profile() -> Any:
    """A ProfileProto reaching the decoders' corners."""
    out = pb.ProfileProto(has_trace=True, steps=[7, 3, 7])
    out.id_to_string[5] = "file.py"
    out.id_to_string[-1] = "ünï"
    for nid, name in ((40, "b"), (3, "a"), (900, "c/d"), (-2, "neg")):
        node = out.nodes[nid]
        node.id = nid
        node.name = name
        node.op = "Op" + name
        node.canonical_device = "/gpu:0"
        node.float_ops = I64_MAX if nid == 3 else nid
        node.op_types.extend(["T1", "T0", "T1"])
        node.shape.extend([2, -1, 0] if nid != 40 else [])
        node.inputs[1] = 3
        node.inputs[0] = 12345  # no such node: producer name ""
        node.src_output_index[3] = 2
        node.output_shapes[2].int64_values.extend([4, 5])
        node.output_shapes[0].SetInParent()
        node.attrs["T"].type = 1
        node.attrs["s"].s = b"\xff\x00"
        if nid == 3:
            node.trace.SetInParent()  # present and empty
        elif nid != 900:
            t = node.trace.traces.add(file_id=5, lineno=-7, function_id=-1, line_id=I64_MIN)
            t.func_start_line = 2**31 - 1
            node.trace.traces.add(file_id=5, lineno=1)
        for step in (7, 3) if nid != -2 else ():
            exe = node.execs[step]
            exe.run_count = 3
            exe.all_start_micros = I64_MAX if nid == 40 else step
            exe.latest_end_micros = 0 if nid == 900 else -1
            exe.devices.extend(["/gpu:0", "/cpu:0", "/gpu:0"] if nid != 900 else [])
            for dev in ("z_stream:all", "a_stream:1"):
                exe.accelerator_execs[dev].times.add().int64_values.extend([10, 20, 30])
                exe.accelerator_execs[dev].times.add()
            exe.cpu_execs["/cpu:0"].times.add().int64_values.append(I64_MIN)
            exe.cpu_execs["/gpu:0"].SetInParent()
            mem = exe.memory_execs.add(memory_micros=1, requested_bytes=I64_MIN, peak_bytes=-5)
            mem.allocator_bytes_in_use = I64_MAX
            mem.output_memory[9].bytes = 90
            mem.output_memory[9].ptr = 2**64 - 1
            mem.output_memory[-3].bytes = 30
            exe.memory_execs.add()
            exe.allocations.add(alloc_micros=5, alloc_bytes=-64)
    return out


def test_hand_profile_equal_and_loaded_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = _hand_profile().SerializeToString()
    native, pure = _both(raw)
    assert native is not None and pure is not None
    assert_same(native, pure)
    assert [row[0] for row in native.nodes] == ["neg", "a", "b", "c/d"]
    texts = []
    for forced in ("0", "1"):
        monkeypatch.setenv("TFPROF_LITE_PURE_PYTHON", forced)
        prof = tfprof_lite.Profiler.load(raw)
        texts.append(prof.serialize_to_string())
    assert pb.ProfileProto.FromString(texts[0]) == pb.ProfileProto.FromString(texts[1])


@pytest.mark.parametrize("make", CASES, ids=lambda f: f.__name__)
def test_saved_hand_cases_equal(make: Any) -> None:
    native, pure = _both(_saved(make()))
    assert native is not None and pure is not None
    assert_same(native, pure)


def _declined(message: Any) -> bytes:
    return message.SerializeToString()


def _decline_cases() -> Iterator[tuple[str, bytes]]:
    base = _hand_profile()
    wrong_key = pb.ProfileProto()
    wrong_key.CopyFrom(base)
    wrong_key.nodes[77].CopyFrom(base.nodes[3])  # key 77, id 3
    yield "key differs from id, two nodes with one id", _declined(wrong_key)
    raw = base.SerializeToString()
    yield "unknown top-level field", raw + b"\x30\x01"  # field 6, varint
    yield "truncated", raw[:-3]
    # A node whose trace frame carries the old string field 1.
    trace = b"\x0a\x03abc"  # Trace.file (field 1), dropped by TensorFlow
    code_def = b"\x0a" + bytes([len(trace)]) + trace
    body = b"\x0a\x01x\x68\x01\x52" + bytes([len(code_def)]) + code_def
    yield (
        "old trace field",
        b"\x0a" + bytes([len(body) + 4]) + b"\x08\x01\x12" + bytes([len(body)]) + body,
    )
    bad_utf8 = b"\x0a\x02\xc3\x28\x68\x01"
    yield (
        "invalid UTF-8 name",
        b"\x0a" + bytes([len(bad_utf8) + 4]) + b"\x08\x01\x12" + bytes([len(bad_utf8)]) + bad_utf8,
    )


@pytest.mark.parametrize("what,raw", list(_decline_cases()), ids=lambda x: str(x)[:30])
def test_unusual_inputs_decline_or_agree(what: str, raw: bytes) -> None:
    native, pure = _both(raw)
    if pure is None:
        assert native is None, what
    elif native is not None:
        assert_same(native, pure)


def test_declines_on_what_upb_reads_differently() -> None:
    base = _hand_profile()
    twice = pb.ProfileProto()
    twice.nodes[3].CopyFrom(base.nodes[3])
    raw = twice.SerializeToString()
    assert profiles.native_profile_columns(raw) is not None
    # The same node entry twice: protobuf keeps the last, the decoder declines.
    assert profiles.native_profile_columns(raw + raw) is None
    assert profiles.native_profile_columns(raw + b"\x30\x01") is None
    assert profiles.native_profile_columns(raw[:-1]) is None


def test_equal_traces_and_attribute_values_share_one_object() -> None:
    base = _hand_profile()
    native = profiles.native_profile_columns(base.SerializeToString())
    assert native is not None
    rows = {row[0]: row for row in native.nodes}
    # "neg" and "b" have equal traces, and every node has the same attributes.
    assert rows["neg"][10] is rows["b"][10] and rows["neg"][10] is not None
    assert rows["a"][11]["T"] is rows["c/d"][11]["T"]
    assert rows["a"][11]["s"] is rows["b"][11]["s"]


def test_a_bad_attribute_value_on_any_node_declines() -> None:
    """Attribute values are checked by upb once per distinct value; one that
    only a later node carries still makes the decoder decline."""
    out = _hand_profile()
    raw = bytearray(out.SerializeToString())
    good = pb.AttrValue(s=b"\xff\x00").SerializeToString()
    at = raw.rfind(good)
    assert at > 0 and raw.find(good) < at
    raw[at] = 0xFF  # an invalid tag inside the last node's value only
    assert profiles.native_profile_columns(bytes(raw)) is None
    with pytest.raises(Exception):  # noqa: B017, PT011 - protobuf's DecodeError
        pb.ProfileProto.FromString(bytes(raw))


def test_pure_env_keeps_native_out(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = _hand_profile().SerializeToString()
    monkeypatch.setenv("TFPROF_LITE_PURE_PYTHON", "1")
    assert profiles.native_profile_columns(raw) is None


def _mutations(raw: bytes, rng: random.Random) -> bytes:
    return mutate(raw, rng)


def test_mutated_profiles_decline_or_agree() -> None:
    """Native either declines or equals protobuf's parse walked in Python; it never
    accepts bytes protobuf rejects."""
    rng = random.Random(int(os.environ.get("FUZZ_SEED", "20261126")))
    seeds = [_hand_profile().SerializeToString(), _saved(hc.gpu_case())]
    accepted = rejected = declined = 0
    for i in range(int(os.environ.get(PROFILE_FUZZ_ENV, "2500"))):
        raw = _mutations(seeds[i % len(seeds)], rng)
        native, pure = _both(raw)
        if pure is None:
            assert native is None, raw.hex()
            rejected += 1
        elif native is None:
            declined += 1
        else:
            assert_same(native, pure)
            accepted += 1
    # The loop must exercise all three outcomes to mean anything.
    assert accepted > 100 and rejected > 100 and declined > 20, (accepted, rejected, declined)


# ----------------------------------------------------------------- encoding


def _encoded_both(prof: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    from tfprof_lite.model import profile_write

    native = profile_write.encode_bytes(prof.model)
    monkeypatch.setenv("TFPROF_LITE_PURE_PYTHON", "1")
    pure = profile_write.encode_bytes(prof.model)
    monkeypatch.delenv("TFPROF_LITE_PURE_PYTHON")
    return pb.ProfileProto.FromString(native), pb.ProfileProto.FromString(pure)


@pytest.mark.parametrize("make", CASES, ids=lambda f: f.__name__)
def test_native_encoder_equals_message_path(make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Live profiles (steps from RunMetadata, GPU devices, memory, allocations)."""
    case = make()
    prof = tfprof_lite.Profiler(case.graph_def, op_log=case.op_log or None)
    for step, meta in case.run_metas:
        prof.add_step(step, meta)
    native, pure = _encoded_both(prof, monkeypatch)
    assert native == pure
    assert len(native.nodes) == len(prof.model)


def test_native_encoder_on_a_loaded_corner_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    """Extreme values, empty and absent traces, unknown producers, several steps."""
    prof = tfprof_lite.Profiler.load(_hand_profile().SerializeToString())
    native, pure = _encoded_both(prof, monkeypatch)
    assert native == pure
    assert any(node.HasField("trace") and not node.trace.traces for node in native.nodes.values())


def test_native_encoder_round_trips_through_both_decoders(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = _saved(hc.gpu_case())
    again = tfprof_lite.Profiler.load(raw).serialize_to_string()
    assert pb.ProfileProto.FromString(again) == pb.ProfileProto.FromString(raw)
    monkeypatch.setenv("TFPROF_LITE_PURE_PYTHON", "1")
    pure_again = tfprof_lite.Profiler.load(again).serialize_to_string()
    assert pb.ProfileProto.FromString(pure_again) == pb.ProfileProto.FromString(again)
