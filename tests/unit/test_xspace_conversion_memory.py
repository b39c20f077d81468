"""What the XSpace conversion keeps while it runs: the decoded file and the
event table go as soon as they are no longer read, without waiting for the
cycle collector, and the per-event columns are no wider than their values."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.xspace_files import SpaceBuilder
from tfprof_lite.formats.xspace.read import conversion as xspace
from tfprof_lite.formats.xspace.read import load as xspace_load
from tfprof_lite.formats.xspace.read.events import event_table
from tfprof_lite.formats.xspace.wire import decode as xplane
from tfprof_lite.model import step_batch
from tfprof_lite.model.profile import ProfileModel


@pytest.fixture
def no_cycle_collector() -> Iterator[None]:
    """Only reference counts free objects while the test runs."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _space() -> SpaceBuilder:
    """Two marked steps, each with a host op, its launch and a kernel."""
    b = SpaceBuilder()
    main = b.line(b.host, 1, "python")
    pool = b.line(b.host, 2, "tf_Compute/2")
    gpu = b.gpu_plane()
    stream = b.line(gpu, 7, "Stream #7(Compute)")
    for step in range(2):
        t0 = 1_000_000 + step * 100_000
        b.event(b.host, main, "train", t0, 50_000, step_num=10 + step, _r=1)
        b.event(b.host, pool, "dense/MatMul:MatMul", t0 + 1_000, 5_000, "MatMul")
        b.event(b.host, pool, "cuLaunchKernel", t0 + 2_000, 100, correlation_id=step + 1)
        b.event(gpu, stream, "gemm_kernel", t0 + 20_000, 7_000, correlation_id=step + 1)
    return b


def test_the_event_table_is_freed_by_reference_counts(no_cycle_collector: None) -> None:
    table = event_table(xplane.decode_xspace(_space().bytes()))
    assert table.text["tf_op"] is table.text["tf_op"]  # its text view is made
    ref = weakref.ref(table)
    del table
    assert ref() is None


def test_event_columns_are_as_narrow_as_their_values() -> None:
    table = event_table(xplane.decode_xspace(_space().bytes()))
    assert table.plane_kind.dtype == np.int8
    # Text stat codes index the file's strings: int16 while there are fewer than 2^15.
    assert len(table.cols.strings) < 2**15
    assert {codes.dtype for codes in table.codes.values()} == {np.dtype(np.int16)}
    every = np.arange(len(table), dtype=np.int64)
    for name in ("correlation_id", "_r", "step_num", "program_id"):
        dense = table.ints[name]
        assert dense.dtype == np.int64 and len(dense) == len(table)
        assert table.ints.at(name, every).tolist() == dense.tolist()
        assert not dense[~table.has_int[name]].any()
    marked = np.flatnonzero(table.has_int["step_num"])
    assert table.ints.at("step_num", marked).tolist() == [10, 11]
    assert table.ints.at("step_num", marked[::-1]).tolist() == [11, 10]
    assert table.ints.at("correlation_id", every).max() == 2


def test_loading_frees_the_decoded_file_before_the_model_takes_the_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_cycle_collector: None
) -> None:
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(_space().bytes())
    decoded: list[weakref.ref[Any]] = []
    alive_at_steps: list[bool] = []
    decode, add_step = xspace_load.decode_xspace_file, ProfileModel.add_step

    def decode_and_watch(*args: Any, **kwargs: Any) -> Any:
        cols = decode(*args, **kwargs)
        decoded.append(weakref.ref(cols))
        return cols

    def add_step_and_look(self: ProfileModel, *args: Any) -> None:
        alive_at_steps.append(decoded[0]() is not None)
        add_step(self, *args)

    add_block = step_batch._add_block

    def add_block_and_look(model: ProfileModel, numbers: Any, *args: Any) -> None:
        alive_at_steps.extend(decoded[0]() is not None for _ in numbers)
        add_block(model, numbers, *args)

    monkeypatch.setattr(xspace_load, "decode_xspace_file", decode_and_watch)
    monkeypatch.setattr(ProfileModel, "add_step", add_step_and_look)
    monkeypatch.setattr(step_batch, "_add_block", add_block_and_look)  # (the steps in one batch)
    model = xspace_load.load_model(str(path))
    assert model.sorted_steps() == [10, 11]
    assert alive_at_steps == [False, False]


def test_a_released_plan_gives_the_model_the_same_steps() -> None:
    raw = _space().bytes()
    kept, released = ProfileModel(), ProfileModel()
    plan = xspace.convert(xplane.decode_xspace(raw), kept)
    other = xspace.plan_steps(xplane.decode_xspace(raw))
    xspace.add_plan(other, released, release=True)
    assert other.columns == [] and other.tracer_ns == []
    assert len(plan.columns) == 2
    assert released.sorted_steps() == kept.sorted_steps()
    for step in kept.sorted_steps():
        a, b = kept.stats(step), released.stats(step)
        assert a.accelerator_exec_micros.tolist() == b.accelerator_exec_micros.tolist()
        assert a.cpu_exec_micros.tolist() == b.cpu_exec_micros.tolist()
    assert released.names == kept.names


def test_a_table_without_its_stats_still_answers_rows_and_times() -> None:
    table = event_table(xplane.decode_xspace(_space().bytes()))
    host, device = table.host_events().tolist(), table.device_events().tolist()
    start, end = table.start.tolist(), table.end.tolist()
    table.drop_stats()
    assert (table.codes, table.has_int, table.names) == ({}, {}, [])
    assert len(table.ints) == 0 and len(table.text) == 0
    assert table.host_events().tolist() == host and table.device_events().tolist() == device
    assert (table.start.tolist(), table.end.tolist()) == (start, end)


def test_step_columns_share_one_zero_per_memory_column_until_the_memory_records() -> None:
    plan = xspace.plan_steps(xplane.decode_xspace(_space().bytes()))
    cols = plan.columns[0]
    assert len(cols) > 1
    for name in ("total", "peak", "live", "gpu_allocs", "gpu_in_use", "temp", "persist"):
        column = getattr(cols, name)
        assert len(column) == len(cols) and not column.any()
        assert column.strides == (0,) and not column.flags.writeable


def test_text_codes_widen_to_int32_past_32766_strings() -> None:
    b = _space()
    b.event(b.host, b.line(b.host, 3, "extra"), "x", 2_000_000, 10, tf_op="dense/MatMul:MatMul")
    narrow = event_table(xplane.decode_xspace(b.bytes()))
    cols = xplane.decode_xspace(b.bytes())
    cols.strings = cols.strings + [f"pad{i}" for i in range(2**15)]
    table = event_table(cols)
    assert {codes.dtype for codes in table.codes.values()} == {np.dtype(np.int32)}
    assert table.text["tf_op"].count("dense/MatMul:MatMul") == 1
    for name, codes in table.codes.items():
        assert codes.tolist() == narrow.codes[name].tolist()


def test_event_names_are_read_from_the_metadata() -> None:
    cols = xplane.decode_xspace(_space().bytes())
    table = event_table(cols)
    expected = [cols.meta_name[m] if m >= 0 else "" for m in cols.event_meta.tolist()]
    assert len(table.names) == len(expected)
    assert [table.names[e] for e in range(len(table))] == expected
    assert table.names[1:3] == expected[1:3] and table.names[-1] == expected[-1]
    cols.event_meta[0] = -1
    assert table.names[0] == ""


def test_a_released_conversion_drops_the_event_stats_and_gives_the_same_plan() -> None:
    raw = _space().bytes()
    kept_cols, released_cols = xplane.decode_xspace(raw), xplane.decode_xspace(raw)
    kept = xspace.plan_steps(kept_cols)
    released = xspace.plan_steps(released_cols, release=True)
    assert len(kept_cols.event_stats) > 0 and len(released_cols.event_stats) == 0
    assert not released_cols.event_stat_at.any() and not released_cols.event_duration_ps.any()
    assert len(released_cols.event_stat_at) == len(released_cols.event_line) + 1
    assert released.numbers == kept.numbers and released.nodes == kept.nodes
    for a, b in zip(kept.columns, released.columns, strict=True):
        assert (a.name, a.label, a.devices) == (b.name, b.label, b.devices)
        assert a.start.tolist() == b.start.tolist() and a.rel.tolist() == b.rel.tolist()
        assert a.raw == b.raw
