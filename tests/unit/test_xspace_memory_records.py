"""An XSpace's memory records reach the model as typed records
(:class:`~tfprof_lite.model.records.MemoryDetail`), never as serialized
NodeExecStats: their values on a hand-made XSpace (scalar shapes, addresses
past 2**63, frees by another op, allocations naming no shape) and on the H100
samples (checked against the allocator events read with protobuf), and every
reader of the kept records (memory profile, saved profiles, cluster copies,
pickling) on them."""

from __future__ import annotations

import pickle
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import tfprof_lite
from tests.xspace_files import SpaceBuilder, jax_cases, jax_file
from tfprof_lite.analysis.memory import memory_profile
from tfprof_lite.formats.xspace.read.load import model_from_bytes
from tfprof_lite.model.decode import memory_detail
from tfprof_lite.model.execs import StepExecs
from tfprof_lite.model.memory_records import MemoryRef
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.records import AllocatorUse, MemoryDetail, OutputTensor
from tfprof_lite.profiler import Profiler
from tfprof_lite.proto import messages as pb

GPU = "GPU_0_bfc"
US = SpaceBuilder.START // 1000  # the builder's start, in absolute microseconds
T0 = 1_000_000  # the step's start, ns after the builder's start


def _event(b: SpaceBuilder, line: Any, at: int, kind: str, nbytes: int, addr: int,
           in_use: int, **stats: Any) -> None:  # fmt: skip
    b.event(b.host, line, kind, T0 + at, 0, allocator_name=stats.pop("allocator", GPU),
            allocation_bytes=nbytes, addr=addr, bytes_allocated=in_use, **stats)  # fmt: skip


def _space() -> bytes:
    """One step: ``a/MatMul`` allocates on the GPU (a shaped output, then a
    bf16 one at an address past 2**63 that ``b/Relu``'s time frees: the free
    goes to its allocation) and a scalar on the host allocator; ``b/Relu``
    allocates an unshaped buffer and a shaped one at a negative int64 address."""
    b = SpaceBuilder()
    line = b.line(b.host, 1, "python")
    pool = b.line(b.host, 2, "tf_Compute/2")
    b.event(b.host, line, "train", T0, 100_000, step_num=0, _r=1)
    b.event(b.host, pool, "a/MatMul:MatMul", T0 + 10_000, 10_000, "MatMul")
    b.event(b.host, pool, "b/Relu:Relu", T0 + 30_000, 10_000, "Relu")
    alloc, free = "MemoryAllocation", "MemoryDeallocation"
    _event(b, pool, 11_000, alloc, 256, 64, 1256, requested_bytes=250, data_type=1,
           shape="[8,8]")  # fmt: skip
    _event(b, pool, 12_000, alloc, 4, 96, 4, allocator="cpu", requested_bytes=4, data_type=1,
           shape="[]")  # fmt: skip
    _event(b, pool, 13_500, alloc, 512, 2**62 + 8, 1768, requested_bytes=512, data_type=14,
           shape="[16,16]")  # fmt: skip
    _event(b, pool, 15_000, free, 256, 64, 1512)
    _event(b, pool, 31_000, free, 512, 2**62 + 8, 1000)
    _event(b, pool, 32_000, alloc, 64, 128, 1064, requested_bytes=60)
    _event(b, pool, 33_999, alloc, 32, -4096, 1096, requested_bytes=40, data_type=3,
           shape="[2,4]")  # fmt: skip
    return b.bytes()


def _details(execs: StepExecs) -> list[MemoryDetail]:
    """The step's kept records (references into the model's memory columns), read."""
    assert all(type(r) is MemoryRef for r in execs.raw_stats)
    return [r.detail() for r in execs.raw_stats]  # type: ignore[attr-defined]


def _records(model: ProfileModel, step: int) -> dict[str, Any]:
    execs = model.steps[step]
    return {model.names[n]: r for n, r in zip(execs.raw_node, _details(execs), strict=True)}


#: What the events of :func:`_space` say, worked out by hand: times are floored
#: microseconds, a record spans its op, allocators by first event, events by time,
#: outputs by time, slot = rank among the op's shaped allocations.
EXPECTED = {
    "a/MatMul": MemoryDetail(
        US + 1010, US + 1020,
        (
            AllocatorUse(GPU, 768, 768, 0, 1768,
                         ((US + 1011, 256), (US + 1013, 512), (US + 1015, -256),
                          (US + 1031, -512))),
            AllocatorUse("cpu", 4, 4, 4, 4, ((US + 1012, 4),)),
        ),
        (
            OutputTensor(0, GPU, 0, 250, 256, 64, 1, (8, 8)),
            OutputTensor(1, "cpu", 0, 4, 4, 96, 1, ()),
            OutputTensor(2, GPU, 0, 512, 512, 2**62 + 8, 14, (16, 16)),
        ),
    ),
    "b/Relu": MemoryDetail(
        US + 1030, US + 1040,
        (AllocatorUse(GPU, 96, 96, 96, 1096, ((US + 1032, 64), (US + 1033, 32))),),
        (OutputTensor(0, GPU, 0, 40, 32, 2**64 - 4096, 3, (2, 4)),),
    ),
}  # fmt: skip


def test_hand_made_records_hold_what_the_events_say() -> None:
    model = model_from_bytes(_space(), "hand.xplane.pb")
    got = _records(model, 0)
    assert got == EXPECTED
    for detail in got.values():
        assert type(detail) is MemoryDetail
        assert all(type(use) is AllocatorUse for use in detail.allocators)
        assert all(type(t) is OutputTensor for t in detail.tensors)
        assert all(type(e) is tuple for use in detail.allocators for e in use.events)


def test_a_scalar_output_keeps_its_empty_shape_in_the_memory_profile() -> None:
    """Serialized, a scalar's shape had no dims and read back as no shape; the
    typed record keeps ``()``, which the memory profile shows as ``[]``."""
    model = model_from_bytes(_space(), "hand.xplane.pb")
    assert _records(model, 0)["a/MatMul"].tensors[1].shape == ()
    (step,) = memory_profile(model).steps
    cpu = next(a for a in step.allocators if a.allocator == "cpu")
    (op,) = cpu.by_op
    assert [(t.shape, t.dtype, t.bytes) for t in op.tensors] == [([], "float32", 4)]


def _step_events(model: ProfileModel) -> Counter[tuple[str, int]]:
    return Counter(
        (use.allocator, nbytes)
        for execs in model.steps.values()
        for detail in _details(execs)
        for use in detail.allocators
        for _, nbytes in use.events
    )


def _xspace_events(data: bytes) -> tuple[Counter[tuple[str, int]], int]:
    """(allocator, signed bytes) of every allocator event, read with protobuf, and
    how many there are."""
    space = pb.XSpace.FromString(data)
    out: Counter[tuple[str, int]] = Counter()
    for plane in space.planes:
        names = {k: m.name for k, m in plane.stat_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                kind = plane.event_metadata[event.metadata_id].name
                if kind not in ("MemoryAllocation", "MemoryDeallocation"):
                    continue
                stats = {names[s.metadata_id]: s for s in event.stats}
                allocator = stats["allocator_name"]
                name = allocator.str_value
                if allocator.WhichOneof("value") == "ref_value":
                    name = plane.stat_metadata[allocator.ref_value].name
                size = stats["allocation_bytes"]
                nbytes = size.int64_value or size.uint64_value
                out[(name, nbytes if kind == "MemoryAllocation" else -nbytes)] += 1
    return out, sum(out.values())


@pytest.mark.parametrize("case", jax_cases())
def test_sample_records_hold_every_allocator_event_with_consistent_sums(case: str) -> None:
    data = jax_file(case).read_bytes()
    model = model_from_bytes(data, "sample.xplane.pb")
    theirs, count = _xspace_events(data)
    assert count and _step_events(model) == theirs  # every event falls in a step
    for execs in model.steps.values():
        assert execs.raw_stats and len(execs.raw_stats) == len(execs.raw_node)
        for detail in _details(execs):
            assert type(detail) is MemoryDetail
            assert detail.start_micros <= detail.end_micros
            for use in detail.allocators:
                times = [t for t, _ in use.events]
                assert times == sorted(times)
                running, peak = 0, 0
                for _, nbytes in use.events:
                    running += nbytes
                    peak = max(peak, running)
                assert use.total_bytes == sum(b for _, b in use.events if b > 0)
                assert (use.peak_bytes, use.live_bytes) == (peak, max(running, 0))
                assert use.bytes_in_use >= 0


def test_allocator_columns_take_typed_records_as_they_are_and_decode_bytes() -> None:
    detail = EXPECTED["a/MatMul"]
    ns = pb.NodeExecStats(all_start_micros=7, op_end_rel_micros=3)
    mem = ns.memory.add(allocator_name="cpu", total_bytes=8, peak_bytes=8)
    mem.allocation_records.add(alloc_micros=8, alloc_bytes=8)
    execs = StepExecs()
    execs.add_raw([0, 1], [detail, ns.SerializeToString()])
    cols = execs.allocator_columns(memory_detail)
    assert cols.names == [GPU, "cpu"]
    assert cols.u_node == [0, 0, 1] and cols.u_start == [US + 1010, US + 1010, 7]
    assert cols.a_bytes == [256, 512, -256, -512, 4, 8]
    assert cols.o_shape == [(8, 8), (), (16, 16)]
    wrong = StepExecs()
    wrong.add_raw([0], ["not a record"])
    with pytest.raises(TypeError, match="not a memory record"):
        wrong.allocator_columns(memory_detail)


def test_saved_profile_of_an_xspace_model_writes_and_reads_back(tmp_path: Path) -> None:
    prof = Profiler.load(_space())
    model = prof.model
    assert any(type(r) is MemoryRef for r in model.steps[0].raw_stats)
    data = prof.serialize_to_string()
    saved = tmp_path / "profile_0"
    saved.write_bytes(data)
    back = Profiler.load(str(saved)).model
    assert back.sorted_steps() == model.sorted_steps() and back.names == model.names
    assert back.steps[0].raw_stats == []  # a ProfileProto keeps no allocator records
    for name in EXPECTED:
        nid = model.index[name]
        assert back.stats(0).peak_bytes[back.index[name]] == model.stats(0).peak_bytes[nid] > 0
    assert Profiler.load(data).serialize_to_string() == data


def test_kept_records_pickle_and_survive_a_cluster_merge() -> None:
    model = Profiler.load(_space()).model
    assert pickle.loads(pickle.dumps(model.steps[0].raw_stats)) == model.steps[0].raw_stats
    merged = tfprof_lite.merge([Profiler.load(_space()), Profiler.load(_space())],
                               allow_same_task=True).model  # fmt: skip
    details = [r for execs in merged.steps.values() for r in _details(execs)]
    assert sorted(details) == sorted([*EXPECTED.values(), *EXPECTED.values()])
    (step,) = memory_profile(merged).steps
    gpu = next(a for a in step.allocators if a.allocator == GPU)
    assert gpu.allocations == 2 * 4 and gpu.frees == 2 * 2
