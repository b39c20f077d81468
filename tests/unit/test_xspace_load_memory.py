"""The memory-saving paths of loading an XSpace give what the plain paths give:
a released conversion (event stats dropped once read, memory records joined
when the model takes each step) against a kept one, on the real JAX samples and
hand-made allocator events; the chunked and table-based helpers against
straightforward versions of themselves."""

from __future__ import annotations

import random
import re
from typing import Any

import numpy as np
import pytest

from tests import xspace_files
from tests.xspace_files import SpaceBuilder
from tfprof_lite.base.heap import give_back_freed
from tfprof_lite.formats.xspace.read import calls as xspace_calls
from tfprof_lite.formats.xspace.read import code as xspace_code
from tfprof_lite.formats.xspace.read import conversion as xspace
from tfprof_lite.formats.xspace.read.devices import bind_gpu_devices
from tfprof_lite.formats.xspace.read.events import EventCodes, distinct_codes, event_table
from tfprof_lite.formats.xspace.read.load import model_from_bytes
from tfprof_lite.formats.xspace.wire import decode as xplane
from tfprof_lite.model.execs import StepExecs
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.xla_ops import KernelEvents, _groups
from tfprof_lite.proto.steps import StepColumns

GPU = "GPU_0_bfc"
_COLUMNS = ("start", "rel", "total", "peak", "live", "gpu_allocs", "gpu_in_use", "dev", "o_row",
            "o_slot", "o_bytes", "o_ptr", "a_row", "a_micros", "a_bytes", "r_row")  # fmt: skip


def _memory_space() -> bytes:
    """Two steps of ops with allocations and frees on a GPU and a host allocator,
    outputs with shapes, an allocation freed in the next step and one never."""
    b = SpaceBuilder()
    line = b.line(b.host, 1, "python")
    pool = b.line(b.host, 2, "tf_Compute/2")
    for step in range(2):
        t0 = 1_000_000 + step * 200_000
        b.event(b.host, line, "train", t0, 150_000, step_num=step, _r=1)
        b.event(b.host, pool, "a/MatMul:MatMul", t0 + 10_000, 10_000, "MatMul")
        b.event(b.host, pool, "b/Relu:Relu", t0 + 30_000, 10_000, "Relu")
        for k, (when, kind, size, addr, alloc) in enumerate(
            [
                (11_000, "MemoryAllocation", 256, 64, GPU),
                (12_000, "MemoryAllocation", 32, 96, "cpu"),
                (20_000, "MemoryDeallocation", 256, 64, GPU),
                (31_000, "MemoryAllocation", 128, 64, GPU),
                (35_000, "MemoryDeallocation", 32, 96, "cpu"),
                (120_000, "MemoryAllocation", 8, 200 + step, GPU),
            ]
        ):
            stats: dict[str, Any] = dict(allocator_name=alloc, allocation_bytes=size, addr=addr,
                                         bytes_allocated=1000 + k, bytes_reserved=step)  # fmt: skip
            if kind == "MemoryAllocation":
                stats.update(requested_bytes=size - 1, data_type=1, shape=f"[{size // 4},4]")
            b.event(b.host, pool, kind, t0 + when, 0, **stats)
    return bytes(b.bytes())


def _inputs() -> list[tuple[str, bytes]]:
    out = [("hand", _memory_space())]
    for case in xspace_files.jax_cases():
        out.append((case, xspace_files.jax_file(case).read_bytes()))
    return out


def _same_columns(a: StepColumns, b: StepColumns) -> None:
    assert (a.devices, a.name, a.label, a.raw) == (b.devices, b.name, b.label, b.raw)
    assert a.untimed.tolist() == b.untimed.tolist()
    for name in _COLUMNS:
        assert getattr(a, name).tolist() == getattr(b, name).tolist(), name


@pytest.mark.parametrize("case", ["hand", *xspace_files.jax_cases()])
def test_a_released_conversion_plans_the_same_steps(case: str) -> None:
    raw = dict(_inputs())[case]
    kept = xspace.plan_steps(xplane.decode_xspace(raw))
    released = xspace.plan_steps(xplane.decode_xspace(raw), release=True)
    assert released.records.memory is not None and len(released.records.memory)
    assert (kept.numbers, kept.nodes, kept.source) == (released.numbers, released.nodes,
                                                       released.source)  # fmt: skip
    for a, b in zip(kept.columns, released.columns, strict=True):
        _same_columns(a, b)
    for a, b in zip(kept.tracer_ns, released.tracer_ns, strict=True):
        assert a.tolist() == b.tolist()


@pytest.mark.parametrize("case", ["hand", *xspace_files.jax_cases()])
def test_steps_taken_one_at_a_time_give_the_model_the_same_memory(case: str) -> None:
    raw = dict(_inputs())[case]
    kept = ProfileModel()
    xspace.convert(xplane.decode_xspace(raw), kept)
    released = model_from_bytes(raw, "file")
    assert released.sorted_steps() == kept.sorted_steps()
    assert released.canonical_device == kept.canonical_device
    for step in kept.sorted_steps():
        a, b = kept.steps[step], released.steps[step]
        assert a.raw_stats == b.raw_stats and a.raw_node == b.raw_node
        for group in ("mem", "outs", "allocs", "times"):
            for name in getattr(a, group)._dtypes:
                assert getattr(a, group)[name].tolist() == getattr(b, group)[name].tolist()
        assert a.kernels.dur_ns == b.kernels.dur_ns
        assert all(type(ns) is int for ns in b.kernels.dur_ns)


def test_memory_records_take_the_place_of_their_ops_records() -> None:
    raw = _memory_space()
    plan = xspace.plan_steps(xplane.decode_xspace(raw))
    memory = plan.records.memory
    assert memory is not None and sorted(set(memory.step.tolist())) == [0, 1]
    joined = plan.columns
    plan.records.memory = None
    base = plan.columns
    for step in (0, 1):
        mine = memory.node[memory.step == step]
        names = {plan.records.texts[n] for n in mine.tolist()}
        # Each memory record took the place of its op's host record (same times);
        # the others are records of their own that add no time.
        took = names & set(base[step].name)
        assert took and len(joined[step]) == len(base[step]) + len(names - took)
        assert int(joined[step].untimed.sum()) == len(names - took)
        for name in took:
            at, was = joined[step].name.index(name), base[step].name.index(name)
            assert joined[step].start[at] == base[step].start[was]
            assert joined[step].rel[at] == base[step].rel[was]
            assert joined[step].total[at] > 0 and base[step].total[was] == 0
    # The hand-made steps hold what the events say: 256 then 128 bytes on the GPU.
    names = joined[0].name
    assert names.count("a/MatMul") == 1 and names.count("b/Relu") == 1


def test_event_codes_read_like_their_column() -> None:
    rng = random.Random(5)
    for _ in range(50):
        n = rng.randint(0, 40)
        owners = sorted(rng.choice(range(n)) for _ in range(rng.randint(0, n))) if n else []
        values = [rng.randint(0, 30) for _ in owners]
        dense = np.full(n, -1, dtype=np.int16)
        dense[owners] = values  # an event named twice keeps its last code
        codes = EventCodes(n, np.asarray(owners, np.int32), np.asarray(values, np.int16))
        events = np.asarray([rng.randrange(n) for _ in range(20)] if n else [], np.int64)
        assert codes[events].tolist() == dense[events].tolist()
        assert codes.tolist() == dense.tolist() and len(codes) == n
        assert codes.dtype == np.int16


def test_distinct_codes_equal_numpy_unique() -> None:
    rng = np.random.default_rng(9)
    for size in (1, 5, 300):
        values = rng.integers(-1, size, size=1000).astype(np.int32)
        used, inverse = distinct_codes(values, size)
        want_used, want_inverse = np.unique(values, return_inverse=True)
        assert used.tolist() == want_used.tolist()
        assert inverse.tolist() == want_inverse.reshape(-1).tolist()


def test_xla_groups_equal_sorting_a_key_matrix() -> None:
    rng = np.random.default_rng(2)
    n = 500
    texts = ["", "m", "op", "m", "k"]
    cols = KernelEvents(
        name=["k"] * n, hlo_op=rng.integers(-1, 5, n), hlo_module=rng.integers(-1, 5, n),
        texts=texts, program_id=rng.integers(0, 3, n), has_program=rng.random(n) < 0.7,
        execution=rng.integers(0, 4, n), has_execution=rng.random(n) < 0.5,
        start_ps=rng.integers(0, 10**6, n), is_kernel=rng.random(n) < 0.9,
        device=rng.integers(0, 2, n),
    )  # fmt: skip
    got = [(members.tolist(), key) for members, key in _groups(cols)]
    canon = {"": -1, "m": 1, "op": 2, "k": 4}
    keys = [
        (int(hp), int(p) if hp else 0, canon[texts[m]] if m >= 0 else -1,
         canon[texts[o]] if o >= 0 else -1, int(he), int(e) if he else 0, int(d))
        for hp, p, m, o, he, e, d in zip(cols.has_program, cols.program_id, cols.hlo_module,
                                         cols.hlo_op, cols.has_execution, cols.execution,
                                         cols.device)
    ]  # fmt: skip
    want: dict[tuple[int, ...], list[int]] = {}
    for i in sorted(range(n), key=lambda i: keys[i]):
        want.setdefault(keys[i], []).append(i)
    assert got == [(members, key) for key, members in want.items()]


@pytest.mark.parametrize("case", xspace_files.jax_cases())
def test_chunked_lookups_give_the_same_plan(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = xspace_files.jax_file(case).read_bytes()
    whole = xspace.plan_steps(xplane.decode_xspace(raw))
    monkeypatch.setattr(xspace_calls, "_CHUNK", 3)
    monkeypatch.setattr(xspace_code, "_QUERIES", 5)
    chunked = xspace.plan_steps(xplane.decode_xspace(raw))
    assert chunked.code.mapped == whole.code.mapped and chunked.code.mapped
    assert chunked.code.from_python == whole.code.from_python
    assert chunked.code.programs == whole.code.programs
    assert [c.name for c in chunked.columns] == [c.name for c in whole.columns]


def test_outermost_reads_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    b = SpaceBuilder()
    line = b.line(b.host, 1, "python")
    for start, dur in [(0, 100), (10, 5), (50, 80), (150, 10), (150, 30), (200, 0), (200, 5)]:
        b.event(b.host, line, "x", 1_000 + start, dur)
    table = event_table(xplane.decode_xspace(b.bytes()))
    rows = table.host_events()
    whole = xspace_calls.outermost(table, rows.tolist())
    monkeypatch.setattr(xspace_calls, "_CHUNK", 2)
    assert xspace_calls.outermost(table, rows) == whole
    assert [int(table.start[r]) - int(table.start[whole[0]]) for r in whole] == [
        0,
        150 * 1000,
        200 * 1000,
    ]


def _devices_the_old_way(model: ProfileModel) -> list[str]:
    """Canonical devices as binding from every step's cached ``devices`` gave them."""
    canonical = list(model.canonical_device)
    for number in model.sorted_steps():
        for nid, devices in model.steps[number].devices.items():
            if canonical[nid]:
                continue
            for device in devices:
                found = re.match(r"/device:gpu:(\d+)/", device)
                if found:
                    canonical[nid] = f"/job:localhost/replica:0/task:0/device:gpu:{found.group(1)}"
                    break
    return canonical


@pytest.mark.parametrize("case", xspace_files.jax_cases())
def test_gpu_devices_are_bound_without_caching_every_step_devices(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = xspace_files.jax_file(case).read_bytes()
    plan = xspace.plan_steps(xplane.decode_xspace(raw))
    model = ProfileModel()
    model.add_graph(plan.nodes)
    for number, cols in zip(plan.numbers, plan.columns, strict=True):
        model.add_step(number, cols)
    want = _devices_the_old_way(model)

    def no_devices_cache(self: StepExecs) -> None:
        raise AssertionError("binding built a step's devices cache")

    monkeypatch.setattr(StepExecs, "devices", property(no_devices_cache))
    bind_gpu_devices(model)
    assert model.canonical_device == want
    assert any(d.endswith("gpu:0") for d in want)


def test_freed_memory_is_given_back_without_error() -> None:
    give_back_freed()
    give_back_freed()


def test_step_times_count_devices_without_the_devices_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tfprof_lite.analysis.steptime import step_times

    model = model_from_bytes(xspace_files.jax_file(xspace_files.jax_cases()[0]).read_bytes(), "f")
    want = [
        len({d for devs in model.steps[n].devices.values() for d in devs})
        for n in model.sorted_steps()
    ]

    def no_devices_cache(self: StepExecs) -> None:
        raise AssertionError("step times built a step's devices cache")

    monkeypatch.setattr(StepExecs, "devices", property(no_devices_cache))
    got = [s.devices for s in step_times(model).steps]
    assert got == want and min(got) > 1


@pytest.mark.parametrize("steps", [3, 40, 200])  # 200: more (step, device) pairs than rows
def test_step_records_are_grouped_as_sorting_by_three_keys_does(steps: int) -> None:
    from tfprof_lite.formats.xspace.read.rows import _grouped, _Part
    from tfprof_lite.model.step_records import LANE_STREAM, Lane

    rng = np.random.default_rng(steps)
    sizes = [50, 7, 0, 30]
    parts, all_step, all_dev = [], [], []
    for size in sizes:
        step = rng.integers(0, steps, size)
        dev = rng.integers(0, 6, size) * 3  # lane ids, not dense
        none, times = np.full(size, -1), rng.integers(0, 10**9, (2, size))
        name, role = rng.integers(0, 9, size), rng.integers(0, 4, size)
        parts.append(_Part(step, dev, name, role, none, none, times[0], times[1]))
        all_step += step.tolist()
        all_dev += dev.tolist()
    fields = {f: np.concatenate([getattr(p, f) for p in parts]) for f in ("name", "start")}
    strings = [f"s{i}" for i in range(20)]
    lanes = [Lane(LANE_STREAM, 0, i) for i in range(20)]
    rows = _grouped(parts, steps, strings, lanes)
    first: dict[tuple[int, int], int] = {}
    for i, key in enumerate(zip(all_step, all_dev, strict=True)):
        first.setdefault(key, i)
    want = sorted(
        range(len(all_step)), key=lambda i: (all_step[i], first[(all_step[i], all_dev[i])], i)
    )
    assert rows.rows.start.tolist() == fields["start"][want].tolist()
    assert rows.rows.name.tolist() == fields["name"][want].tolist()
    assert rows.bounds == [sum(1 for s in all_step if s < k) for k in range(steps + 1)]
