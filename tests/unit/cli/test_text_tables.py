"""Our own text outputs: FLOP rates in GFLOP/s, columns that survive long names,
and the monitor naming the traced step its utilisation comes from."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from tests.unit.cli.conftest import Runner
from tfprof_lite.analysis.overview import TOP_OPS_TITLE, Overview, TopOp, format_flop_rate

LONG = "SparseSoftmaxCrossEntropyWithLogitsAndAVeryLongCustomSuffix"


def test_flop_rate_format() -> None:
    assert format_flop_rate(141_766_158_995.8) == "141.77 GFLOP/s"
    assert format_flop_rate(4_000_000) == "0.004 GFLOP/s"
    assert format_flop_rate(0) == "0.00 GFLOP/s"


def test_top_ops_columns_align_with_long_names() -> None:
    ops = [
        TopOp(LONG, 1_500, 0.6, 0, 0.0, 1, 1),
        TopOp("MatMul", 900, 0.36, 9_000_000, 1e10, 2000, 2),
        TopOp("Add", 12, 0.0048, 100, 8.3e6, 1, 1),
    ]
    lines = Overview(steps=1, top_ops=ops).to_text().splitlines()
    start = lines.index(TOP_OPS_TITLE) + 1
    table = lines[start : start + 4]
    assert table[0].split() == [
        *("op", "type", "self", "time", "share", "run/defined", "FLOPs", "(run)", "FLOP", "rate")
    ]
    # FLOPs in SI units (never tfprof's 9.00m), and how many of the defined nodes ran.
    assert table[2].split()[3:6] == ["2/2000", "9.00", "MFLOPs"]
    assert table[3].split()[3:6] == ["1/1", "100", "FLOPs"]
    assert table[1].startswith(f"  {LONG}  ")
    ends = {len(line) for line in table}
    assert len(ends) == 1, table  # every row ends in the same column
    share_ends = {line.index("%") for line in table[1:]}
    assert len(share_ends) == 1, table
    assert table[2].endswith("10.00 GFLOP/s") and table[3].endswith("0.008 GFLOP/s")
    assert "flop/s" not in "\n".join(lines)


def test_overview_command_prints_gflops(run: Runner, profile: Path) -> None:
    result = run("overview", profile)
    assert result.code == 0, result.err
    table = result.out.split(TOP_OPS_TITLE + "\n", 1)[1].splitlines()
    rows = [line for line in table if line.startswith("  ")]
    assert rows[0].split()[:2] == ["op", "type"]
    assert any(line.endswith("GFLOP/s") for line in rows)
    assert len({len(line) for line in rows}) == 1


def test_monitor_says_which_step_util_comes_from(run: Runner, tmp_path: Path) -> None:
    from tests.unit.test_monitoring import SAMPLE, record

    log = tmp_path / "monitor.jsonl"
    windows = [record(0, [0.001] * 9, traced=1), record(1, [0.002] * 10), record(2, [0.001] * 10)]
    windows[0] = dataclasses.replace(windows[0], sample=None)
    windows[1] = dataclasses.replace(windows[1], first_step=0, last_step=9)  # took run 9
    windows[2] = dataclasses.replace(windows[2], first_step=20, last_step=29)
    docs = [{"event": "start", "run": "r1", "level": 1, "every": 10, "sample_every": 5}]
    docs += [w.to_dict() for w in windows]
    log.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    result = run("monitor", tmp_path, "--lines")
    assert result.code == 0, result.err
    lines = [line for line in result.out.splitlines() if line.startswith("tfprof_lite monitor")]
    assert lines[0].endswith("util=n/a")
    assert lines[1].endswith(f"util=75.0% util_step={SAMPLE.step}")  # its window took it
    assert lines[2].endswith("runs=20-29 step=1.000ms util=75.0%")  # said once, not again
    assert f"util=75.0% util_step={SAMPLE.step} " in lines[-1]  # the summary
