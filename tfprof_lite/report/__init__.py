"""A self-contained HTML report of a profile (``tfprof-lite report``).

Contract of :func:`render_html`:

* One HTML document with its stylesheet and script inline
  (:mod:`tfprof_lite.report.assets`) and nothing loaded from anywhere else
  (no CDN, no web fonts; a Content-Security-Policy forbids it), so it opens
  offline and can be mailed around.
* Sections: overview numbers (steps, devices, graph nodes, op types, wall time
  per step as ``tfprof-lite overview`` measures it, median beside mean, summed
  op time, parameters, the FLOPs of the nodes that ran beside tfprof's FLOPs of
  every defined node); a per-step chart (inline SVG: wall time split into input,
  compute and idle beside the summed op time, outlier steps marked and cut so
  that typical steps stay readable, :mod:`tfprof_lite.report.steps`); a canvas
  trace viewer of every traced step (:mod:`tfprof_lite.report.trace`); a flame
  graph of the scope view (and the code view when the profile has code traces)
  drawn by the script from embedded JSON; the op table and the scope and code
  trees (collapsible, sortable by any column, filterable by name); the GPU
  kernel table when the profile has kernel records
  (:mod:`tfprof_lite.report.kernels`); the memory timeline
  (:mod:`tfprof_lite.report.memory`) and advisor slots (:data:`SLOTS`); a
  glossary of every column. Legends and the accelerator column appear only
  when the profile has such data.
* Numbers are those of the tfprof views for the given options (default: every
  node accounted, ``-step -1`` = per-node average over the steps); tables keep the
  ``max_rows`` rows with the most time (keeping their order) and say so. Their
  FLOPs column is tfprof's, per defined node, and titled so. Counts are written
  with SI prefixes (``85.03 M``), never tfprof's ``85.03m``.
* All profile text is HTML-escaped; JSON inside ``<script type="application/json">``
  has ``<``, ``>``, ``&``, U+2028 and U+2029 written as ``\\uXXXX``, so no node name
  can close the element or inject markup.
* The output depends only on the profile and the arguments (no timestamps).

The report is a composer above the views, outputs, analyses and the advisor:
:mod:`~tfprof_lite.report.page` queries the views and lays out the page;
:mod:`~tfprof_lite.report.sections` (overview, flame graph),
:mod:`~tfprof_lite.report.steps` (time per step), :mod:`~tfprof_lite.report.trace`
(trace viewer), :mod:`~tfprof_lite.report.tables` (tables and glossary),
:mod:`~tfprof_lite.report.kernels` (GPU kernels) and
:mod:`~tfprof_lite.report.slots` (memory timeline, advisor) draw the sections;
:mod:`~tfprof_lite.report.markup` holds the shared escaping and chart pieces.
"""

from __future__ import annotations

from tfprof_lite.report.markup import script_json
from tfprof_lite.report.page import render_html, report_options
from tfprof_lite.report.sections import StepTime, step_times
from tfprof_lite.report.slots import SLOTS, advisor_section, memory_timeline_section
from tfprof_lite.report.tables import GLOSSARY, Column, op_columns, tree_columns

__all__ = [
    "GLOSSARY",
    "SLOTS",
    "Column",
    "StepTime",
    "advisor_section",
    "memory_timeline_section",
    "op_columns",
    "render_html",
    "report_options",
    "script_json",
    "step_times",
    "tree_columns",
]
