"""Compare two profiles (or two steps of one): which ops and scopes changed.

Contract:

* :func:`diff_profiles` runs the op view and the scope view on both sides with the
  same options (every node accounted and shown unless the caller's options filter;
  ``step`` per side, -1 = the per-node average over all steps) and matches entries
  by name. Op view entries are op types with their own (self) time, runs and graph
  node count; scope view entries are every name scope and node with its *total*
  time, runs and node count (the root is left out).
* Each entry is ``added`` (only in B), ``removed`` (only in A), ``changed`` (time,
  runs or node count differ) or ``unchanged``. :attr:`ViewDiff.entries` holds the
  added, removed and changed ones whose absolute time change is at least
  ``min_change`` microseconds, sorted by absolute time change (largest first),
  then by name; the counts of every status are in :attr:`ViewDiff.counts`.
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
from tfprof_lite.views.stats import DEFINITION, EXEC, RUN

__all__ = [
    "DIFF_VIEWS",
    "SCHEMA_NAME",
    "SCHEMA_VERSION",
    "DiffEntry",
    "ProfileDiff",
    "Side",
    "ViewDiff",
    "diff_profiles",
    "render_text",
    "to_json",
]

SCHEMA_NAME = "tfprof_lite.diff"
SCHEMA_VERSION = 1
#: The views a diff can compare, in report order.
DIFF_VIEWS: tuple[str, ...] = ("op", "scope")
STATUSES: tuple[str, ...] = ("added", "removed", "changed", "unchanged")

#: ``paint(text, role)`` colours text for a role: added, removed, slower, faster, title.
Painter = Callable[[str, str], str]


@dataclasses.dataclass(frozen=True)
class Values:
    """One entry's numbers on one side: time (us), runs and graph nodes."""

    micros: int = 0
    runs: int = 0
    nodes: int = 0


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


@dataclasses.dataclass(frozen=True)
class ViewDiff:
    """The comparison in one view."""

    view: str
    entries: list[DiffEntry]
    counts: dict[str, int]
    total_before: int
    total_after: int


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


def view_values(
    side: Side, view: str, base: Options | None = None
) -> tuple[dict[str, Values], int]:
    """Name -> values of every entry of ``view`` (``op`` or ``scope``) on ``side``,
    and the view's total time (the root's)."""
    _check_step(side)
    result = run_view(side.model, view, _options(base, side.step))
    total = result.root.total[EXEC]
    if view == "op":
        rows = {n.name: Values(n.self_[EXEC], n.self_[RUN], n.occurrence) for n in result.rows}
        return rows, total
    values: dict[str, Values] = {}
    for node in _walk(result.root):
        values[node.name] = Values(node.total[EXEC], node.total[RUN], node.total[DEFINITION])
    return values, total


def _status(before: Values | None, after: Values | None) -> str:
    if before is None:
        return "added"
    if after is None:
        return "removed"
    return "unchanged" if before == after else "changed"


def compare_values(
    view: str,
    before: dict[str, Values],
    after: dict[str, Values],
    totals: tuple[int, int] = (0, 0),
    min_change: int = 0,
) -> ViewDiff:
    """Matches two name -> values maps into a :class:`ViewDiff` (see the module doc).

    Args:
        view: the view's name.
        before, after: name -> values on each side.
        totals: the view's total time on each side.
        min_change: leave out entries whose time changed by less (microseconds).
    """
    entries: list[DiffEntry] = []
    counts = dict.fromkeys(STATUSES, 0)
    for name in sorted(set(before) | set(after)):
        status = _status(before.get(name), after.get(name))
        counts[status] += 1
        entry = DiffEntry(name, status, before.get(name, Values()), after.get(name, Values()))
        if status != "unchanged" and abs(entry.delta) >= min_change:
            entries.append(entry)
    entries.sort(key=lambda e: (-abs(e.delta), e.name))
    return ViewDiff(view, entries, counts, totals[0], totals[1])


def diff_profiles(
    before: Side,
    after: Side,
    views: Sequence[str] = DIFF_VIEWS,
    options: Options | None = None,
    min_change: int = 0,
) -> ProfileDiff:
    """Compares ``before`` with ``after`` in each of ``views``.

    Args:
        before, after: the two sides (profile, label, step).
        views: any of :data:`DIFF_VIEWS`.
        options: base query options (filters); depth, selection, order, output and
            step are set here. None: every node accounted and shown.
        min_change: leave out entries whose time changed by less (microseconds).

    Raises:
        InvalidInputError: a step that a side does not have.
    """
    out: dict[str, ViewDiff] = {}
    for view in views:
        a, a_total = view_values(before, view, options)
        b, b_total = view_values(after, view, options)
        out[view] = compare_values(view, a, b, (a_total, b_total), min_change)
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
        f"{runs:>11}  "
    )
    return paint(cells, role) + entry.name


def _view_text(diff: ViewDiff, limit: int, paint: Painter) -> list[str]:
    c = diff.counts
    summary = (
        f"{c['added']} added, {c['removed']} removed, {c['changed']} changed, "
        f"{c['unchanged']} unchanged; total {format_time(diff.total_before)} -> "
        f"{format_time(diff.total_after)} ({_signed_time(diff.total_after - diff.total_before)})"
    )
    lines = ["", paint(_TITLES[diff.view], "title"), summary]
    if not diff.entries:
        return [*lines, "  no differences"]
    lines.append(f"  {'change':>11} {'change%':>8} {'before':>10} {'after':>10} {'runs':>11}  name")
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
                "entries": [_entry_json(e) for e in view.entries],
            }
            for name, view in diff.views.items()
        },
    }
