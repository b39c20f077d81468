"""The corrected FLOP table: one :class:`FlopRow` per op, gathered in a
:class:`FlopTable`, and their text rendering (:func:`format_flop_table`, on the
small column helper :func:`text_table` the FLOP reports share).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tfprof_lite.model.flops.conventions import STATUS_ZERO, FlopConventions

__all__ = ["FlopRow", "FlopTable", "format_flop_table", "text_table"]


@dataclass(frozen=True)
class FlopRow:
    """FLOPs of one op (a graph node or an op inside a function body).

    Attributes:
        name: graph node name, or ``<caller>/<kind>/<node>`` for a function-body op
            (kind ``body``/``cond``/``then``/``else``/``branch<i>``; calls: no kind).
        op: op type.
        flops: our FLOPs per execution (TensorFlow's when ours failed, status
            ``tf_fallback``), or None.
        tf_flops: TensorFlow's registered value on the graph's current static
            shapes (None when it gives none; always None in function bodies).
        count: executions the totals multiply ``flops`` by: the RunMetadata's
            record count; for graph nodes never recorded 1 (tfprof's static rule);
            for body ops without records the body's count; None when unknown.
        runs: record count in the RunMetadata (None: no record / no RunMetadata).
        status: ``tf``, ``corrected``, ``added``, ``tf_fallback``, ``zero``, ``missing``.
        reason: why ``flops`` is ours-missing (``REASON_*``), else None.
        tf_reason: why TensorFlow has no value (``REASON_*``), else None.
        detail: why our value is missing or not counted, in words.
        tf_detail: why TensorFlow has no value, in words (its error message).
        function: the function the op lives in (None for graph nodes).
        caller: the outermost GraphDef node the function body hangs off.
        runtime_names: RunMetadata node names of this op (pseudo nodes in tfprof).
    """

    name: str
    op: str
    flops: int | None
    tf_flops: int | None
    count: int | None
    runs: int | None
    status: str
    reason: str | None = None
    tf_reason: str | None = None
    detail: str = ""
    tf_detail: str = ""
    function: str | None = None
    caller: str | None = None
    runtime_names: tuple[str, ...] = ()

    @property
    def in_function(self) -> bool:
        """True for an op inside a function body."""
        return self.function is not None

    @property
    def total(self) -> int | None:
        """``flops x count`` when both are known."""
        if self.flops is None or self.count is None:
            return None
        return self.flops * self.count

    def to_dict(self) -> dict[str, Any]:
        """The row as JSON-ready data."""
        return {
            "name": self.name,
            "op": self.op,
            "flops": self.flops,
            "tf_flops": self.tf_flops,
            "count": self.count,
            "runs": self.runs,
            "total": self.total,
            "status": self.status,
            "reason": self.reason,
            "tf_reason": self.tf_reason,
            "detail": self.detail,
            "tf_detail": self.tf_detail,
            "function": self.function,
            "caller": self.caller,
            "runtime_names": list(self.runtime_names),
        }


@dataclass(frozen=True)
class FlopTable:
    """The corrected FLOP table of one graph (and optional RunMetadata).

    Attributes:
        rows: graph nodes in graph order, each followed by its function bodies.
        conventions: the counting conventions used.
        with_run_meta: whether a RunMetadata refined shapes and counts.
        notes: what was refined or could not be loaded.
    """

    rows: tuple[FlopRow, ...]
    conventions: FlopConventions
    with_run_meta: bool
    notes: tuple[str, ...] = ()

    def __iter__(self) -> Iterator[FlopRow]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def row(self, name: str) -> FlopRow:
        """The row called ``name`` (KeyError if none)."""
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(name)

    @property
    def total_flops(self) -> int:
        """Sum of ``flops x count`` over rows where both are known."""
        return sum(row.total or 0 for row in self.rows)

    @property
    def tf_total_flops(self) -> int:
        """Sum of TensorFlow's values x count (graph nodes only; what tfprof shows)."""
        return sum((row.tf_flops or 0) * (row.count or 0) for row in self.rows)

    @property
    def unknown_count(self) -> tuple[FlopRow, ...]:
        """Rows with FLOPs but an unknown execution count (not in the totals)."""
        return tuple(r for r in self.rows if r.flops and r.count is None)

    def to_dict(self) -> dict[str, Any]:
        """The table as JSON-ready data."""
        return {
            "conventions": self.conventions.describe(),
            "with_run_meta": self.with_run_meta,
            "total_flops": self.total_flops,
            "tf_total_flops": self.tf_total_flops,
            "notes": list(self.notes),
            "rows": [row.to_dict() for row in self.rows],
        }

    def format_text(self, only_changed: bool = False) -> str:
        """The table as text (see :func:`format_flop_table`)."""
        return format_flop_table(self, only_changed=only_changed)


def text_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """Left-aligned columns under a header and a dashed rule; the last column is
    not padded. Returns the lines."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]

    def line(cells: list[str]) -> str:
        padded = [c.ljust(w) for c, w in zip(cells, widths)] + [cells[-1]]
        return "  ".join(padded).rstrip()

    return [line(header), line(["-" * len(h) for h in header])] + [line(r) for r in rows]


def format_flop_table(table: FlopTable, only_changed: bool = False) -> str:
    """A FlopTable as text: one line per op, then the totals.

    ``only_changed`` keeps rows whose value differs from TensorFlow's or is
    missing (statuses ``corrected``, ``added``, ``tf_fallback``, ``missing``).
    """
    keep = ("corrected", "added", "tf_fallback", "missing")
    rows = [
        r for r in table.rows if r.status != STATUS_ZERO and (not only_changed or r.status in keep)
    ]
    cells = [
        [
            r.name,
            r.op,
            _num(r.tf_flops),
            _num(r.flops),
            _num(r.count),
            _num(r.total),
            r.status,
            r.reason or (f"tf: {r.tf_reason}" if r.tf_reason else ""),
        ]
        for r in rows
    ]
    lines = text_table(
        ["name", "op", "tf", "corrected", "count", "total", "status", "reason"], cells
    )
    lines += [
        "",
        f"total corrected FLOPs: {table.total_flops} (TensorFlow: {table.tf_total_flops}); "
        f"conventions: {table.conventions.describe()}",
    ]
    unknown = table.unknown_count
    if unknown:
        lines.append(f"{len(unknown)} op(s) with FLOPs but unknown executions are not in the total")
    lines += [f"note: {note}" for note in table.notes]
    return "\n".join(lines) + "\n"


def _num(value: int | None) -> str:
    return "-" if value is None else str(value)
