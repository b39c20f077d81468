"""The XProf output parsers of tests/xspace_oracle.py on hand-made outputs (no XProf needed):
DataTable cells by column id, empty cells, missing tables, the no-step-marker case."""

from __future__ import annotations

from typing import Any

import pytest

from tests import xspace_oracle as oracle


def _table(
    cols: list[str], rows: list[list[Any]], props: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "cols": [{"id": c, "label": c, "type": "string"} for c in cols],
        "rows": [{"c": [None if v is None else {"v": v} for v in row]} for row in rows],
        "p": props or {},
    }


STEP_COLS = ["stepnum", "deviceComputeTimeMs", "otherTimeMs", "tooltip", "stepTimeMs"]


def test_datatable_rows_by_column_id_with_empty_cells() -> None:
    rows = oracle.datatable_rows(_table(["a", "b"], [[1, None], ["x", 2.5]]))
    assert rows == [{"a": 1, "b": None}, {"a": "x", "b": 2.5}]


def test_datatable_row_of_the_wrong_width_is_refused() -> None:
    table = _table(["a", "b"], [[1, 2]])
    table["rows"][0]["c"].append({"v": 3})
    with pytest.raises(ValueError, match="3 cells for 2 columns"):
        oracle.datatable_rows(table)


def test_find_table_by_columns_wherever_it_is() -> None:
    tables = [{}, _table(["x"], []), _table(["severity", "message"], [])]
    assert oracle.find_table(tables, "message") is tables[2]
    with pytest.raises(ValueError, match="no table with columns"):
        oracle.find_table(tables, "stepnum")


def test_overview_steps_and_parts() -> None:
    steps = _table(
        STEP_COLS,
        [["train 1", 0.5, 1.5, "tip", 2.0], ["train 2", 0.25, 0.75, "tip", 1.0]],
        {"steptime_ms_average": "1.5", "input_conclusion": "c", "hardware_type": "CPU_ONLY"},
    )
    found = oracle.overview([{}, steps, _table(["severity", "message"], [])])
    assert found.steps_found
    assert [(s.name, s.micros) for s in found.steps] == [("train 1", 2000.0), ("train 2", 1000.0)]
    assert found.steps[0].parts_ms == {"deviceComputeTimeMs": 0.5, "otherTimeMs": 1.5}
    assert (found.average_ms, found.input_conclusion, found.hardware_type) == (1.5, "c", "CPU_ONLY")


def test_overview_without_steps_reports_the_warning() -> None:
    warning = f"{oracle.NO_STEP_MARKER} and hence the step time is unknown."
    found = oracle.overview(
        [_table(STEP_COLS, []), _table(["severity", "message"], [["WARNING", warning]])]
    )
    assert not found.steps_found
    assert found.diagnostics == (("WARNING", warning),)


def test_framework_op_rows_drop_idle_unless_asked() -> None:
    cols = [
        "host_or_device",
        "type",
        "operation",
        "occurrences",
        "total_time",
        "total_self_time",
        "eager",
    ]
    table = _table(
        cols,
        [
            ["Host", "IDLE", "IDLE", 0, 9.0, 9.0, "Function"],
            ["Host", "MatMul", "m", 2, 3.0, 2.0, "Eager"],
        ],
    )
    assert [r.op_type for r in oracle.framework_op_rows(table)] == ["MatMul"]
    idle, matmul = oracle.framework_op_rows([table], include_idle=True)
    assert idle.op_type == "IDLE" and (matmul.count, matmul.total_us, matmul.self_us) == (
        2,
        3.0,
        2.0,
    )
    assert matmul.execution == "Eager"


def test_memory_profile_and_trace_events() -> None:
    allocator = {
        "profileSummary": {
            "peakBytesUsageLifetime": "300",
            "peakStats": {"heapAllocatedBytes": "200"},
            "peakStatsTimePs": "5",
            "memoryCapacity": "1000",
        },
        "sampledTimelineSnapshots": [
            {"timeOffsetPs": "1", "aggregationStats": {"heapAllocatedBytes": "100"}},
            {"timeOffsetPs": "5", "aggregationStats": {"heapAllocatedBytes": "200"}},
        ],
    }
    (memory,) = oracle.memory_profile({"memoryProfilePerAllocator": {"bfc": allocator}}).values()
    assert (memory.peak_heap_bytes, memory.peak_bytes_lifetime, memory.timeline) == (
        200,
        300,
        ((1, 100), (5, 200)),
    )
    trace = {
        "traceEvents": [
            {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/host:CPU"}},
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": "python"}},
            {
                "ph": "X",
                "name": "train 0",
                "pid": 1,
                "tid": 7,
                "ts": 1.5,
                "dur": 2.0,
                "args": {"step_num": "0"},
            },
            {"ph": "i", "name": "mark", "pid": 1, "tid": 8, "ts": 3.0},
            {},
        ]
    }
    (event,) = oracle.trace_events(trace)
    assert (event.process, event.thread, event.name, event.dur_us) == (
        "/host:CPU",
        "python",
        "train 0",
        2.0,
    )
    assert [e.thread for e in oracle.trace_events(trace, phases=("i",))] == ["8"]
