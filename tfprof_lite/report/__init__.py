"""A self-contained HTML report of a profile (``tfprof-lite report``).

Contract of :func:`render_html`:

* One HTML document with its stylesheet and script inline
  (:mod:`tfprof_lite.report.assets`) and nothing loaded from anywhere else
  (no CDN, no web fonts; a Content-Security-Policy forbids it), so it opens
  offline and can be mailed around.
* Sections: overview numbers (steps, devices, graph nodes, op types, time per
  step, parameters, FLOPs); a per-step time chart (inline SVG, CPU and
  accelerator time stacked); a flame graph of the scope view (and the code view
  when the profile has code traces) drawn by the script from embedded JSON; the
  op, scope and code tables (sortable by any column, filterable by name); the
  memory timeline (:mod:`tfprof_lite.report.memory`) and advisor slots
  (:data:`SLOTS`); a glossary of every column.
* Numbers are those of the tfprof views for the given options (default: every
  node accounted, ``-step -1`` = per-node average over the steps); tables keep the
  ``max_rows`` rows with the most time (keeping their order) and say so.
* All profile text is HTML-escaped; JSON inside ``<script type="application/json">``
  has ``<``, ``>``, ``&``, U+2028 and U+2029 written as ``\\uXXXX``, so no node name
  can close the element or inject markup.
* The output depends only on the profile and the arguments (no timestamps).

The report is a composer above the views, outputs, analyses and the advisor:
:mod:`~tfprof_lite.report.page` queries the views and lays out the page;
:mod:`~tfprof_lite.report.sections` (overview, steps, flame graph),
:mod:`~tfprof_lite.report.tables` (tables and glossary) and
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
