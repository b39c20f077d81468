"""When a task of a distributed run is a straggler: the thresholds that the cluster
analysis (:mod:`tfprof_lite.analysis.cluster`) and the advisor's ``JobChecker``
share, in a module of their own so that the advisor does not load the cluster
analysis for a single-task profile.
"""

from __future__ import annotations

__all__ = ["STRAGGLER_MICROS", "STRAGGLER_SHARE"]

#: A task is a straggler when it exceeds the others' median step time by this share...
STRAGGLER_SHARE = 0.2
#: ... and by at least this many microseconds (smaller gaps are noise).
STRAGGLER_MICROS = 1000
