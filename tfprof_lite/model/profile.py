"""The profile store: graph nodes, op-log data and per-step execution records.

:class:`ProfileModel` is tfprof's TFStats data without the views. Nodes get ids in
first-seen order (GraphDef nodes, then pseudo nodes met in RunMetadata). Per-node
static data lives in parallel lists; per-step execution data lives in
:class:`~tfprof_lite.model.execs.StepExecs` columns. :meth:`ProfileModel.stats`
turns them into dense per-node arrays for one query step, applying tfprof's rules
(per-node averaging for step -1, FLOPs x run count once executed).
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Hashable, Iterable, Sequence
from itertools import compress
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from tfprof_lite._native import active
from tfprof_lite.model.execs import RunningSums, StepExecs
from tfprof_lite.model.node_details import (
    DetailColumn,
    OpTypesColumn,
    PendingDetails,
    graph_rows,
    make_op_types,
)
from tfprof_lite.model.records import CodeFrame, NodeSpec, OpLogEntrySpec
from tfprof_lite.model.step_ingest import ingest_step
from tfprof_lite.model.step_sums import NodeStats, compute_stats, fold_step, running_sums
from tfprof_lite.model.traces import DeferredTraces
from tfprof_lite.proto.graphs import DETAILS, GraphColumns, OpLogColumns
from tfprof_lite.proto.steps import StepColumns

if TYPE_CHECKING:
    from tfprof_lite.model.step_spans import TraceInput
    from tfprof_lite.model.window import EventWindow
    from tfprof_lite.model.xla_programs import XlaPrograms

__all__ = ["NodeStats", "ProfileModel"]

log = logging.getLogger("tfprof_lite")

IntArray = npt.NDArray[np.int64]
_T = TypeVar("_T")
_I64_WRAP = 1 << 63
#: The node columns made on first read (stored as ``_<name>``).
_LAZY = (*DETAILS, "op_types")


class ProfileModel(DeferredTraces):
    """Graph nodes plus execution records of every added step.

    The GraphDef detail columns (``inputs`` .. ``str_attrs``) may be decoded on
    first read (see :mod:`tfprof_lite.model.node_details`).
    """

    op_types = OpTypesColumn()
    shapes: DetailColumn[list[int] | None] = DetailColumn()
    output_shapes: DetailColumn[dict[int, list[int]]] = DetailColumn()
    inputs: DetailColumn[dict[int, str]] = DetailColumn()
    src_output: DetailColumn[dict[str, int]] = DetailColumn()
    attrs: DetailColumn[dict[str, bytes]] = DetailColumn()
    str_attrs: DetailColumn[dict[str, str]] = DetailColumn()

    def __init__(self) -> None:
        self.names: list[str] = []
        self.ops: list[str] = []
        self.index: dict[str, int] = {}
        self._op_types: list[set[str]] = []
        #: Types op logs gave nodes whose op type sets are not made yet.
        self.pending_types: dict[int, set[str]] = {}
        self.pending_details = PendingDetails()
        #: Held while columns made on first read are made.
        self.lazy_lock = threading.Lock()
        self._shapes: list[list[int] | None] = []
        self._output_shapes: list[dict[int, list[int]]] = []
        self._inputs: list[dict[int, str]] = []
        self._src_output: list[dict[str, int]] = []
        self._attrs: list[dict[str, bytes]] = []
        self._str_attrs: list[dict[str, str]] = []
        self.static_float_ops: list[int] = []
        self.traces = []
        self.canonical_device: list[str] = []
        self.host_device: list[str] = []
        self.has_execs: list[bool] = []
        self.steps: dict[int, StepExecs] = {}
        self.id_to_string: dict[int, str] = {}
        self.has_trace = False
        self.miss_accelerator_stream = False
        #: How the steps were found, for profiles read from XSpace files
        #: ("step markers (train)", "inferred: ..."); empty otherwise.
        self.steps_source = ""
        self.cut_steps: dict[int, str] = {}  # XSpace steps not whole -> why (xspace_cut)
        # What a profile with a window around its steps (an XSpace) adds; TF1: None.
        self.xla_programs: XlaPrograms | None = None  # the XLA programs, their ops' times
        self.trace_input: TraceInput | None = None  # step parts, tf.data stages
        self.event_window: EventWindow | None = None  # every event of the window
        self.covered: set[int] = set()
        self.graph_version = 0
        self.data_version = 0
        self._view_extents: dict[str, int] = {}
        #: Whether views keep the nodes they were first built with, as in tfprof
        #: (see :meth:`view_extent`); False makes every view cover every node.
        self.freeze_views = True
        self._stats_cache: dict[int, NodeStats] = {}
        self._running: RunningSums | None = None
        self._stats_version = -1
        self._derived: dict[Hashable, Any] = {}
        self._derived_version = (-1, -1)
        self._per_graph: dict[Hashable, Any] = {}
        self._per_graph_version = -1

    # ----------------------------------------------------------------- nodes
    def __len__(self) -> int:
        return len(self.names)

    def _new_node(self, name: str, op: str, spec: NodeSpec | None = None) -> int:
        """Append a node (with its GraphDef data when ``spec`` is given); returns its id."""
        nid = len(self.names)
        self.pending_details.pad(self, nid)
        self.names.append(name)
        self.ops.append(op)
        self.index[name] = nid
        if len(self._op_types) == nid:  # else made with the others on first read
            self._op_types.append({op})
        if spec is None:
            self._shapes.append(None)
            self._output_shapes.append({})
            self._inputs.append({})
            self._src_output.append({})
            self._attrs.append({})
            self._str_attrs.append({})
        else:
            self._shapes.append(spec.shape)
            self._output_shapes.append(spec.output_shapes)
            self._inputs.append({pos: src for pos, (src, _idx) in enumerate(spec.inputs)})
            # tfprof parses the ':N' suffix only in debug builds (a DCHECK), so
            # every input reads output 0 of its producer; keep that behaviour.
            self._src_output.append({src: 0 for src, _idx in spec.inputs})
            self._attrs.append(spec.attrs)
            self._str_attrs.append(spec.str_attrs)
        self.static_float_ops.append(0)
        self.traces.append(None)
        self.canonical_device.append("")
        self.host_device.append("")
        self.has_execs.append(False)
        self.graph_version += 1
        return nid

    def load_node(self, name: str, op: str) -> int:
        """Append a node read from a saved profile; returns its id."""
        return self._new_node(name, op)

    def extend_nodes(
        self, names: Sequence[str], ops: Sequence[str], **loaded: Sequence[Any]
    ) -> int:
        """Append nodes read from a saved profile, as :meth:`load_node` would one
        by one; returns the first one's id.

        ``loaded`` may give, per node, the values of any of the per-node lists
        (``inputs``, ``src_output``, ``output_shapes``, ``shapes``, ``op_types``,
        ``canonical_device``, ``host_device``, ``static_float_ops``, ``traces``,
        ``attrs``, ``has_execs``) instead of the defaults of a bare node.
        """
        base = len(self.names)
        n = len(names)
        self.pending_details.pad(self, base)
        make_op_types(self)  # the sets of the nodes so far, before these are added
        self.names.extend(names)
        self.ops.extend(ops)
        self.index.update(zip(names, range(base, base + n)))
        defaults: dict[str, Callable[[], Iterable[Any]]] = {
            "op_types": lambda: ({op} for op in ops),
            "output_shapes": lambda: ({} for _ in range(n)),
            "inputs": lambda: ({} for _ in range(n)),
            "src_output": lambda: ({} for _ in range(n)),
            "attrs": lambda: ({} for _ in range(n)),
            "shapes": lambda: [None] * n,
            "static_float_ops": lambda: [0] * n,
            "traces": lambda: [None] * n,
            "canonical_device": lambda: [""] * n,
            "host_device": lambda: [""] * n,
            "has_execs": lambda: [False] * n,
        }
        unknown = set(loaded) - set(defaults)
        if unknown:
            raise TypeError(f"extend_nodes: unknown per-node lists {sorted(unknown)}")
        for name, default in defaults.items():
            values = loaded.get(name)
            column = getattr(self, "_" + name if name in _LAZY else name)
            column.extend(default() if values is None else values)
        self._str_attrs.extend({} for _ in range(n))
        self.graph_version += n
        return base

    def add_graph(self, nodes: Iterable[NodeSpec]) -> bool:
        """Add GraphDef nodes whose names are new; returns True if any was added."""
        added = False
        index = self.index
        for spec in nodes:
            if spec.name not in index:
                self._new_node(spec.name, spec.op, spec)
                added = True
        if added:
            self.data_version += 1
            self._view_extents.clear()
        return added

    def add_graph_columns(self, cols: GraphColumns) -> bool:
        """Add decoded GraphDef nodes whose names are new, as :meth:`add_graph`
        would one by one; returns True if any was added."""
        names = cols.names
        index = self.index
        keep: list[int] | None = None
        if not index:
            # First nodes: the index itself tells whether names repeat.
            index.update(zip(names, range(len(names))))
            if len(index) == len(names):
                return self._append_graph_columns(cols, indexed=True)
            index.clear()
        if index or len(set(names)) != len(names):
            seen: set[str] = set()
            keep = []
            for i, name in enumerate(names):
                if name not in index and name not in seen:
                    seen.add(name)
                    keep.append(i)
        if keep is not None and len(keep) < len(names):
            return self._append_graph_columns(graph_rows(cols, keep), indexed=False, keep=keep)
        return self._append_graph_columns(cols, indexed=False)

    def _append_graph_columns(
        self, cols: GraphColumns, indexed: bool, keep: list[int] | None = None
    ) -> bool:
        """Append nodes with new, distinct names (``indexed``: already in the index;
        ``keep``: the rows of pending details the nodes are, when not all)."""
        names = cols.names
        n = len(names)
        if not n:
            return False
        base = len(self.names)
        self.names.extend(names)
        self.ops.extend(cols.ops)
        if not indexed:
            self.index.update(zip(names, range(base, base + n)))
        if cols.pending is not None:
            self.pending_details.add(base, keep, cols.pending)
        else:
            self.pending_details.pad(self, base)
            for name in DETAILS:
                getattr(self, "_" + name).extend(getattr(cols, name))
        self.static_float_ops.extend([0] * n)
        self.traces.extend([None] * n)
        self.canonical_device.extend([""] * n)
        self.host_device.extend([""] * n)
        self.has_execs.extend([False] * n)
        self.graph_version += n
        self.data_version += 1
        self._view_extents.clear()
        return True

    def add_op_log_columns(self, cols: OpLogColumns, stacks: list[list[CodeFrame]]) -> None:
        """Merge a decoded op log as :meth:`add_op_log` does; ``stacks`` are the
        call stacks of ``cols.traces``, in order."""
        for key, text in cols.id_to_string.items():
            self.id_to_string.setdefault(key, text)
        module = active("_graphdecode")
        merge = getattr(module, "merge_op_log", None) if module is not None else None
        if merge is not None:
            sets = self._op_types  # or, while they are not made, the pending types
            traced = merge(
                self.index,
                cols.names,
                cols.float_ops,
                cols.types,
                cols.trace_ids,
                stacks,
                sets if len(sets) >= len(self.names) else self.pending_types,
                self.static_float_ops,
                self.traces,
            )
        else:
            traced = self._merge_op_log(cols, stacks)
        if traced:
            self.has_trace = True
        self.data_version += 1
        self.graph_version += 1

    def _merge_op_log(self, cols: OpLogColumns, stacks: list[list[CodeFrame]]) -> bool:
        """The entries' types, static FLOPs and first code traces into the node
        columns (the native ``merge_op_log`` does the same); whether an entry of a
        known node had a trace."""
        index = self.index
        op_types = self.op_types
        static = self.static_float_ops
        traces = self.traces
        traced = False
        for name, flops, types, trace in zip(
            cols.names, cols.float_ops, cols.types, cols.trace_ids
        ):
            nid = index.get(name)
            if nid is None:
                continue
            if types:
                op_types[nid].update(types)
            if flops:
                static[nid] = flops
            if trace >= 0:
                traced = True
                if traces[nid] is None:
                    traces[nid] = stacks[trace]
        return traced

    def add_op_log(self, entries: Iterable[OpLogEntrySpec], id_to_string: dict[int, str]) -> None:
        """Merge an op log: extra types, static FLOPs, the first code trace per node."""
        for key, text in id_to_string.items():
            self.id_to_string.setdefault(key, text)
        for entry in entries:
            nid = self.index.get(entry.name)
            if nid is None:
                continue
            self.op_types[nid].update(entry.types)
            if entry.float_ops:
                self.static_float_ops[nid] = entry.float_ops
            if entry.trace is not None:
                self.has_trace = True
                if self.traces[nid] is None:
                    self.traces[nid] = entry.trace
        self.data_version += 1
        self.graph_version += 1

    def input_shapes(self, nid: int) -> dict[int, list[int]]:
        """Input position -> producer output shape (``[]`` when unknown), by position."""
        out: dict[int, list[int]] = {}
        src_idx = self.src_output[nid]
        for pos in sorted(self.inputs[nid]):
            src = self.inputs[nid][pos]
            producer = self.index.get(src)
            shape: list[int] = []
            if producer is not None:
                shape = self.output_shapes[producer].get(src_idx.get(src, 0), [])
            out[pos] = shape
        return out

    def parameters(self) -> IntArray:
        """Parameter count per node: product of the ``shape`` attr when fully known."""
        return self.per_graph("parameters", self._parameters).copy()

    def _parameters(self) -> IntArray:
        out = np.zeros(len(self.names), dtype=np.int64)
        shapes = self.shapes
        for nid in compress(range(len(shapes)), shapes):  # nodes with a shape
            shape = shapes[nid] or []
            if min(shape) >= 0:
                # the product wrapped to int64, as NumPy's int64 product wraps
                out[nid] = (math.prod(shape) + _I64_WRAP) % (2 * _I64_WRAP) - _I64_WRAP
        return out

    # ----------------------------------------------------------------- steps
    def add_step(self, step: int, cols: StepColumns) -> None:
        """Record one RunMetadata's step statistics (decoded columns) for ``step``."""
        execs = self.steps.get(step)
        if execs is None:
            execs = self.steps[step] = StepExecs()
        before, own = StepExecs.changes, execs.version
        ingest_step(self, execs, cols)
        self.data_version += 1
        # Fold the step into the all-steps sums now: the first view after the
        # steps then finds them ready (a step's totals take about as long as
        # the bincounts over its records). When nothing but this step changed
        # since the sums were last current, only it is added (no walk of the
        # other steps: adding N steps stays linear in N).
        fold_step(self, step, execs, before, own)

    def new_pseudo_node(self, name: str) -> int:
        """Append a node first met in RunMetadata (op = name); returns its id."""
        return self._new_node(name, name)

    def coverage(self) -> float:
        """Share of nodes seen in RunMetadata (tfprof's run coverage)."""
        return len(self.covered) / (len(self.names) + 1e-10)

    def sorted_steps(self) -> list[int]:
        """The added step numbers, ascending."""
        return sorted(self.steps)

    def view_extent(self, view: str) -> int:
        """How many nodes (ids ``0 .. n-1``) the view ``view`` covers.

        As in tfprof, a view takes the nodes that exist when it is first queried
        (or when the advisor runs) and keeps them until graph nodes are added;
        nodes first seen in the RunMetadata of later steps stay out of it (their
        numbers still reach the profile and the views built after them). With
        :attr:`freeze_views` off (corrected FLOPs) a view covers every node.
        """
        if not self.freeze_views:
            return len(self.names)
        extent = self._view_extents.get(view)
        if extent is None:
            extent = self._view_extents[view] = len(self.names)
        return extent

    # ----------------------------------------------------------------- stats
    def derived(self, key: Hashable, build: Callable[[], _T]) -> _T:
        """A value computed from the model by ``build``, cached under ``key`` until
        nodes or data change (views and outputs keep their per-graph structures here)."""
        version = (self.graph_version, self.data_version)
        if self._derived_version != version:
            self._derived.clear()
            self._derived_version = version
        if key in self._derived:
            value: _T = self._derived[key]
            return value
        value = self._derived[key] = build()
        return value

    def per_graph(self, key: Hashable, build: Callable[[], _T]) -> _T:
        """Like :meth:`derived`, but kept until graph nodes change: for values that
        depend on the nodes alone, so that adding a step keeps them."""
        if self._per_graph_version != self.graph_version:
            self._per_graph.clear()
            self._per_graph_version = self.graph_version
        if key in self._per_graph:
            value: _T = self._per_graph[key]
            return value
        value = self._per_graph[key] = build()
        return value

    def stats(self, step: int) -> NodeStats:
        """Per-node self values for ``step`` (any negative step = per-node average)."""
        if self._stats_version != self.data_version:
            self._stats_cache.clear()
            self._stats_version = self.data_version
        key = step if step >= 0 else -1
        cached = self._stats_cache.get(key)
        if cached is None:
            cached = self._compute_stats(key)
            self._stats_cache[key] = cached
        return cached

    def _compute_stats(self, step: int) -> NodeStats:
        return compute_stats(self, step)

    def _running_sums(self, n: int) -> tuple[IntArray, dict[str, IntArray]]:
        """Per-node step counts and sums over every step (:func:`running_sums`)."""
        return running_sums(self, n)
