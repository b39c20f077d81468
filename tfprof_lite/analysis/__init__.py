"""Analyses of a profile beyond tfprof's views: pure functions of the model.

Each module returns dataclasses with ``to_dict()`` (JSON-ready) and
``to_text()`` renderings: :mod:`~tfprof_lite.analysis.steptime` (per-step wall
time and parallelism), :mod:`~tfprof_lite.analysis.input_pipeline` (time spent
waiting on input, input-bound verdict), :mod:`~tfprof_lite.analysis.overview`
(the one-page summary), :mod:`~tfprof_lite.analysis.memory` (bytes in use over
time per allocator, the peak and what is live then:
:func:`~tfprof_lite.analysis.memory.memory_profile`) and
:mod:`~tfprof_lite.analysis.kernels` (GPU kernel statistics:
:func:`~tfprof_lite.analysis.kernels.kernel_stats`). None of them imports
TensorFlow.
"""

from __future__ import annotations
