"""The rows and table of ``bench_scale.py``: the targets (ours/TF unless marked
absolute), one ``Row`` per measured operation (the suites, the command line, the
many-step runs) and the printed table.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from scale_children import VIEWS

# Targets, ours/TF unless marked absolute.
TARGET_ADD_STEP_NATIVE = 0.05
TARGET_ADD_STEP_PURE = 0.25
TARGET_CONSTRUCT = 0.3
TARGET_CONSTRUCT_STEPS = 0.1
TARGET_VIEW = 0.3
TARGET_LOAD = 0.3
TARGET_SERIALIZE = 0.3
TARGET_MANY_RSS_MB = 600.0
TARGET_MANY_SCOPE_S = 0.4
TARGET_CLI_SCOPE_S = 1.5
TARGET_CLI_OTHER_S = 5.0


@dataclass
class Row:
    """One line of the table; ``absolute``: the target bounds ours alone, not the ratio."""

    group: str
    operation: str
    tf: float
    ours: float
    target: float | None = None
    absolute: bool = False
    unit: str = "s"
    tf_range: tuple[float, float] | None = None
    ours_range: tuple[float, float] | None = None

    @property
    def ratio(self) -> float:
        return self.ours / self.tf if self.tf > 0 else float("nan")

    @property
    def ok(self) -> bool | None:
        if self.target is None:
            return None
        return (self.ours if self.absolute else self.ratio) <= self.target


def _span(values: list[float]) -> tuple[float, float]:
    return (min(values), max(values))


def _medians(steps: list[list[float]]) -> list[float]:
    return [statistics.median(rep) for rep in steps]


def _totals(result: dict[str, Any]) -> list[float]:
    return [c + sum(s) for c, s in zip(result["construct"], result["add_step"])]


def suite_rows(group: str, tf: dict[str, Any], ours: dict[str, Any], native: bool) -> list[Row]:
    k = len(tf["add_step"][0])
    step_target = TARGET_ADD_STEP_NATIVE if native else TARGET_ADD_STEP_PURE
    tf_steps = [t for rep in tf["add_step"] for t in rep]
    ours_steps = [t for rep in ours["add_step"] for t in rep]
    lean_steps = [t for rep in tf["lean"]["add_step"] for t in rep]
    rows = [
        Row(
            group,
            "construct",
            min(tf["construct"]),
            min(ours["construct"]),
            TARGET_CONSTRUCT,
            tf_range=_span(tf["construct"]),
            ours_range=_span(ours["construct"]),
        ),
        Row(
            group,
            f"add_step (median of {k})",
            min(_medians(tf["add_step"])),
            min(_medians(ours["add_step"])),
            step_target,
            tf_range=_span(tf_steps),
            ours_range=_span(ours_steps),
        ),
        Row(
            group,
            "add_step, TF fed run_meta only",
            min(_medians(tf["lean"]["add_step"])),
            min(_medians(ours["add_step"])),
            tf_range=_span(lean_steps),
            ours_range=_span(ours_steps),
        ),
        Row(
            group,
            f"construct + {k} add_step",
            min(_totals(tf)),
            min(_totals(ours)),
            TARGET_CONSTRUCT_STEPS,
            tf_range=_span(_totals(tf)),
            ours_range=_span(_totals(ours)),
        ),
    ]
    for cmd, _ in VIEWS:
        rows.append(
            Row(
                group,
                f"{cmd} view, 1st",
                min(tf["view_first"][cmd]),
                min(ours["view_first"][cmd]),
                TARGET_VIEW,
                tf_range=_span(tf["view_first"][cmd]),
                ours_range=_span(ours["view_first"][cmd]),
            )
        )
        rows.append(
            Row(
                group,
                f"{cmd} view, best",
                min(tf["view"][cmd]),
                min(ours["view"][cmd]),
                TARGET_VIEW,
                tf_range=_span(tf["view"][cmd]),
                ours_range=_span(ours["view"][cmd]),
            )
        )
    for key, name, target in (
        ("serialize", "serialize_to_string", TARGET_SERIALIZE),
        ("load", "load TF's saved profile", TARGET_LOAD),
    ):
        rows.append(
            Row(
                group,
                name,
                min(tf[key]),
                min(ours[key]),
                target,
                tf_range=_span(tf[key]),
                ours_range=_span(ours[key]),
            )
        )
    return rows


def cli_rows(group: str, cli: dict[str, list[float]]) -> list[Row]:
    """One row per command (no TF counterpart: the target bounds ours alone)."""
    return [
        Row(
            group,
            f"CLI {name} on TF's saved profile",
            0.0,
            min(times),
            TARGET_CLI_SCOPE_S if name == "scope" else TARGET_CLI_OTHER_S,
            absolute=True,
            ours_range=_span(times),
        )
        for name, times in cli.items()
    ]


def many_rows(group: str, tf: dict[str, Any], ours: dict[str, Any]) -> list[Row]:
    n = len(tf["add_step"])
    k = max(1, min(5, n // 2))
    rows = []
    for name, part in (
        (f"steps 0-{k - 1}", slice(0, k)),
        (f"steps {n - k}-{n - 1}", slice(-k, None)),
    ):
        tf_part, ours_part = tf["add_step"][part], ours["add_step"][part]
        rows.append(
            Row(
                group,
                f"{n} steps: add_step, {name} (median)",
                statistics.median(tf_part),
                statistics.median(ours_part),
                tf_range=_span(tf_part),
                ours_range=_span(ours_part),
            )
        )
    rows.append(
        Row(
            group,
            f"{n} steps: peak RSS",
            tf["rss_peak_mb"],
            ours["rss_peak_mb"],
            TARGET_MANY_RSS_MB,
            absolute=True,
            unit="MB",
        )
    )
    rows.append(
        Row(
            group,
            f"{n} steps: scope view, 1st",
            tf["scope_first"],
            ours["scope_first"],
            TARGET_MANY_SCOPE_S,
            absolute=True,
        )
    )
    return rows


def _fmt_range(span: tuple[float, float] | None) -> str:
    return f"{span[0]:.4f}-{span[1]:.4f}" if span else "-"


def _fmt_target(row: Row) -> str:
    if row.target is None:
        return "-"
    if row.absolute:
        return f"<={row.target:g} {row.unit}"
    return f"<={row.target:.2f}"


def _fmt_ok(row: Row) -> str:
    ok = row.ok
    return "-" if ok is None else ("yes" if ok else "NO")


def print_table(rows: list[Row], titles: dict[str, str]) -> None:
    width = max(len(r.operation) for r in rows) + 2
    header = (
        f"{'operation':<{width}}{'TF':>10}{'ours':>10}{'ours/TF':>9}{'target':>11}{'ok':>5}"
        f"   {'TF min-max':<15}  {'ours min-max':<15}"
    )
    group = None
    for row in rows:
        if row.group != group:
            group = row.group
            print(f"\n== ours: {titles[group]}")
            print(header)
        unit = "" if row.unit == "s" else f" {row.unit}"
        tf_value = f"{row.tf:.1f}{unit}" if unit else f"{row.tf:.4f}"
        ratio = f"{row.ratio:>9.3f}" if row.tf > 0 else f"{'-':>9}"
        if row.tf <= 0:  # no TF counterpart
            tf_value = "-"
        ours_value = f"{row.ours:.1f}{unit}" if unit else f"{row.ours:.4f}"
        print(
            f"{row.operation:<{width}}{tf_value:>10}{ours_value:>10}{ratio}"
            f"{_fmt_target(row):>11}{_fmt_ok(row):>5}"
            f"   {_fmt_range(row.tf_range):<15}  {_fmt_range(row.ours_range):<15}"
        )
