"""Monitoring records, lines, summaries and ``monitor.jsonl`` reading, without TensorFlow."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from pathlib import Path

import pytest

from tfprof_lite.analysis.monitor_log import follow, read_runs
from tfprof_lite.analysis.monitoring import (
    MonitorSummary,
    SampleMetrics,
    WindowRecord,
    parse_line,
    summarize,
    window_stats,
)
from tfprof_lite.errors import InvalidInputError

SAMPLE = SampleMetrics(
    step=9,
    util=0.75,
    util_device="cpu",
    host_idle=0.25,
    device_idle=None,
    input_wait=0.1,
    devices=1,
    span_ms=0.5,
)


def record(
    window: int, durations: list[float], traced: int = 0, sample: bool = True
) -> WindowRecord:
    steps = len(durations) + traced
    return WindowRecord(
        run="r1",
        window=window,
        first_step=window * steps,
        last_step=window * steps + steps - 1,
        steps=steps,
        traced=traced,
        stats=window_stats(durations),
        period_ms=2.0,
        in_run=0.5,
        host_cpu=1.0,
        sample=SAMPLE if sample else None,
        time=0.0,
    )


def test_window_stats() -> None:
    assert window_stats([]).mean_ms is None
    stats = window_stats([0.001, 0.003])
    assert (stats.timed, stats.mean_ms, stats.min_ms, stats.max_ms) == (2, 2.0, 1.0, 3.0)


def test_lines_round_trip() -> None:
    rec = record(0, [0.001, 0.003], traced=1)
    line1 = rec.to_line(1)
    # the sample (run 9) was taken in an earlier window: util without util_step
    assert line1 == "tfprof_lite monitor: runs=0-2 step=2.000ms util=75.0%"
    own = dataclasses.replace(rec, first_step=7, last_step=9)  # the window that took it
    assert own.to_line(1) == "tfprof_lite monitor: runs=7-9 step=2.000ms util=75.0% util_step=9"
    assert parse_line(own.to_line(2)) == {
        "runs": "7-9",
        "step": "2.000ms",
        "min": "1.000ms",
        "max": "3.000ms",
        "in_run": "50.0%",
        "util": "75.0%",
        "util_step": "9",
        "host_idle": "25.0%",
        "device_idle": "n/a",
        "input_wait": "10.0%",
        "devices": "1",
    }
    fields = parse_line(rec.to_line(2))
    assert fields == {
        "runs": "0-2",
        "step": "2.000ms",
        "min": "1.000ms",
        "max": "3.000ms",
        "in_run": "50.0%",
        "util": "75.0%",
        "host_idle": "25.0%",
        "device_idle": "n/a",
        "input_wait": "10.0%",
        "devices": "1",
    }
    empty = parse_line(record(0, [], traced=2, sample=False).to_line(2))
    assert empty["step"] == empty["util"] == empty["devices"] == "n/a"
    assert "util_step" not in empty
    with pytest.raises(ValueError):
        parse_line("loss 0.3")


def test_json_round_trip_and_summary() -> None:
    records = [record(0, [0.001] * 3, traced=1), record(1, [0.004] * 4)]
    for rec in records:
        doc = json.loads(json.dumps(rec.to_dict()))
        assert doc["event"] == "window" and WindowRecord.from_dict(doc) == rec
    summary = summarize(records)
    assert (summary.steps, summary.timed, summary.traced, summary.windows) == (8, 7, 1, 2)
    assert summary.mean_ms == pytest.approx((3 * 1.0 + 4 * 4.0) / 7, abs=1e-4)
    assert (summary.min_ms, summary.max_ms, summary.sample) == (1.0, 4.0, SAMPLE)
    assert MonitorSummary.from_dict(json.loads(json.dumps(summary.to_dict()))) == summary
    assert parse_line(summary.to_line())["runs"] == "8"
    assert parse_line(summary.to_line())["util_step"] == str(SAMPLE.step)
    assert "sample" not in parse_line(summary.to_line())  # util_step names it once
    assert summarize([]).mean_ms is None


def write_lines(path: Path, docs: list[object], tail: str = "") -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("".join(json.dumps(doc) + "\n" for doc in docs) + tail)


def test_read_runs_groups_and_skips_garbage(tmp_path: Path) -> None:
    path = tmp_path / "monitor.jsonl"
    write_lines(
        path,
        [
            {"event": "start", "run": "a", "level": 2},
            record(0, [0.001]).to_dict(),
            {"event": "end", "run": "r1"},
            "not an object",
            {"event": "window", "run": "b"},  # not a full record
        ],
        tail='{"event": "wind',  # half-written last line
    )
    log = read_runs(tmp_path)
    assert [r.run for r in log.runs] == ["a", "r1", "b"]
    assert log.runs[0].level == 2 and not log.runs[0].finished
    assert log.runs[1].finished and len(log.runs[1].windows) == 1
    assert log.skipped == 3
    with pytest.raises(InvalidInputError, match="cannot read"):
        read_runs(tmp_path / "missing.jsonl")


def test_follow_waits_appends_and_stops(tmp_path: Path) -> None:
    path = tmp_path / "monitor.jsonl"

    def writer() -> None:
        time.sleep(0.05)
        write_lines(path, [{"event": "start", "run": "x"}], tail='{"event": "window", ')
        time.sleep(0.05)
        with open(path, "a", encoding="utf-8") as handle:
            handle.write('"run": "x"}\n')

    thread = threading.Thread(target=writer)
    thread.start()
    got = list(follow(tmp_path, poll=0.01, idle_timeout=0.5))
    thread.join()
    assert got == [{"event": "start", "run": "x"}, {"event": "window", "run": "x"}]
    stop_now = list(follow(path, stop=lambda: True))
    assert stop_now == []
