"""Reports on FLOP coverage: which ops TensorFlow's tfprof gives no FLOPs, and why.

Contract
--------
* :func:`missing_from_table` turns a :class:`~tfprof_lite.model.flops.FlopTable`
  into a :class:`MissingFlopsReport`: one :class:`MissingFlops` per op for which
  TensorFlow's op log has no FLOP value (no registered formula, incomplete shape,
  unsupported ``data_format``, inside a function body, error), with what the
  corrected table recovers. Ops that do no arithmetic by our convention
  (``ZERO_COST_OPS``: Const, Identity, Reshape...) are only counted unless
  ``include_zero_cost=True``.
* Renderings are deterministic: ``to_text()`` (summary by reason, then one line per
  op sorted by reason and name) and ``to_json()`` / ``to_dict()``. A whole
  FlopTable renders itself (``FlopTable.format_text``).

Nothing here imports TensorFlow; building the table does
(:func:`tfprof_lite.capture.flops.missing_flops_report`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tfprof_lite.model.flops import (
    REASON_DATA_FORMAT,
    REASON_ERROR,
    REASON_FUNCTION_BODY,
    REASON_INCOMPLETE_SHAPE,
    REASON_NO_FORMULA,
    STATUS_ZERO,
    FlopRow,
    FlopTable,
    text_table,
)

__all__ = [
    "REASON_TEXT",
    "MissingFlops",
    "MissingFlopsReport",
    "missing_from_table",
]

#: One-line explanation of each reason, in report order.
REASON_TEXT: dict[str, str] = {
    REASON_NO_FORMULA: "TensorFlow registers no flops statistics for the op type",
    REASON_INCOMPLETE_SHAPE: "a shape the formula needs is not fully defined",
    REASON_DATA_FORMAT: "the formula supports only data_format NHWC",
    REASON_FUNCTION_BODY: "inside a function body (control flow v2 / tf.function): "
    "not a GraphDef node, never counted",
    REASON_ERROR: "the formula raised an unexpected error",
}


@dataclass(frozen=True)
class MissingFlops:
    """One op without a FLOP value in TensorFlow's op log.

    Attributes:
        name: node name, or ``<caller>/<kind>/<node>`` inside a function body.
        op: op type.
        reason: TensorFlow's reason (a key of :data:`REASON_TEXT`).
        detail: TensorFlow's error message or what the op lives in.
        corrected: our FLOPs per execution, or None.
        count: executions the corrected total multiplies by (None: unknown).
        corrected_reason: why the corrected value is missing or not counted.
        corrected_detail: that reason in words.
        function: the function the op lives in (None for graph nodes).
    """

    name: str
    op: str
    reason: str
    detail: str
    corrected: int | None
    count: int | None
    corrected_reason: str | None
    corrected_detail: str
    function: str | None

    @property
    def recovered(self) -> bool:
        """True when the corrected table counts this op (value and count known)."""
        return self.corrected is not None and self.count is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data."""
        return {
            "name": self.name,
            "op": self.op,
            "reason": self.reason,
            "detail": self.detail,
            "corrected_flops": self.corrected,
            "count": self.count,
            "recovered": self.recovered,
            "corrected_reason": self.corrected_reason,
            "corrected_detail": self.corrected_detail,
            "function": self.function,
        }


@dataclass(frozen=True)
class MissingFlopsReport:
    """Ops TensorFlow gives no FLOPs, with reasons and what the corrected table adds.

    Attributes:
        entries: sorted by reason (report order) then name.
        zero_cost_ops: ops left out because they do no arithmetic by convention.
        with_run_meta: whether a RunMetadata refined shapes and counts.
        conventions: the corrected table's conventions, in words.
        notes: the table's notes (refinements, function bodies that failed to load).
    """

    entries: tuple[MissingFlops, ...]
    zero_cost_ops: int
    with_run_meta: bool
    conventions: str
    notes: tuple[str, ...] = ()

    def by_reason(self) -> dict[str, tuple[int, int]]:
        """Reason -> (ops, ops the corrected table recovers), in report order."""
        ops = Counter(e.reason for e in self.entries)
        recovered = Counter(e.reason for e in self.entries if e.recovered)
        return {r: (ops[r], recovered[r]) for r in _reason_order(ops)}

    def names(self, reason: str | None = None) -> list[str]:
        """Names of the listed ops (of one reason when given)."""
        return [e.name for e in self.entries if reason is None or e.reason == reason]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data: ``summary`` and ``ops``."""
        return {
            "summary": {
                "ops": len(self.entries),
                "recovered": sum(e.recovered for e in self.entries),
                "zero_cost_ops_omitted": self.zero_cost_ops,
                "with_run_meta": self.with_run_meta,
                "conventions": self.conventions,
                "notes": list(self.notes),
                "by_reason": {
                    reason: {"ops": n, "recovered": rec, "meaning": REASON_TEXT.get(reason, "")}
                    for reason, (n, rec) in self.by_reason().items()
                },
            },
            "ops": [e.to_dict() for e in self.entries],
        }

    def to_json(self, indent: int | None = 2) -> str:
        """The report as JSON text (keys in a fixed order)."""
        return json.dumps(self.to_dict(), indent=indent)

    def to_text(self) -> str:
        """The report as text: a summary by reason, then one line per op."""
        lines = [
            f"Ops without FLOPs in TensorFlow's tfprof: {len(self.entries)} "
            f"(corrected table recovers {sum(e.recovered for e in self.entries)})",
            f"Conventions: {self.conventions}; RunMetadata: "
            f"{'yes' if self.with_run_meta else 'no'}; "
            f"{self.zero_cost_ops} ops without arithmetic not listed",
            "",
        ]
        lines += text_table(
            ["reason", "ops", "recovered", "meaning"],
            [
                [r, str(n), str(rec), REASON_TEXT.get(r, "")]
                for r, (n, rec) in self.by_reason().items()
            ],
        )
        if self.entries:
            lines.append("")
            lines += text_table(
                ["name", "op", "reason", "corrected", "detail"],
                [_entry_cells(e) for e in self.entries],
            )
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines) + "\n"


def _entry_cells(entry: MissingFlops) -> list[str]:
    if entry.corrected is None:
        corrected = f"- ({entry.corrected_reason})"
    elif entry.count is None:
        corrected = f"{entry.corrected}/run, runs unknown"
    elif entry.count == 1:
        corrected = str(entry.corrected)
    else:
        corrected = f"{entry.corrected} x {entry.count}"
    return [entry.name, entry.op, entry.reason, corrected, entry.detail or entry.corrected_detail]


def _reason_order(reasons: Iterable[str]) -> list[str]:
    order = list(REASON_TEXT)
    return sorted(set(reasons), key=lambda r: (order.index(r) if r in order else len(order), r))


def _entry(row: FlopRow) -> MissingFlops:
    return MissingFlops(
        name=row.name,
        op=row.op,
        reason=row.tf_reason or REASON_ERROR,
        detail=row.tf_detail,
        corrected=row.flops,
        count=row.count,
        corrected_reason=row.reason,
        corrected_detail=row.detail,
        function=row.function,
    )


def missing_from_table(table: FlopTable, include_zero_cost: bool = False) -> MissingFlopsReport:
    """The missing-FLOPs report of a table built with TensorFlow's values compared."""
    order = list(REASON_TEXT)
    entries: list[MissingFlops] = []
    zero = 0
    for row in table.rows:
        if row.tf_flops is not None or row.tf_reason is None:
            continue  # TensorFlow has a value (or it was not compared)
        if row.status == STATUS_ZERO and not include_zero_cost:
            zero += 1
            continue
        entries.append(_entry(row))
    entries.sort(key=lambda e: (order.index(e.reason) if e.reason in order else len(order), e.name))
    return MissingFlopsReport(
        tuple(entries), zero, table.with_run_meta, table.conventions.describe(), table.notes
    )
