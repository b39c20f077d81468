"""Checks that JSON/CSV rows of the op view say what its text report prints.

Shared by ``test_table_outputs.py`` (JSON on the test models) and
``test_quickstart.py`` (the example's CSV). No TensorFlow needed.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from tfprof_lite.base.units import format_memory, format_number, format_time

#: Row stat -> how the text report formats it, for the op view's `value (total%, self%)`
#: columns, in the report's column order.
OP_STAT_FORMATS: dict[str, Callable[[int], str]] = {
    "requested_bytes": format_memory,
    "peak_bytes": format_memory,
    "residual_bytes": format_memory,
    "output_bytes": format_memory,
    "exec_micros": format_time,
    "accelerator_exec_micros": format_time,
    "cpu_exec_micros": format_time,
    "parameters": format_number,
    "float_ops": format_number,
}
#: Memory shares print as 0% when the node's own bytes are 0 (tfprof), the others when
#: its total is 0.
_SELF_GUARDED = frozenset(("requested_bytes", "peak_bytes", "residual_bytes", "output_bytes"))
_FIELD = re.compile(r"(\S+)(?: params| float_ops)? \(([\d.]+)%, ([\d.]+)%\)")


def report_lines(text: str) -> list[str]:
    """The node lines of a text report (after ``Profile:`` and its header line)."""
    body = text.split("Profile:\n", 1)[1].splitlines()[1:]
    return [line for line in body if line and not line.startswith("=====")]


def csv_value(cell: str) -> Any:
    """A CSV cell as the JSON value it stands for (None, bool, int, float or str)."""
    if cell == "":
        return None
    if cell in ("True", "False"):
        return cell == "True"
    for kind in (int, float):
        try:
            return kind(cell)
        except ValueError:
            pass
    return cell


def assert_op_rows_match_text(rows: list[dict[str, Any]], lines: list[str]) -> None:
    """Each op-view row formats to its text line: values, percentages, occurrence."""
    assert [row["name"] for row in rows] == [line.split(" ", 1)[0] for line in lines]
    for row, line in zip(rows, lines):
        stats = [stat for stat in OP_STAT_FORMATS if f"{stat}_self" in row]
        fields = _FIELD.findall(line[len(row["name"]) :])
        assert len(fields) == len(stats), line
        for stat, (value, total_pct, self_pct) in zip(stats, fields):
            assert value == OP_STAT_FORMATS[stat](row[f"{stat}_self"]), (stat, line)
            guard = row[f"{stat}_self" if stat in _SELF_GUARDED else f"{stat}_total"]
            shares = (row[f"{stat}_total_pct"], row[f"{stat}_self_pct"]) if guard > 0 else (0, 0)
            assert abs(float(total_pct) - shares[0]) < 0.006, (stat, line)
            assert abs(float(self_pct) - shares[1]) < 0.006, (stat, line)
        if "run_count_self" in row:
            assert line.endswith(f"{row['run_count_self']}|{row['graph_nodes']}"), line
