"""What a text report line shows and in which order, per view.

Contract: :func:`selection` turns the ``select`` option into a :class:`Selection`
(the selected names and the statistics they show, ``micros`` showing three);
:func:`legend` is the ``node name | ...`` line of a view, each field named by the
metric table (:mod:`tfprof_lite.base.metrics`) and in tfprof's order for that
view: counts first in the scope and graph views, after memory and time in the
code and op views.
"""

from __future__ import annotations

from dataclasses import dataclass

from tfprof_lite.base.metrics import (
    ACC,
    ATTRIBUTES,
    BY_STAT,
    CPU,
    EXEC,
    FLOPS,
    OUTPUT,
    PARAMS,
    PEAK,
    REQUESTED,
    RESIDUAL,
    RUN,
    Metric,
    shown_stats,
)
from tfprof_lite.base.units import format_shape

__all__ = ["Selection", "input_shape", "legend", "selection"]

_MEMORY = (REQUESTED, PEAK, RESIDUAL, OUTPUT)
_TIME = (EXEC, ACC, CPU)
_COUNTS = (PARAMS, FLOPS)
_ATTRS = ("device", "op_types", RUN, "input_shapes")
# The fields of a line, in order: scope and graph views, then code and op views.
_TREE_ORDER: tuple[int | str, ...] = (*_COUNTS, *_MEMORY, *_TIME, *_ATTRS)
_FLAT_ORDER: tuple[int | str, ...] = (*_MEMORY, *_TIME, *_COUNTS, *_ATTRS)
_ATTRIBUTE_LEGENDS = {a.select: a.legend for a in ATTRIBUTES}


@dataclass(frozen=True)
class Selection:
    """The selected names and the statistics they show, by group, in line order."""

    names: frozenset[str]
    stats: frozenset[int]
    memory: tuple[Metric, ...]
    time: tuple[Metric, ...]
    counts: tuple[Metric, ...]

    def __contains__(self, name: object) -> bool:
        return name in self.names


def selection(select: tuple[str, ...]) -> Selection:
    """The :class:`Selection` of a ``select`` option."""
    stats = shown_stats(select)

    def group(order: tuple[int, ...]) -> tuple[Metric, ...]:
        return tuple(BY_STAT[stat] for stat in order if stat in stats)

    return Selection(frozenset(select), stats, group(_MEMORY), group(_TIME), group(_COUNTS))


def legend(sel: Selection, view: str) -> str:
    """The legend line of ``view``'s report: ``node name | <field> | ...``."""
    tree = view in ("scope", "graph")
    names: list[str] = []
    for item in _TREE_ORDER if tree else _FLAT_ORDER:
        if isinstance(item, str):
            if item in sel.names:
                names.append(_ATTRIBUTE_LEGENDS[item])
        elif item in sel.stats:
            metric = BY_STAT[item]
            names.append(metric.tree_legend or metric.legend if tree else metric.legend)
    return "node name | " + " | ".join(names) + "\n"


def input_shape(pos: int, dims: list[int]) -> str:
    """One input's ``pos:shape`` (``pos:unknown`` without a shape)."""
    return f"{pos}:{format_shape(dims)}" if dims else f"{pos}:unknown"
