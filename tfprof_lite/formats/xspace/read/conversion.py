"""An XSpace into the profile model: one RunMetadata-like step per traced step.

:func:`convert` builds, for every step the file holds (see
:mod:`tfprof_lite.formats.xspace.read.steps`), the :class:`~tfprof_lite.proto.steps.StepColumns`
a RunMetadata FULL_TRACE of that step would give, and adds them as
:meth:`ProfileModel.add_step` would one by one (all at once:
:mod:`tfprof_lite.model.step_batch`), so every view, analysis, timeline and
the advisor read an XSpace as they read TF1 profiles:

* a TF op executed on a host thread (an event ``<name>:<type>`` whose metadata
  display name is the type, or any such event in files without display names)
  becomes graph node ``<name>`` of op type ``<type>``, with one record on
  ``/job:localhost/replica:0/task:0/device:CPU:0`` per execution;
* a GPU kernel becomes a record on ``/device:GPU:<n>/stream:<line id>`` and on
  ``/device:GPU:<n>/stream:all`` labelled ``<kernel> <kernel_details>``; a copy
  one on ``/device:GPU:<n>/stream:<line id><MemcpyXXX>`` and
  ``/device:GPU:<n>/memcpy`` labelled ``<MemcpyXXX> <memcpy_details>``; any
  other GPU event one on ``/device:GPU:<n>/stream:`` (TensorFlow's own XSpace to
  StepStats conversion);
* a device event belongs to the op that launched it: its ``tf_op`` stat, else
  for an XLA program the framework scope of its HLO instruction (from the
  ``/host:metadata`` plane's HLO protos, :mod:`tfprof_lite.formats.xspace.read.xla`;
  op type: the framework op with the HLO category), else
  ``<hlo_module>/<hlo_op>`` (inside a command buffer, the kernel's own name
  when XLA named it after its HLO instruction: a fusion or a wrapped op),
  else, through ``correlation_id``, the
  TF op around the host launch, else the event's own name;
* each step's root (marker or inferred call) is no node and no record: it is
  the step's span (``StepExecs.span``: its name and the step's window,
  :mod:`tfprof_lite.formats.xspace.read.rows`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from tfprof_lite.base.heap import give_back_freed
from tfprof_lite.formats.xspace.read.attribution import LARGE_EVENTS, Attribution
from tfprof_lite.formats.xspace.read.code import code_sources, defer_code_stacks
from tfprof_lite.formats.xspace.read.cut import cut_steps
from tfprof_lite.formats.xspace.read.devices import bind_gpu_devices
from tfprof_lite.formats.xspace.read.events import (
    event_table,
    read_event_stats,
)
from tfprof_lite.formats.xspace.read.input import trace_input
from tfprof_lite.formats.xspace.read.memory import add_memory, memory_stats
from tfprof_lite.formats.xspace.read.memory_steps import StepMemory
from tfprof_lite.formats.xspace.read.plan import XSpaceSteps
from tfprof_lite.formats.xspace.read.programs import xla_programs
from tfprof_lite.formats.xspace.read.rows import CPU_DEVICE, DeviceNodes, device_steps, step_rows
from tfprof_lite.formats.xspace.read.steps import (
    add_spans,
    find_steps,
)
from tfprof_lite.formats.xspace.read.window import bind_steps, window_of
from tfprof_lite.formats.xspace.wire.decode import XSpaceColumns
from tfprof_lite.model.devices import STEPS_DEVICE
from tfprof_lite.model.records import NodeSpec
from tfprof_lite.model.step_batch import add_many
from tfprof_lite.proto.steps import StepColumns

if TYPE_CHECKING:
    from tfprof_lite.model.profile import ProfileModel

__all__ = ["CPU_DEVICE", "STEPS_DEVICE", "XSpaceSteps", "add_plan", "convert", "plan_steps"]

I64 = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def plan_steps(cols: XSpaceColumns, release: bool = False) -> XSpaceSteps:
    """The step columns of every step of ``cols`` and the graph nodes they name.

    ``release``: ``cols`` is the caller's no more: its event stats and
    durations are dropped once read (:meth:`XSpaceColumns.drop_event_stats`,
    :meth:`~XSpaceColumns.drop_event_durations`),
    and for a large file the freed memory goes back to the system after each
    phase, so that the next phase's peak does not stack on it.
    """
    # The allocator events' stats first: their temporaries then meet the
    # decoded columns alone, not the table's stat columns too.
    table = event_table(cols, stats=False)
    settle = give_back_freed if release and len(table) >= LARGE_EVENTS else (lambda: None)
    if release:
        cols.drop_event_durations()  # the table has the events' ends
    found = memory_stats(table)
    settle()
    read_event_stats(table)
    if release:
        cols.drop_event_stats()
    settle()
    roots = find_steps(table)
    attribution = Attribution(table)
    settle()
    device, launch = attribution.device, attribution.launch
    dev_steps = device_steps(table, roots, device, launch)
    # The whole window, from this table and attribution (before they change).
    window = window_of(table, roots, attribution, dev_steps, found, int(cols.origin_ns))
    settle()
    cut = cut_steps(table, roots, dev_steps, roots.numbers if roots.events else [0])
    attribution.type_nodes(attribution.node[dev_steps >= 0])
    names = [name for name, _ in attribution.nodes]
    host_ops = {e: op for e, (op, _) in attribution.tf_ops.items()}
    host_ops.update({e: name for e, (name, _, _) in attribution.host_xla.items()})
    host_ops.update(attribution.programs)
    rows = step_rows(
        table, roots, DeviceNodes(device, launch, attribution.node, names), dev_steps, host_ops
    )
    numbers = roots.numbers if roots.events else [0]
    nodes = [NodeSpec(name=name, op=kind) for name, kind in attribution.node_types.items()]
    settle()
    columns, tracer = rows.all_columns(cols.origin_ns)
    spans = rows.spans(cols.origin_ns)
    # The steps' records are in their columns now: drop the table of them.
    del rows, dev_steps, device, launch, host_ops, names
    settle()
    programs = set(attribution.programs.values())
    code = code_sources(table, attribution)
    xla = xla_programs(table)
    found_input = trace_input(table, roots, numbers, spans, cols.origin_ns)
    # The memory records need the host ops and the events' times only.
    tf_ops = attribution.tf_ops
    del attribution
    table.drop_stats()
    settle()
    pending: dict[int, StepMemory] = {}
    add_memory(table, tf_ops, roots, columns, nodes, programs, found, settle, pending)
    del found, table
    settle()
    plan = XSpaceSteps(numbers, columns, nodes, roots.source, tracer, code, pending, xla, cut)
    plan.input = found_input
    plan.window = window
    plan.spans = spans
    return plan


def convert(cols: XSpaceColumns, model: ProfileModel) -> XSpaceSteps:
    """Add the ops and steps of ``cols`` to ``model``; records how steps were found
    in ``model.steps_source``; the whole window (events outside the steps too)
    in ``model.event_window`` (:mod:`tfprof_lite.formats.xspace.read.window`)."""
    plan = plan_steps(cols)
    add_plan(plan, model)
    if plan.window is not None:
        model.event_window = bind_steps(plan.window, model)
    return plan


def add_plan(plan: XSpaceSteps, model: ProfileModel, release: bool = False) -> None:
    """Add the nodes and steps of ``plan`` to ``model`` (see :func:`convert`).

    ``release``: empty ``plan.columns`` and ``plan.tracer_ns`` first and drop
    each step's columns once the model holds the step, so that a large file's
    steps are not held twice.
    """
    if plan.nodes:
        model.add_graph(plan.nodes)
    if release:
        steps: Iterable[tuple[int, StepColumns, I64]] = plan.take_steps()
    else:
        steps = zip(plan.numbers, plan.columns, plan.tracer_ns, strict=False)
    # Many steps at once (the tracer records keep the file's nanoseconds).
    add_many(model, steps)
    del steps
    add_spans(model, plan.numbers, plan.spans)
    bind_gpu_devices(model)
    defer_code_stacks(model, plan.code)
    model.steps_source = plan.source
    model.cut_steps = dict(plan.cut)
    model.xla_programs = plan.xla
    model.trace_input = plan.input
