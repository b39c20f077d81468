"""Compare two profiles (or two steps of one): which ops and scopes changed.

Contract:

* :func:`diff_profiles` runs the op view and the scope view on both sides with the
  same options (every node accounted and shown unless the caller's options filter;
  ``step`` per side, -1 = the per-node average over all steps) and matches entries
  by name. Op view entries are op types with their own (self) time, runs and graph
  node count; scope view entries are every name scope and node with its *total*
  time, runs and node count (the root is left out).
* Each entry is ``added`` (only in B), ``removed`` (only in A), ``changed`` (runs
  or node count differ, or a time changed beyond the noise level), ``noise`` (only
  times differ, all within the noise level) or ``unchanged``. The noise level
  (:class:`Noise`, default :data:`DEFAULT_NOISE`: 10 us and 10 %) makes a time
  change significant when it is at least ``micros`` microseconds *and* at least
  ``percent`` % of the time before (any size of change from 0 us); total, CPU and
  accelerator time are tested apart, so CPU time moving to the accelerator counts.
  :attr:`ViewDiff.entries` holds the added, removed and changed entries whose
  absolute time change is at least ``min_change`` microseconds, sorted by absolute
  time change (largest first), then by name; the counts of every status are in
  :attr:`ViewDiff.counts`, and :attr:`ViewDiff.median_change` is the median
  relative time change of the entries present on both sides with time before
  (the noise actually seen between the sides).
* Times are kept as total (``micros``), CPU and accelerator time per entry and per
  view, and printed apart.
* :func:`render_text` (:meth:`ProfileDiff.to_text`) prints a summary line per view
  and one row per entry; :func:`to_json` (:meth:`ProfileDiff.to_dict`) returns a
  JSON-ready dict (schema ``tfprof_lite.diff`` version 1), like the other
  :mod:`tfprof_lite.analysis` modules.
* A step missing from a profile is an :class:`~tfprof_lite.errors.InvalidInputError`
  naming the side and the steps it has.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from tfprof_lite.base.units import format_time
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.options.builder import ProfileOptionBuilder
from tfprof_lite.options.options import Options
from tfprof_lite.views.node import ShowNode
from tfprof_lite.views.query import run_view
from tfprof_lite.views.stats import ACC, CPU, DEFINITION, EXEC, RUN

__all__ = [
    "DEFAULT_NOISE",
    "DIFF_VIEWS",
    "SCHEMA_NAME",
    "SCHEMA_VERSION",
    "DiffEntry",
    "Noise",
    "ProfileDiff",
    "Side",
    "ViewDiff",
    "diff_profiles",
    "render_text",
    "to_json",
]

SCHEMA_NAME = "tfprof_lite.diff"
SCHEMA_VERSION = 2
#: The views a diff can compare, in report order.
DIFF_VIEWS: tuple[str, ...] = ("op", "scope")
STATUSES: tuple[str, ...] = ("added", "removed", "changed", "noise", "unchanged")

#: ``paint(text, role)`` colours text for a role: added, removed, slower, faster, title.
Painter = Callable[[str, str], str]


@dataclasses.dataclass(frozen=True)
class Values:
    """One entry's numbers on one side: time (us; total, CPU, accelerator), runs and
    graph nodes."""

    micros: int = 0
    runs: int = 0
    nodes: int = 0
    cpu_micros: int = 0
    accelerator_micros: int = 0

    def times(self) -> tuple[int, int, int]:
        """(total, CPU, accelerator) time."""
        return self.micros, self.cpu_micros, self.accelerator_micros


@dataclasses.dataclass(frozen=True)
class Noise:
    """The noise level: a time change is significant when it is at least ``micros``
    and at least ``percent`` % of the time before (see the module docstring)."""

    micros: int = 10
    percent: float = 10.0

    def significant(self, before: int, after: int) -> bool:
        """Whether a change of one time from ``before`` to ``after`` is beyond noise."""
        delta = abs(after - before)
        if delta == 0 or delta < self.micros:
            return False
        return before <= 0 or 100.0 * delta / before >= self.percent

    def describe(self) -> str:
        """E.g. ``changes under 10us or under 10% of the time before``."""
        return (
            f"time changes under {format_time(self.micros)} or under "
            f"{self.percent:g}% of the time before"
        )


#: The default noise level of :func:`diff_profiles` and the CLI.
DEFAULT_NOISE = Noise()


@dataclasses.dataclass(frozen=True)
class DiffEntry:
    """One op type or scope compared across the two sides."""

    name: str
    status: str
    before: Values
    after: Values

    @property
    def delta(self) -> int:
        """Time change in microseconds (after - before)."""
        return self.after.micros - self.before.micros

    @property
    def percent(self) -> float | None:
        """Time change relative to before, or None when before is 0."""
        return 100.0 * self.delta / self.before.micros if self.before.micros else None

    @property
    def cpu_delta(self) -> int:
        """CPU time change in microseconds."""
        return self.after.cpu_micros - self.before.cpu_micros

    @property
    def accelerator_delta(self) -> int:
        """Accelerator time change in microseconds."""
        return self.after.accelerator_micros - self.before.accelerator_micros


@dataclasses.dataclass(frozen=True)
class ViewDiff:
    """The comparison in one view."""

    view: str
    entries: list[DiffEntry]
    counts: dict[str, int]
    totals: tuple[Values, Values]
    noise: Noise = DEFAULT_NOISE
    median_change: float | None = None

    @property
    def total_before(self) -> int:
        """The view's total time on the before side."""
        return self.totals[0].micros

    @property
    def total_after(self) -> int:
        """The view's total time on the after side."""
        return self.totals[1].micros


@dataclasses.dataclass(frozen=True)
class Side:
    """One side of a diff: the profile, its label and the step to use (-1 = average)."""

    model: ProfileModel
    label: str
    step: int = -1

    def describe(self) -> str:
        """E.g. ``a/profile_4 step 2`` or ``a/profile_4 (average of 5 steps)``."""
        if self.step >= 0:
            return f"{self.label} step {self.step}"
        n = len(self.model.steps)
        return f"{self.label} (average of {n} step{'s' if n != 1 else ''})"


@dataclasses.dataclass(frozen=True)
class ProfileDiff:
    """The whole comparison: both sides and one :class:`ViewDiff` per view."""

    before: Side
    after: Side
    views: dict[str, ViewDiff]

    def to_dict(self) -> dict[str, Any]:
        """The diff as a JSON-ready dict (:func:`to_json`)."""
        return to_json(self)

    def to_text(self, limit: int = 25, paint: Painter | None = None) -> str:
        """The diff as text (:func:`render_text`)."""
        return render_text(self, limit, paint)


def _options(base: Options | None, step: int) -> Options:
    opts = base or Options.from_dict(ProfileOptionBuilder().build())
    return opts.updated(
        {
            "max_depth": 1_000_000,
            "select": ["micros", "occurrence"],
            "order_by": "name",
            "output": "none",
            "step": step,
        }
    )


def _check_step(side: Side) -> None:
    if side.step >= 0 and side.step not in side.model.steps:
        have = ", ".join(str(s) for s in side.model.sorted_steps()) or "none"
        raise InvalidInputError(
            f"{side.label}: no step {side.step} in this profile (steps: {have})"
        )


def _walk(root: ShowNode) -> list[ShowNode]:
    out: list[ShowNode] = []
    stack = list(reversed(root.children))
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(reversed(node.children))
    return out


def _values(stats: list[int], nodes: int) -> Values:
    return Values(stats[EXEC], stats[RUN], nodes, stats[CPU], stats[ACC])


def view_values(
    side: Side, view: str, base: Options | None = None
) -> tuple[dict[str, Values], Values]:
    """Name -> values of every entry of ``view`` (``op`` or ``scope``) on ``side``,
    and the view's total (the root's; its ``runs`` and ``nodes`` are 0)."""
    _check_step(side)
    result = run_view(side.model, view, _options(base, side.step))
    root = result.root.total
    total = Values(root[EXEC], 0, 0, root[CPU], root[ACC])
    if view == "op":
        return {n.name: _values(n.self_, n.occurrence) for n in result.rows}, total
    values: dict[str, Values] = {}
    for node in _walk(result.root):
        values[node.name] = _values(node.total, node.total[DEFINITION])
    return values, total


def _status(before: Values | None, after: Values | None, noise: Noise) -> str:
    if before is None:
        return "added"
    if after is None:
        return "removed"
    if before == after:
        return "unchanged"
    if (before.runs, before.nodes) != (after.runs, after.nodes):
        return "changed"
    pairs = zip(before.times(), after.times())
    return "changed" if any(noise.significant(a, b) for a, b in pairs) else "noise"


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def compare_values(
    view: str,
    before: dict[str, Values],
    after: dict[str, Values],
    totals: tuple[Values, Values] = (Values(), Values()),
    min_change: int = 0,
    noise: Noise = DEFAULT_NOISE,
) -> ViewDiff:
    """Matches two name -> values maps into a :class:`ViewDiff` (see the module doc).

    Args:
        view: the view's name.
        before, after: name -> values on each side.
        totals: the view's totals on each side.
        min_change: leave out entries whose time changed by less (microseconds).
        noise: the noise level; ``Noise(0, 0)`` lists every change.
    """
    entries: list[DiffEntry] = []
    counts = dict.fromkeys(STATUSES, 0)
    relative: list[float] = []
    for name in sorted(set(before) | set(after)):
        status = _status(before.get(name), after.get(name), noise)
        counts[status] += 1
        entry = DiffEntry(name, status, before.get(name, Values()), after.get(name, Values()))
        if entry.percent is not None and status in ("changed", "noise", "unchanged"):
            relative.append(abs(entry.percent))
        if status not in ("unchanged", "noise") and abs(entry.delta) >= min_change:
            entries.append(entry)
    entries.sort(key=lambda e: (-abs(e.delta), e.name))
    return ViewDiff(view, entries, counts, totals, noise, _median(relative))


def diff_profiles(
    before: Side,
    after: Side,
    views: Sequence[str] = DIFF_VIEWS,
    options: Options | None = None,
    min_change: int = 0,
    noise: Noise = DEFAULT_NOISE,
) -> ProfileDiff:
    """Compares ``before`` with ``after`` in each of ``views``.

    Args:
        before, after: the two sides (profile, label, step).
        views: any of :data:`DIFF_VIEWS`.
        options: base query options (filters); depth, selection, order, output and
            step are set here. None: every node accounted and shown.
        min_change: leave out entries whose time changed by less (microseconds).
        noise: the noise level (time-only changes within it are not listed).

    Raises:
        InvalidInputError: a step that a side does not have.
    """
    out: dict[str, ViewDiff] = {}
    for view in views:
        a, a_total = view_values(before, view, options)
        b, b_total = view_values(after, view, options)
        out[view] = compare_values(view, a, b, (a_total, b_total), min_change, noise)
    return ProfileDiff(before, after, out)


# --------------------------------------------------------------------------- rendering


def _signed_time(micros: int) -> str:
    sign = "+" if micros > 0 else "-" if micros < 0 else "±"
    return sign + format_time(abs(micros))


def _percent(entry: DiffEntry) -> str:
    if entry.status == "added":
        return "new"
    if entry.status == "removed":
        return "gone"
    pct = entry.percent
    return "n/a" if pct is None else f"{pct:+.1f}%"


_MARK = {"added": "+", "removed": "-", "changed": "~"}
_TITLES = {"op": "Op view (op types, self time)", "scope": "Scope view (scopes, total time)"}


def _row(entry: DiffEntry, paint: Painter) -> str:
    role = entry.status if entry.status != "changed" else "slower" if entry.delta > 0 else "faster"
    runs = f"{entry.before.runs}->{entry.after.runs}"
    cells = (
        f"{_MARK[entry.status]} {_signed_time(entry.delta):>11} {_percent(entry):>8} "
        f"{format_time(entry.before.micros):>10} {format_time(entry.after.micros):>10} "
        f"{_signed_time(entry.cpu_delta):>11} {_signed_time(entry.accelerator_delta):>11} "
        f"{runs:>11}  "
    )
    return paint(cells, role) + entry.name


def _change(label: str, before: int, after: int) -> str:
    return f"{label} {format_time(before)} -> {format_time(after)} ({_signed_time(after - before)})"


def _summary(diff: ViewDiff) -> list[str]:
    c = diff.counts
    a, b = diff.totals
    median = "n/a" if diff.median_change is None else f"{diff.median_change:.1f}%"
    return [
        f"{c['added']} added, {c['removed']} removed, {c['changed']} changed, "
        f"{c['noise']} within noise, {c['unchanged']} unchanged",
        f"{_change('total', a.micros, b.micros)}; {_change('cpu', a.cpu_micros, b.cpu_micros)}; "
        f"{_change('accelerator', a.accelerator_micros, b.accelerator_micros)}",
        f"noise level: {diff.noise.describe()} are not listed; median change of the "
        f"entries on both sides: {median}",
    ]


def _view_text(diff: ViewDiff, limit: int, paint: Painter) -> list[str]:
    lines = ["", paint(_TITLES[diff.view], "title"), *_summary(diff)]
    if not diff.entries:
        return [*lines, "  no differences beyond the noise level"]
    lines.append(
        f"  {'change':>11} {'change%':>8} {'before':>10} {'after':>10} {'cpu':>11} "
        f"{'accelerator':>11} {'runs':>11}  name"
    )
    shown = diff.entries if limit <= 0 else diff.entries[:limit]
    lines += [_row(e, paint) for e in shown]
    if len(shown) < len(diff.entries):
        lines.append(f"  ... {len(diff.entries) - len(shown)} more (--limit 0 shows all)")
    return lines


def render_text(diff: ProfileDiff, limit: int = 25, paint: Painter | None = None) -> str:
    """The diff as text: a header, then per view a summary and the entries.

    Args:
        diff: the comparison.
        limit: the most entries per view (0: all).
        paint: colours text by role; None for plain text.
    """
    painter: Painter = paint or (lambda text, role: text)
    lines = [f"before: {diff.before.describe()}", f"after:  {diff.after.describe()}"]
    for view in diff.views.values():
        lines += _view_text(view, limit, painter)
    return "\n".join(lines) + "\n"


def _entry_json(entry: DiffEntry) -> dict[str, Any]:
    return {
        "name": entry.name,
        "status": entry.status,
        "before": dataclasses.asdict(entry.before),
        "after": dataclasses.asdict(entry.after),
        "delta_micros": entry.delta,
        "delta_percent": None if entry.percent is None else round(entry.percent, 4),
        "delta_cpu_micros": entry.cpu_delta,
        "delta_accelerator_micros": entry.accelerator_delta,
    }


def to_json(diff: ProfileDiff) -> dict[str, Any]:
    """The diff as a JSON-ready dict (every listed entry, no limit)."""
    return {
        "schema": SCHEMA_NAME,
        "version": SCHEMA_VERSION,
        "before": {"source": diff.before.label, "step": diff.before.step},
        "after": {"source": diff.after.label, "step": diff.after.step},
        "views": {
            name: {
                "counts": view.counts,
                "total_before_micros": view.total_before,
                "total_after_micros": view.total_after,
                "total_before": dataclasses.asdict(view.totals[0]),
                "total_after": dataclasses.asdict(view.totals[1]),
                "noise": {
                    "micros": view.noise.micros,
                    "percent": view.noise.percent,
                    "median_change_percent": view.median_change,
                },
                "entries": [_entry_json(e) for e in view.entries],
            }
            for name, view in diff.views.items()
        },
    }
