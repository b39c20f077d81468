"""The rows and tables of ``bench_xspace.py``: the targets, the ``Series`` of samples
of one measurement, the speed rows (ours against XProf's conversion) and the
printing of the speed and peak-memory tables."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

XPROF_TOOL = "overview_page"

TARGET_CLI_OVERVIEW = 0.5
TARGET_LOAD = 0.25
TARGET_REPORT = 1.0
TARGET_RSS = 2.0


# ================================================================== rounds
@dataclass
class Series:
    """Samples of one measurement: per round, the wall and CPU seconds."""

    wall: list[list[float]] = field(default_factory=list)
    cpu: list[list[float]] = field(default_factory=list)

    def add(self, wall: list[float], cpu: list[float]) -> None:
        self.wall.append(wall)
        self.cpu.append(cpu)

    def best(self) -> float:
        return min(min(r) for r in self.wall)

    def best_cpu(self) -> float:
        return min(min(r) for r in self.cpu)

    def median(self) -> float:
        return statistics.median(v for r in self.wall for v in r)

    def span(self) -> tuple[float, float]:
        flat = [v for r in self.wall for v in r]
        return (min(flat), max(flat))


@dataclass
class Row:
    """One line of the table: ours against XProf's conversion."""

    operation: str
    xprof: float
    ours: float
    target: float | None
    ratio_span: tuple[float, float]
    median_ratio: float
    xprof_span: tuple[float, float]
    ours_span: tuple[float, float]
    cpu_ratio: float

    @property
    def ratio(self) -> float:
        return self.ours / self.xprof

    @property
    def ok(self) -> bool | None:
        return None if self.target is None else self.ratio <= self.target


def speed_rows(series: dict[str, Series], paths: list[tuple[str, bool]]) -> list[Row]:
    xprof = series["xprof"]
    rows = []
    for label, _ in paths:
        for key, what, target in (
            ("overview", "tfprof-lite overview FILE (process)", TARGET_CLI_OVERVIEW),
            ("load", "Profiler.load(FILE) (call)", TARGET_LOAD),
            ("report", "tfprof-lite report FILE (process)", TARGET_REPORT),
        ):
            ours = series[f"{key}/{label}"]
            per_round = [min(o) / min(x) for o, x in zip(ours.wall, xprof.wall, strict=True)]
            rows.append(
                Row(
                    f"{what} [{label}]",
                    xprof.best(),
                    ours.best(),
                    target,
                    (min(per_round), max(per_round)),
                    ours.median() / xprof.median(),
                    xprof.span(),
                    ours.span(),
                    ours.best_cpu() / xprof.best_cpu(),
                )
            )
    return rows


def print_speed(rows: list[Row]) -> None:
    width = max(len(r.operation) for r in rows) + 2
    print(
        f"\n== speed, against XProf {XPROF_TOOL} conversion\n"
        f"{'operation':<{width}}{'XProf s':>9}{'ours s':>9}{'ratio':>7}{'target':>8}{'ok':>5}"
        f"{'ratio min-max':>16}{'median':>8}{'cpu ratio':>11}"
        f"   {'XProf min-max':<15}  {'ours min-max':<15}"
    )
    for r in rows:
        ok = "-" if r.ok is None else ("yes" if r.ok else "NO")
        target = "-" if r.target is None else f"<={r.target:.2f}"
        print(
            f"{r.operation:<{width}}{r.xprof:>9.3f}{r.ours:>9.3f}{r.ratio:>7.3f}{target:>8}{ok:>5}"
            f"{f'{r.ratio_span[0]:.3f}-{r.ratio_span[1]:.3f}':>16}{r.median_ratio:>8.3f}"
            f"{r.cpu_ratio:>11.3f}"
            f"   {r.xprof_span[0]:.3f}-{r.xprof_span[1]:.3f}    "
            f"{r.ours_span[0]:.3f}-{r.ours_span[1]:.3f}"
        )


def print_memory(rows: list[dict[str, Any]]) -> None:
    print(f"\n== peak memory opening a grown XSpace (target <= {TARGET_RSS:g}x the file)")
    print(
        f"{'operation':<34}{'file MB':>9}{'peak MB':>9}{'ratio':>7}{'net':>7}{'ok':>5}"
        f"{'wall s':>8}{'cpu s':>8}"
    )
    for r in rows:
        ok = "yes" if r["completed"] and r["ratio"] <= TARGET_RSS else "NO"
        if r["operation"].startswith("read + decode"):
            ok = "-"  # a stage, not a target
        done = "" if r["completed"] else "  (failed: over the cap?)"
        print(
            f"{r['operation']:<34}{r['file_mb']:>9.1f}{r['peak_rss_mb']:>9.0f}{r['ratio']:>7.2f}"
            f"{r['net_ratio']:>7.2f}{ok:>5}{r['wall_s']:>8.1f}{r['cpu_s']:>8.1f}{done}"
        )
