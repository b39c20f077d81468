"""The model's typed step records (:mod:`tfprof_lite.model.step_records`) and
their block (:mod:`tfprof_lite.model.record_block`), against the RunMetadata a
TF1 GPU trace of the same steps holds, written out by hand: device strings,
timeline labels and microseconds as TensorFlow's tracer gives them."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.test_step_batch import snapshot
from tfprof_lite.base.device_names import STREAM, gpu_ordinal, tracer_parts
from tfprof_lite.model import step_batch
from tfprof_lite.model.devices import (
    DEVICE_ACCELERATOR,
    DEVICE_CANONICAL,
    classify_device,
    is_tracer_device,
)
from tfprof_lite.model.memory_records import MemoryRecords, MemoryRef
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.record_block import UNKNOWN, Block
from tfprof_lite.model.records import AllocatorUse, MemoryDetail, NodeSpec, OutputTensor
from tfprof_lite.model.step_records import (
    LANE_ALL_STREAMS,
    LANE_COPIES,
    LANE_COPY,
    LANE_GPU,
    LANE_GPU_ACTIVITY,
    LANE_HOST,
    LANE_STREAM,
    ROLE_ACTIVITY,
    ROLE_COPY,
    ROLE_KERNEL,
    ROLE_OP,
    Lane,
    StepRecords,
)
from tfprof_lite.model.step_spans import StepSpan
from tfprof_lite.proto.steps import StepColumns

ORIGIN_NS = 1_700_000_000_123_456_789
HOST = "/job:localhost/replica:0/task:0/device:CPU:0"
LANES = [Lane(LANE_HOST), Lane(LANE_STREAM, 1, 7), Lane(LANE_ALL_STREAMS, 1),
         Lane(LANE_COPY, 1, 9, "MemcpyHtoD"), Lane(LANE_COPIES, 1),
         Lane(LANE_GPU_ACTIVITY, 1)]  # fmt: skip
TEXTS = ["a/MatMul", "b/Relu", "gemm_kernel", "regs:32 grid:4,1,1 block:128,1,1", "MemcpyHtoD",
         "bytes:4096"]  # fmt: skip


def test_each_lane_is_written_as_tensorflows_tracer_writes_its_device() -> None:
    written = [lane.device() for lane in LANES]
    assert written == [HOST, "/device:GPU:1/stream:7", "/device:GPU:1/stream:all",
                       "/device:GPU:1/stream:9<MemcpyHtoD>", "/device:GPU:1/memcpy",
                       "/device:GPU:1/stream:"]  # fmt: skip
    # The one device grammar reads them back: GPU ordinal, stream and copy kind.
    for device in written[1:]:
        assert gpu_ordinal(device) == 1 and is_tracer_device(device.lower())
        assert tracer_parts(device) is not None
    match = STREAM.search(written[3])
    assert match is not None and (match.group(1), match.group(2)) == ("9", "<MemcpyHtoD>")
    assert classify_device(written[0].lower()) == DEVICE_CANONICAL
    assert classify_device(written[2].lower()) == DEVICE_ACCELERATOR


def _records() -> StepRecords:
    """Three steps: an op and a kernel (its two lanes); nothing; an op, a copy
    without details, a copy with details, other GPU activity."""
    ps = 1_000_000  # 1 µs
    rows = [  # (step, lane, role, node, kernel, details, start, end)
        (0, 0, ROLE_OP, 0, -1, -1, 10 * ps, 30 * ps),
        (0, 1, ROLE_KERNEL, 0, 2, 3, 12 * ps + 1500, 20 * ps + 2500),
        (0, 2, ROLE_KERNEL, 0, 2, 3, 12 * ps + 1500, 20 * ps + 2500),
        (2, 0, ROLE_OP, 1, -1, -1, 50 * ps, 60 * ps),
        (2, 3, ROLE_COPY, 1, 4, -1, 52 * ps, 53 * ps),
        (2, 3, ROLE_COPY, 1, 4, 5, 54 * ps, 58 * ps + 999),
        (2, 4, ROLE_COPY, 1, 4, -1, 52 * ps, 53 * ps),
        (2, 4, ROLE_COPY, 1, 4, 5, 54 * ps, 58 * ps + 999),
        (2, 5, ROLE_ACTIVITY, 1, -1, -1, 59 * ps, 59 * ps),
    ]
    col = list(zip(*rows, strict=True))
    return StepRecords(
        numbers=[4, 5, 6], bounds=np.asarray([0, 3, 3, 9]), lanes=LANES, texts=list(TEXTS),
        lane=np.asarray(col[1], np.int32), role=np.asarray(col[2], np.int8),
        node=np.asarray(col[3], np.int32), kernel=np.asarray(col[4], np.int32),
        details=np.asarray(col[5], np.int32), origin_ns=ORIGIN_NS,
        start_ps=np.asarray(col[6], np.int64), end_ps=np.asarray(col[7], np.int64),
        spans=[StepSpan("train", 0, 1), StepSpan("train", 2, 3), None],
    )  # fmt: skip


def _us(ps: int) -> int:
    return (ORIGIN_NS * 1000 + ps) // 1_000_000


def _by_hand() -> list[StepColumns]:
    """The RunMetadata step stats of the same steps (TF1's GPU tracer)."""
    ps = 1_000_000
    gpu = "/device:GPU:1"
    kernel_label = "gemm_kernel regs:32 grid:4,1,1 block:128,1,1"
    first = StepColumns(
        devices=[HOST, f"{gpu}/stream:7", f"{gpu}/stream:all"], dev=np.asarray([0, 1, 2], np.int32),
        name=["a/MatMul"] * 3, label=["a/MatMul", kernel_label, kernel_label],
        start=np.asarray([_us(10 * ps)] + [_us(12 * ps + 1500)] * 2),
        rel=np.asarray([_us(30 * ps) - _us(10 * ps)]
                       + [_us(20 * ps + 2500) - _us(12 * ps + 1500)] * 2),
        has_step_stats=True,
    )  # fmt: skip
    starts = [50 * ps, 52 * ps, 54 * ps, 52 * ps, 54 * ps, 59 * ps]
    ends = [60 * ps, 53 * ps, 58 * ps + 999, 53 * ps, 58 * ps + 999, 59 * ps]
    third = StepColumns(
        devices=[HOST, f"{gpu}/stream:9<MemcpyHtoD>", f"{gpu}/memcpy", f"{gpu}/stream:"],
        dev=np.asarray([0, 1, 1, 2, 2, 3], np.int32), name=["b/Relu"] * 6,
        label=["b/Relu", "MemcpyHtoD", "MemcpyHtoD bytes:4096", "MemcpyHtoD",
               "MemcpyHtoD bytes:4096", "b/Relu"],
        start=np.asarray([_us(s) for s in starts]),
        rel=np.asarray([_us(e) - _us(s) for s, e in zip(starts, ends, strict=True)]),
        has_step_stats=True,
    )  # fmt: skip
    for cols in (first, third):
        zeros = np.zeros(len(cols), np.int64)
        cols.total, cols.peak, cols.live, cols.gpu_in_use = zeros, zeros, zeros, zeros
        cols.temp, cols.persist = zeros, zeros
        cols.gpu_allocs = np.zeros(len(cols), np.int32)
    return [first, third]


def test_the_block_of_records_is_the_block_of_their_runmetadata() -> None:
    records = step_batch._with_rows(_records())
    got = Block.of_records(records)
    hand = _by_hand()
    want = Block.of_columns(hand)
    assert got.devices == want.devices and got.names == want.names
    assert got.tables == want.tables
    assert got.step.tolist() == want.step.tolist() and got.code.tolist() == want.code.tolist()
    for name in ("dev", "start", "rel", "total", "peak", "live", "gpu_allocs", "temp", "persist"):
        assert getattr(got.cols, name).tolist() == getattr(want.cols, name).tolist(), name
    assert (got.cols.name, got.cols.label) == (want.cols.name, want.cols.label)
    # The exact durations of the tracer rows, which the RunMetadata has not.
    assert got.exact.tolist() == [8001, 8001, 1000, 4000, 1000, 4000, 0]
    assert (want.exact == UNKNOWN).all()
    for i, cols in enumerate(hand):
        again = got.step_columns(i)
        assert (again.devices, again.name, again.label) == (cols.devices, cols.name, cols.label)
        assert again.dev.tolist() == cols.dev.tolist()
        assert again.start.tolist() == cols.start.tolist()


@pytest.mark.parametrize("rows", [None, 1])
def test_records_make_the_model_that_their_runmetadata_makes(rows: int | None) -> None:
    nodes = [NodeSpec(name="a/MatMul", op="MatMul"), NodeSpec(name="b/Relu", op="Relu")]
    fast, slow = ProfileModel(), ProfileModel()
    fast.add_graph(nodes)
    slow.add_graph(nodes)
    records = _records()
    step_batch.add_records(fast, records, rows)
    step_batch.add_spans(fast, records.numbers, records.spans)
    exact = [[8001, 8001], [1000, 4000, 1000, 4000, 0]]
    for number, cols, ns in zip([4, 6], _by_hand(), exact, strict=True):
        slow.add_step(number, cols)
        slow.steps[number].kernels.dur_ns = ns
    step_batch.add_spans(slow, records.numbers, records.spans)
    assert snapshot(fast) == snapshot(slow)
    assert fast.sorted_steps() == [4, 5, 6] and not len(fast.steps[5].kernels)


def test_steps_the_model_holds_already_are_added_one_by_one() -> None:
    model = ProfileModel()
    model.add_graph([NodeSpec(name="a/MatMul", op="MatMul"), NodeSpec(name="b/Relu", op="Relu")])
    step_batch.add_records(model, _records())
    step_batch.add_records(model, _records())  # the same steps again: as add_step twice
    twice = ProfileModel()
    twice.add_graph([NodeSpec(name="a/MatMul", op="MatMul"), NodeSpec(name="b/Relu", op="Relu")])
    for _ in range(2):
        for number, cols in zip([4, 6], _by_hand(), strict=True):
            before = len(twice.steps[number].kernels) if number in twice.steps else 0
            twice.add_step(number, cols)
            kernels = twice.steps[number].kernels
            kernels.dur_ns[before:] = [8001, 8001] if number == 4 else [1000, 4000, 1000, 4000, 0]
    assert snapshot(model) == snapshot(twice)
    assert len(model.steps[4].kernels) == 4


# ------------------------------------------------------------------ memory records

GPU_LANE = len(LANES)  # Lane(LANE_GPU, 1), added by the memory records
NO_OP = len(TEXTS)  # "GPU_1_bfc (no op)", added by the memory records


def _with_memory() -> StepRecords:
    """Steps 4 and 6 of :func:`_records` (step 5, empty, dropped), with memory:
    step 4's op ``a/MatMul`` (its host record's place), the allocator's no-op
    node on the GPU (a record of its own); step 6's ``b/Relu`` on the host."""
    ps = 1_000_000
    records = step_batch._with_rows(_records())
    records.lanes = [*LANES, Lane(LANE_GPU, 1)]
    records.texts = [*TEXTS, "GPU_1_bfc (no op)"]
    records.memory = MemoryRecords(
        step=np.asarray([0, 0, 1]), node=np.asarray([0, NO_OP, 1], np.int32),
        lane=np.asarray([0, GPU_LANE, 0], np.int32),
        first_ps=np.asarray([11 * ps, 25 * ps, 51 * ps + 10]),
        total=np.asarray([256, 0, 4]), peak=np.asarray([256, 0, 4]), live=np.asarray([0, 0, 4]),
        gpu_allocs=np.asarray([1, 1, 0], np.int32), gpu_in_use=np.asarray([1000, 0, 0]),
        use_at=np.asarray([0, 1, 2, 3]), u_allocator=np.asarray([0, 0, 1], np.int32),
        u_total=np.asarray([256, 0, 4]), u_peak=np.asarray([256, 0, 4]),
        u_live=np.asarray([0, 0, 4]), u_in_use=np.asarray([1000, 0, 4]),
        event_at=np.asarray([0, 2, 3, 4]), e_micros=np.asarray([_us(11 * ps), _us(15 * ps),
        _us(25 * ps), _us(51 * ps)]), e_bytes=np.asarray([256, -256, -128, 4]),
        out_at=np.asarray([0, 1, 1, 2]), o_slot=np.asarray([0, 0], np.int32),
        o_allocator=np.asarray([0, 1], np.int32), o_requested=np.asarray([200, 4]),
        o_allocated=np.asarray([256, 4]), o_ptr=np.asarray([64, 96], np.uint64),
        o_dtype=np.asarray([1, 1], np.int32), o_shape=np.asarray([0, 1], np.int32),
        allocators=["GPU_1_bfc", "cpu"], shapes=[(8, 8), ()],
    )  # fmt: skip
    return records


def _memory_by_hand() -> list[StepColumns]:
    """The RunMetadata of the same steps, memory entries and all (the memory
    records typed as the memory profile reads them)."""
    ps = 1_000_000
    first, third = _by_hand()
    op_start, op_end = _us(10 * ps), _us(30 * ps)
    gpu_use = AllocatorUse("GPU_1_bfc", 256, 256, 0, 1000,
                           ((_us(11 * ps), 256), (_us(15 * ps), -256)))  # fmt: skip
    tensor = OutputTensor(0, "GPU_1_bfc", 0, 200, 256, 64, 1, (8, 8))
    no_op = AllocatorUse("GPU_1_bfc", 0, 0, 0, 0, ((_us(25 * ps), -128),))
    step4 = StepColumns(
        devices=[*first.devices, "/job:localhost/replica:0/task:0/device:GPU:1"],
        dev=np.asarray([1, 2, 0, 3], np.int32), name=["a/MatMul"] * 3 + ["GPU_1_bfc (no op)"],
        label=first.label[1:] + ["a/MatMul", ""],
        start=np.asarray([*first.start[1:].tolist(), op_start, _us(25 * ps)]),
        rel=np.asarray([*first.rel[1:].tolist(), op_end - op_start, 0]),
        total=np.asarray([0, 0, 256, 0]), peak=np.asarray([0, 0, 256, 0]), live=np.zeros(4, int),
        gpu_allocs=np.asarray([0, 0, 1, 1], np.int32), gpu_in_use=np.asarray([0, 0, 1000, 0]),
        temp=np.zeros(4, int), persist=np.zeros(4, int),
        o_row=np.asarray([2], np.int32), o_slot=np.asarray([0], np.int32),
        o_bytes=np.asarray([256]), o_ptr=np.asarray([64], np.uint64),
        a_row=np.asarray([2, 2, 3], np.int32), a_micros=np.asarray([_us(11 * ps), _us(15 * ps),
        _us(25 * ps)]), a_bytes=np.asarray([256, -256, -128]),
        r_row=np.asarray([2, 3], np.int32),
        raw=[MemoryDetail(op_start, op_end, (gpu_use,), (tensor,)),
             MemoryDetail(_us(25 * ps), _us(25 * ps), (no_op,), ())],
        has_step_stats=True, untimed=np.asarray([False, False, False, True]),
    )  # fmt: skip
    relu_start, relu_end = int(third.start[0]), int(third.start[0] + third.rel[0])
    cpu = AllocatorUse("cpu", 4, 4, 4, 4, ((_us(51 * ps), 4),))
    step6 = StepColumns(
        devices=third.devices, dev=np.asarray([1, 1, 2, 2, 3, 0], np.int32),
        name=third.name, label=third.label[1:] + ["b/Relu"],
        start=np.asarray([*third.start[1:].tolist(), relu_start]),
        rel=np.asarray([*third.rel[1:].tolist(), relu_end - relu_start]),
        total=np.asarray([0] * 5 + [4]), peak=np.asarray([0] * 5 + [4]),
        live=np.asarray([0] * 5 + [4]), gpu_allocs=np.zeros(6, np.int32),
        gpu_in_use=np.zeros(6, int), temp=np.zeros(6, int), persist=np.zeros(6, int),
        o_row=np.asarray([5], np.int32), o_slot=np.asarray([0], np.int32),
        o_bytes=np.asarray([4]), o_ptr=np.asarray([96], np.uint64),
        r_row=np.asarray([5], np.int32),
        raw=[MemoryDetail(relu_start, relu_end, (cpu,), (OutputTensor(0, "cpu", 0, 4, 4, 96, 1,
             ()),))],
        has_step_stats=True, untimed=np.zeros(6, dtype=bool),
    )  # fmt: skip
    return [step4, step6]


def test_memory_records_are_placed_as_a_runmetadata_lists_them() -> None:
    got = Block.of_records(_with_memory())
    hand = _memory_by_hand()
    for i, cols in enumerate(hand):
        step = got.step_columns(i)
        assert (step.devices, step.name, step.label) == (cols.devices, cols.name, cols.label)
        for name in ("dev", "start", "rel", "total", "peak", "live", "gpu_allocs", "gpu_in_use",
                     "o_row", "o_slot", "o_bytes", "o_ptr", "a_row", "a_micros", "a_bytes",
                     "r_row", "untimed"):  # fmt: skip
            assert getattr(step, name).tolist() == getattr(cols, name).tolist(), (i, name)
        assert all(isinstance(r, MemoryRef) for r in step.raw)
        assert step.raw == cols.raw


def test_memory_records_make_the_model_that_their_runmetadata_makes() -> None:
    nodes = [NodeSpec(name="a/MatMul", op="MatMul"), NodeSpec(name="b/Relu", op="Relu"),
             NodeSpec(name="GPU_1_bfc (no op)", op="AllocatorEvents")]  # fmt: skip
    fast, slow = ProfileModel(), ProfileModel()
    fast.add_graph(nodes)
    slow.add_graph(nodes)
    step_batch.add_records(fast, _with_memory())
    for number, cols, ns in zip([4, 6], _memory_by_hand(), [[8001, 8001],
                                [1000, 4000, 1000, 4000, 0]], strict=True):  # fmt: skip
        slow.add_step(number, cols)
        slow.steps[number].kernels.dur_ns = ns
    assert snapshot(fast) == snapshot(slow)
    stats = fast.stats(4)
    nid = fast.index["GPU_1_bfc (no op)"]  # a record of memory only: no time, no run
    assert (stats.exec_micros[nid], stats.run_count[nid]) == (0, 0)
    assert stats.requested_bytes[fast.index["a/MatMul"]] == 256


def test_a_step_with_memory_records_only_is_kept() -> None:
    records = _with_memory()
    records.bounds = np.asarray([0, 3, 3])  # step 6 without records of its own
    for name in ("lane", "role", "node", "kernel", "details", "start_ps", "end_ps"):
        setattr(records, name, getattr(records, name)[:3])
    model = ProfileModel()
    model.add_graph([NodeSpec(name="a/MatMul", op="MatMul"), NodeSpec(name="b/Relu", op="Relu")])
    step_batch.add_records(model, records)
    assert model.sorted_steps() == [4, 6]
    execs = model.steps[6]
    assert execs.device_names == [HOST.lower()] and execs.raw_node == [model.index["b/Relu"]]
