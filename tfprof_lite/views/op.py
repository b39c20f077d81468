"""Op view (``profile_operations``, cmd ``op``): graph nodes grouped by op type.

One row per distinct GraphDef op string. Rows are sorted by ``order_by`` with
tfprof's (unstable) ``std::sort``; totals are suffix sums ("this row and every
row below it"); ``max_depth`` counts rows from 0 and ``trim_name_regexes`` stops
the listing. Options read: all of them.
"""

from __future__ import annotations

from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.options.options import Options
from tfprof_lite.options.regex import full_match_any
from tfprof_lite.views.multi import fill_multi
from tfprof_lite.views.node import ROOT_NAME, QueryContext, ShowNode
from tfprof_lite.views.result import ViewResult
from tfprof_lite.views.sorting import multi_sorted
from tfprof_lite.views.stats import N_STATS, add_into
from tfprof_lite.views.tree import should_show

__all__ = ["OpView"]


class OpView:
    """Groups graph nodes by op type and answers queries."""

    name = "op"

    def __init__(self, model: ProfileModel) -> None:
        self.model = model
        self._cached: dict[str, list[int]] | None = None
        self._version = (-1, -1)

    def _groups(self) -> dict[str, list[int]]:
        """Op type -> its graph nodes in name order (cached per graph version)."""
        model = self.model
        version = (model.graph_version, model.view_extent(self.name))
        if self._cached is None or self._version != version:
            groups: dict[str, list[int]] = {}
            for nid in sorted(range(version[1]), key=model.names.__getitem__):
                groups.setdefault(model.ops[nid], []).append(nid)
            self._cached = dict(sorted(groups.items()))
            self._version = version
        return self._cached

    def query(self, opts: Options) -> ViewResult:
        """Run one query; ``rows`` of the result are the displayed rows in order."""
        ctx = QueryContext(self.model, opts)
        root = ShowNode(ROOT_NAME, -1, [0] * N_STATS)
        entries = []
        for op, nids in self._groups().items():
            entry = ShowNode(op, -1)
            fill_multi(entry, nids, ctx)
            entry.reset_to_self()
            entries.append(entry)
        accounted = [e for e in multi_sorted(entries, opts.order_by) if e.account]
        _suffix_sums(accounted, root)
        shown = self._display(accounted, opts)
        if opts.account_displayed_op_only:
            for entry in shown:
                entry.reset_to_self()
            root.total = [0] * N_STATS
            _suffix_sums(shown, root)
        root.children = shown
        return ViewResult(
            view=self.name,
            root=root,
            opts=opts,
            model=self.model,
            rows=shown,
            has_entries=bool(entries),
        )

    @staticmethod
    def _display(accounted: list[ShowNode], opts: Options) -> list[ShowNode]:
        start = _start_index(accounted, opts.start_name_regexes)
        shown: list[ShowNode] = []
        for depth, entry in enumerate(accounted[start:]):
            if full_match_any(opts.trim_name_regexes, entry.name) or depth > opts.max_depth:
                break
            if opts.min_occurrence > entry.occurrence:
                continue
            if should_show(entry, opts, depth, code_view=True):
                shown.append(entry)
        return shown


def _suffix_sums(entries: list[ShowNode], root: ShowNode) -> None:
    """Each entry's total += total of the entry after it; root gets the first total."""
    for i in range(len(entries) - 2, -1, -1):
        add_into(entries[i].total, entries[i + 1].total)
    if entries:
        add_into(root.total, entries[0].total)


def _start_index(entries: list[ShowNode], patterns: tuple[str, ...]) -> int:
    if not patterns or list(patterns) == [".*"]:
        return 0
    for i, entry in enumerate(entries):
        if full_match_any(patterns, entry.name):
            return i
    return len(entries)
