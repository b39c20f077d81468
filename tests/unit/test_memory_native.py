"""The native NodeExecStats memory decoder (``_native/_memdecode.c``) against protobuf.

:func:`tfprof_lite.model.decode.memory_detail` reads a step's kept record
natively when it can (a RunMetadata's; an XSpace's records are typed, never
serialized). On the records of hand-made GPU and CPU profiles, on a record
that sets every field of the schema, on wire-level edge cases and on mutated
inputs: whatever the decoder returns equals the protobuf path's result, and
whatever protobuf rejects it declines.
"""

from __future__ import annotations

import os
import random
from typing import Any

import pytest

from tests.fuzz.mutate import mutation_outcomes
from tests.stepcols import skip_or_fail
from tfprof_lite._native import PURE_PYTHON_ENV, load
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.model import decode
from tfprof_lite.proto import messages as pb

#: Mutated inputs per seed.
MUTATIONS = 300


@pytest.fixture(autouse=True)
def _native(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PURE_PYTHON_ENV, raising=False)
    if load("_memdecode") is None:
        skip_or_fail("the native memory decoder is not built (python setup.py build_ext --inplace)")


def native(raw: bytes) -> Any:
    """The native decoder's result (None: declined)."""
    return load("_memdecode").decode(raw, decode._RECORDS, {})


def pure(raw: bytes) -> Any:
    """:func:`decode.memory_detail` on the protobuf path."""
    os.environ[PURE_PYTHON_ENV] = "1"
    try:
        return decode.memory_detail(raw)
    finally:
        del os.environ[PURE_PYTHON_ENV]


def agrees(raw: bytes) -> str:
    """``decoded`` (equal to the protobuf path) or ``declined``; fails otherwise."""
    found = native(raw)
    try:
        expected = pure(raw)
    except InvalidInputError:
        assert found is None, "protobuf rejects bytes the native decoder accepted"
        return "declined"
    if found is None:
        return "declined"
    assert found == expected
    assert [type(t) for t in found.tensors] == [type(t) for t in expected.tensors]
    return "decoded"


def _records() -> list[bytes]:
    from tests.hand_cases import gpu_case, many_ops_case, numbers_case, steps_case
    from tests.unit.test_memory_kernels import _profiler, _two_allocators

    out = []
    for step in _profiler(_two_allocators()).model.steps.values():
        for raw in step.raw_stats:
            assert isinstance(raw, bytes)  # a RunMetadata's record stays as it came
            out.append(raw)
    cases = (gpu_case(), steps_case(), numbers_case(), many_ops_case())
    for _, data in (run_meta for case in cases for run_meta in case.run_metas):
        meta = pb.RunMetadata.FromString(data)
        out.extend(
            ns.SerializeToString()
            for dev in meta.step_stats.dev_stats
            for ns in dev.node_stats
            if ns.memory or ns.output
        )
    return out


def full_record() -> bytes:
    """A NodeExecStats with every field of the schema set, extremes included."""
    ns = pb.NodeExecStats(node_name="n", all_start_micros=2**62, op_end_rel_micros=2**62)
    ns.op_start_rel_micros, ns.all_end_rel_micros, ns.timeline_label = -1, 5, "label \u00e9"
    ns.scheduled_micros, ns.thread_id, ns.all_start_nanos, ns.scheduled_nanos = 1, 2**32 - 1, 3, 4
    ns.op_start_rel_nanos, ns.op_end_rel_nanos, ns.all_end_rel_nanos = 5, 6, 7
    mem = ns.memory.add(allocator_name="GPU_0_bfc", total_bytes=-1, peak_bytes=2**63 - 1)
    mem.live_bytes, mem.allocator_bytes_in_use = 3, 4
    mem.allocation_records.add(alloc_micros=-(2**63), alloc_bytes=-256)
    ns.memory.add()
    out = ns.output.add(slot=-(2**31))
    desc = out.tensor_description
    desc.dtype = 101
    desc.shape.dim.add(size=-1, name="batch")
    desc.shape.dim.add(size=2**40)
    alloc = desc.allocation_description
    alloc.requested_bytes, alloc.allocated_bytes, alloc.allocator_name = 1, 2, "cpu"
    alloc.allocation_id, alloc.has_single_reference, alloc.ptr = -3, True, 2**64 - 1
    unknown = ns.output.add(slot=1).tensor_description
    unknown.shape.unknown_rank = True
    unknown.allocation_description.allocator_name = "cpu"
    ns.output.add(slot=2).tensor_description.dtype = 1  # no allocation: left out
    ns.output.add(slot=3).tensor_description.allocation_description.SetInParent()  # no shape
    ns.referenced_tensor.add(allocator_name="x", ptr=5)
    ns.memory_stats.temp_memory_size = 1
    ns.memory_stats.persistent_tensor_alloc_ids.extend([1, -2])
    return ns.SerializeToString()


def test_real_records_decode_as_protobuf_parses_them() -> None:
    records = _records()
    assert len(records) > 30
    assert [agrees(raw) for raw in records] == ["decoded"] * len(records)
    assert any(native(raw).tensors for raw in records)


def test_every_field_and_extreme_value() -> None:
    raw = full_record()
    assert agrees(raw) == "decoded"
    detail = native(raw)
    assert detail.end_micros == 2**63
    assert [t.shape for t in detail.tensors] == [(-1, 2**40), None, None]
    assert detail.tensors[0].ptr == 2**64 - 1 and detail.tensors[0].slot == -(2**31)


def test_equal_shapes_share_one_tuple() -> None:
    ns = pb.NodeExecStats()
    for slot in range(2):
        desc = ns.output.add(slot=slot).tensor_description
        desc.shape.dim.add(size=4)
        desc.allocation_description.allocator_name = "cpu"
    first, second = native(ns.SerializeToString()).tensors
    assert first.shape == (4,) and first.shape is second.shape


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("truncated", full_record()[:-1]),
        ("invalid UTF-8", b"\x0a\x02\xc3\x28"),
        ("group", b"\x1b\x1c"),
        ("tensor description twice", b"\x3a\x04\x1a\x00\x1a\x00"),
        ("a varint where a message is due", b"\x30\x01"),
        ("field number 0", b"\x00\x01"),
    ],
)
def test_unusual_bytes_are_declined(name: str, raw: bytes) -> None:
    assert native(raw) is None, name
    assert agrees(raw) == "declined"


def test_declined_bytes_take_protobufs_path() -> None:
    raw = b"\x3a\x08\x1a\x02\x22\x00\x1a\x02\x08\x01"  # two descriptions, merged by protobuf
    assert native(raw) is None
    assert decode.memory_detail(raw).tensors[0].dtype == 1
    with pytest.raises(InvalidInputError, match="not a serialized NodeExecStats"):
        decode.memory_detail(b"\xff\xff")


def test_mutated_records_agree() -> None:
    rng = random.Random(23)
    records = sorted(_records(), key=len)
    seeds = [full_record(), records[0], records[len(records) // 2], records[-1]]
    counts = mutation_outcomes(rng, seeds, pb.NodeExecStats.DESCRIPTOR, MUTATIONS, agrees)
    assert counts.get("decoded", 0) > len(seeds) * MUTATIONS // 10, counts
    assert counts.get("declined", 0) > len(seeds) * MUTATIONS // 20, counts
