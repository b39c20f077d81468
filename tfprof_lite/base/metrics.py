"""The metric table: every statistic a profile node carries, described once.

Contract:

* :data:`METRICS` has one frozen :class:`Metric` row per statistic of the
  per-node vector (the vector's index is :attr:`Metric.stat`; the constants
  :data:`EXEC`, :data:`REQUESTED`, ... name them). A row says which ``-select``
  / ``-order_by`` name reads it, how values are printed, the text report's legend
  and Doc text (tfprof's exact wording), the pprof sample type, the HTML report's
  column title and glossary entry, and where the model takes it from.
* :data:`ATTRIBUTES` lists the selectable attributes that are not statistics
  (device, op types, input shapes, tensor values), with their legend and Doc text.
* :data:`SELECT_NAMES` and :data:`ORDER_BY_NAMES` are tfprof's lists of
  ``-select`` and ``-order_by`` values, in tfprof's order.
* Every layer reads this module (options, the model, views, outputs, the report),
  so adding a statistic is one row here plus its computation in the model.
* Rows are in display order (time, memory, counts, then occurrence), the order in
  which pprof lists sample types and the report's glossary lists terms.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from tfprof_lite.base.units import format_memory, format_number, format_time

__all__ = [
    "ACC",
    "ATTRIBUTES",
    "BY_SELECT",
    "BY_STAT",
    "CPU",
    "DEFINITION",
    "EXEC",
    "FLOPS",
    "METRICS",
    "N_STATS",
    "ORDER_BY_NAMES",
    "OUTPUT",
    "PARAMS",
    "PEAK",
    "REQUESTED",
    "RESIDUAL",
    "RUN",
    "SELECT_NAMES",
    "Attribute",
    "Metric",
    "select_doc",
    "shown_stats",
]

# Positions in the per-node statistics vector.
DEFINITION = 0
RUN = 1
EXEC = 2
ACC = 3
CPU = 4
REQUESTED = 5
PEAK = 6
RESIDUAL = 7
OUTPUT = 8
PARAMS = 9
FLOPS = 10

#: How values of each kind of statistic are printed.
_FORMATS: dict[str, Callable[[int], str]] = {
    "time": format_time,
    "bytes": format_memory,
    "count": format_number,
}


@dataclass(frozen=True)
class Metric:
    """One statistic of the per-node vector and every name it goes by.

    Attributes:
        stat: its position in the per-node statistics vector.
        name: the ``NodeStats`` column, returned-message field (``total_`` + name
            for totals) and JSON/CSV column it is known as.
        select: the ``-select`` (and ``-order_by``) name reading it; empty if none.
        kind: ``time`` (microseconds), ``bytes`` or ``count``: how it is printed.
        legend: the text report's legend of its field.
        doc: the Doc text printed when ``select`` is chosen (tfprof's text).
        shows: the other statistics its ``select`` shows in text and tables.
        tree_legend: the scope and graph views' legend, when it differs.
        suffix: the word after a value in the text report's tree lines.
        order_by: whether ``-order_by select`` sorts by its total.
        per_step: whether the model sums it from each step's records.
        memory: whether it is a field of each step's memory records too.
        pprof_unit: the pprof sample type's unit (empty: not a pprof sample type).
        pprof_comment: the comment of tfprof's pprof profile for it.
        title: the HTML report's column title.
        term: the HTML report's glossary term for it.
        glossary: the glossary's definition of ``term``.
    """

    stat: int
    name: str
    select: str
    kind: str
    legend: str
    doc: str
    shows: tuple[int, ...] = ()
    tree_legend: str = ""
    suffix: str = ""
    order_by: bool = True
    per_step: bool = True
    memory: bool = False
    pprof_unit: str = ""
    pprof_comment: str = ""
    title: str = ""
    term: str = ""
    glossary: str = ""

    def format(self, value: int) -> str:
        """``value`` as the text report prints it (``1.23ms``, ``4.5KB``, ``12.3k``)."""
        return _FORMATS[self.kind](value)


@dataclass(frozen=True)
class Attribute:
    """A selectable attribute that is not a statistic (text shown per node).

    Attributes:
        select: its ``-select`` name.
        legend: the text report's legend of its field (empty: never shown).
        doc: the Doc text printed when it is selected (tfprof's text).
    """

    select: str
    legend: str
    doc: str


_TOTAL_DOC = "total execution time: Sum of accelerator execution time and cpu execution time."
_CPU_DOC = (
    "cpu execution time: The time from the start to the end of the operation. It's the sum "
    "of actual cpu run time plus the time that it spends waiting if part of computation is "
    "launched asynchronously."
)
_ACC_DOC = (
    "accelerator execution time: Time spent executing on the accelerator. This is normally "
    "measured by the actual hardware library."
)

#: Every statistic, in display order.
METRICS: tuple[Metric, ...] = (
    Metric(
        EXEC,
        "exec_micros",
        "micros",
        "time",
        "total execution time",
        "\n".join((_TOTAL_DOC, _CPU_DOC, _ACC_DOC)),
        shows=(ACC, CPU),
        per_step=False,
        pprof_unit="microseconds",
        pprof_comment="Sum of accelerator execution time and cpu execution time.",
        title="Time",
        term="Total execution time",
        glossary="Accelerator time plus CPU time.",
    ),
    Metric(
        ACC,
        "accelerator_exec_micros",
        "accelerator_micros",
        "time",
        "accelerator execution time",
        _ACC_DOC,
        pprof_unit="microseconds",
        pprof_comment="Accelerator execution time.",
        title="Accelerator",
        term="Accelerator time",
        glossary="Time spent executing on an accelerator (GPU/TPU), as measured by the "
        "device library (the stream:all records). 0 on CPU-only machines.",
    ),
    Metric(
        CPU,
        "cpu_exec_micros",
        "cpu_micros",
        "time",
        "cpu execution time",
        _CPU_DOC,
        pprof_unit="microseconds",
        pprof_comment="CPU execution time.",
        title="CPU",
        term="CPU time",
        glossary="Time from the start to the end of the op on its host-side device, "
        "including time spent waiting for work it launched asynchronously. On a GPU this "
        "is the launch cost, so it can exceed the accelerator time.",
    ),
    Metric(
        REQUESTED,
        "requested_bytes",
        "bytes",
        "bytes",
        "requested bytes",
        "requested bytes: The memory requested by the operation, accumulatively.",
        memory=True,
        pprof_unit="bytes",
        pprof_comment="Sum of operation total memory requests, excluding deallocations.",
        title="Requested",
        term="Requested bytes",
        glossary="Memory the op requested (allocations, temporary and persistent "
        "memory), added up over its run.",
    ),
    Metric(
        PEAK,
        "peak_bytes",
        "peak_bytes",
        "bytes",
        "peak bytes",
        "peak bytes: The peak amount of memory that the operation is holding at some point.",
        memory=True,
        pprof_unit="bytes",
        pprof_comment="Sum of operation peak memory usage.",
        title="Peak",
        term="Peak bytes",
        glossary="The most memory the op held at one time.",
    ),
    Metric(
        RESIDUAL,
        "residual_bytes",
        "residual_bytes",
        "bytes",
        "residual bytes",
        "residual bytes: The memory not de-allocated after the operation finishes.",
        memory=True,
        pprof_unit="bytes",
        pprof_comment="Sum of operation allocated memory after finish.",
        title="Residual",
        term="Residual bytes",
        glossary="Memory the op still held when it finished (not freed), such as "
        "outputs still in use and persistent memory.",
    ),
    Metric(
        OUTPUT,
        "output_bytes",
        "output_bytes",
        "bytes",
        "output bytes",
        "output bytes: The memory that is output from the operation (not necessarily "
        "allocated by the operation)",
        memory=True,
        pprof_unit="bytes",
        pprof_comment="Sum of operation output size.",
        title="Output",
        term="Output bytes",
        glossary="Size of the op's outputs (not necessarily allocated by the op).",
    ),
    Metric(
        PARAMS,
        "parameters",
        "params",
        "count",
        "# parameters",
        "param: Number of parameters (in the Variable).",
        suffix="params",
        per_step=False,
        pprof_unit="count",
        pprof_comment="Model parameters.",
        title="Params",
        term="Params",
        glossary="Number of parameters: the product of a variable's shape.",
    ),
    Metric(
        FLOPS,
        "float_ops",
        "float_ops",
        "count",
        "# float_ops",
        "flops: Number of float operations. Note: Please read the implementation for the "
        "math behind it.",
        suffix="flops",
        per_step=False,
        pprof_unit="count",
        pprof_comment="Model float operations (Only available if defined).",
        title="FLOPs (defined)",
        term="FLOPs (defined)",
        glossary="tfprof's FLOP count, per defined node: the op log's static count times "
        "the runs for a node that ran, and the static count once for a node that did not "
        "run (grappler merged it into an identical node, or the step did not need it), so a "
        "row can show FLOPs with no time. The overview's FLOPs-per-step card and the FLOP "
        "rates of tfprof-lite overview count only the nodes that ran.",
    ),
    Metric(
        RUN,
        "run_count",
        "occurrence",
        "count",
        "op occurrence (run|defined)",
        "occurrence: The number of times it occurs",
        tree_legend="op count (run|defined)",
        order_by=False,
        title="Runs",
        term="Runs",
        glossary="How many times the nodes ran in the query step (per-node average for -step -1).",
    ),
    Metric(DEFINITION, "definition_count", "", "count", "", "", per_step=False),
)

#: The statistics by position in the per-node vector.
BY_STAT: tuple[Metric, ...] = tuple(sorted(METRICS, key=lambda m: m.stat))
#: Length of the per-node statistics vector.
N_STATS = len(BY_STAT)
#: The statistics by ``-select`` name.
BY_SELECT: dict[str, Metric] = {m.select: m for m in METRICS if m.select}

#: The selectable attributes that are not statistics.
ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute("tensor_value", "", "tensor_value: Not supported now."),
    Attribute("device", "assigned devices", "device: which device is placed on."),
    Attribute(
        "op_types",
        "op types",
        "op_types: The attributes of the operation, includes the Kernel name device placed "
        "on and user-defined strings.",
    ),
    Attribute("input_shapes", "input shapes", "input shape: The shape of input tensors"),
)

#: The ``select`` values tfprof knows (``kShown``, in tfprof's order).
SELECT_NAMES: tuple[str, ...] = (
    "bytes",
    "micros",
    "params",
    "float_ops",
    "tensor_value",
    "device",
    "op_types",
    "occurrence",
    "input_shapes",
    "accelerator_micros",
    "cpu_micros",
    "peak_bytes",
    "residual_bytes",
    "output_bytes",
)

#: The ``order_by`` values the tfprof CLI accepts (``kOrderBy``, in tfprof's order).
ORDER_BY_NAMES: tuple[str, ...] = (
    "name",
    "bytes",
    "peak_bytes",
    "residual_bytes",
    "output_bytes",
    "micros",
    "accelerator_micros",
    "cpu_micros",
    "params",
    "float_ops",
    "occurrence",
)

_DOCS: dict[str, str] = {
    **{m.select: m.doc for m in METRICS if m.select},
    **{a.select: a.doc for a in ATTRIBUTES},
}


def select_doc(select: str) -> str:
    """The Doc text tfprof prints for a selected attribute (``Unknown select: x`` if none)."""
    return _DOCS.get(select, f"Unknown select: {select}")


def shown_stats(selects: Iterable[str]) -> frozenset[int]:
    """The statistics the selected names show (``micros`` shows three)."""
    out: set[int] = set()
    for select in selects:
        metric = BY_SELECT.get(select)
        if metric is not None:
            out.update((metric.stat, *metric.shows))
    return frozenset(out)
