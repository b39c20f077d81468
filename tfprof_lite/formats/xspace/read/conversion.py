"""An XSpace into the profile model: its steps as the model's typed step records.

:func:`plan_steps` reads, for every step the file holds (see
:mod:`tfprof_lite.formats.xspace.read.steps`), the records of that step and
hands them to the model as one
:class:`~tfprof_lite.model.step_records.StepRecords` (with the allocator
events' :class:`~tfprof_lite.model.memory_records.MemoryRecords`), which the
model adds as tfprof's ``AddStep`` adds the RunMetadata FULL_TRACE of each
step (:func:`tfprof_lite.model.step_batch.add_records`), so every view,
analysis, timeline and the advisor read an XSpace as they read TF1 profiles:

* a TF op executed on a host thread (an event ``<name>:<type>`` whose metadata
  display name is the type, or any such event in files without display names)
  becomes graph node ``<name>`` of op type ``<type>``, with one record on the
  host lane per execution;
* a GPU kernel becomes a record on its stream's lane and on the GPU's
  all-streams lane, with its name and launch details (``kernel_details``); a
  copy one on its stream's copy lane and on the GPU's copies lane, with its
  kind (``MemcpyHtoD``...) and ``memcpy_details``; any other GPU event one on
  the GPU's activity lane (TensorFlow's own XSpace to StepStats conversion
  puts them on the same devices);
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
from tfprof_lite.formats.xspace.read.plan import XSpaceSteps
from tfprof_lite.formats.xspace.read.programs import xla_programs
from tfprof_lite.formats.xspace.read.rows import CPU_DEVICE, DeviceNodes, device_steps, step_rows
from tfprof_lite.formats.xspace.read.steps import (
    add_spans,
    find_steps,
)
from tfprof_lite.formats.xspace.read.window import bind_steps, window_of
from tfprof_lite.formats.xspace.wire.columns import XSpaceColumns
from tfprof_lite.model.devices import STEPS_DEVICE
from tfprof_lite.model.records import NodeSpec

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
    records = rows.records(numbers, cols.origin_ns)
    spans = records.spans
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
    add_memory(table, tf_ops, roots, records, nodes, programs, found, settle)
    del found, table
    settle()
    plan = XSpaceSteps(records, nodes, roots.source, code, xla, cut)
    plan.input = found_input
    plan.window = window
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

    ``release``: the plan is the caller's no more (its records are dropped
    once the model holds them).
    """
    if plan.nodes:
        model.add_graph(plan.nodes)
    plan.add_to(model)
    add_spans(model, plan.numbers, plan.spans)
    if release:
        plan.release()
    bind_gpu_devices(model)
    defer_code_stacks(model, plan.code)
    model.steps_source = plan.source
    model.cut_steps = dict(plan.cut)
    model.xla_programs = plan.xla
    model.trace_input = plan.input
