"""AcceleratorUtilizationChecker: how busy each GPU is, as TensorFlow 2.21 says it.

Contract (TF's ``accelerator_utilization_checker.h``):

* Only nodes with execution records whose canonical device contains ``gpu`` count;
  for each, only its record of the **highest-numbered step** it ran in is read.
* Per canonical device: start = smallest non-zero ``all_start_micros``, end =
  largest ``latest_end_micros``, busy = sum of the nodes' accelerator
  (``stream:all``) time.
* One report per device with end - start > 0, in device-name order:
  ``device: <dev> utilization: %.2f`` when busy / (end - start) >= 0.5, else
  ``device: <dev> low utilization: %.2f``. The device is the lower-cased
  canonical device name.
* A profile without GPU records gets an entry with no reports.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tfprof_lite.advisor.base import Checker
from tfprof_lite.analysis.step_join import joined_steps
from tfprof_lite.model.profile import ProfileModel

__all__ = ["AcceleratorUtilizationChecker", "DeviceWindow", "device_windows"]

#: Utilization at or above this is reported as plain ``utilization``.
GOOD_UTILIZATION = 0.5


@dataclass
class DeviceWindow:
    """One device's busy time inside the window its ops spanned (microseconds)."""

    start: int = 0
    end: int = 0
    busy: int = 0

    def add(self, start: int, end: int, busy: int) -> None:
        """Widen the window by one node's record and add its accelerator time."""
        if self.start == 0 or (start != 0 and start < self.start):
            self.start = start
        self.end = max(self.end, end)
        self.busy += busy


def _latest_steps(model: ProfileModel) -> dict[int, int]:
    """Node id -> the highest step number it has an execution record in (nodes
    in the order they are first seen, steps ascending), every step's pairs
    read at once (:func:`joined_steps`)."""
    joined = joined_steps(model)
    nodes, at = joined.p_node, joined.p_at
    present, first = np.unique(nodes, return_index=True)
    last = np.zeros(len(present), dtype=np.int64)
    np.maximum.at(last, np.searchsorted(present, nodes), at)
    order = np.argsort(first, kind="stable")
    numbers = joined.numbers
    return {nid: numbers[i] for nid, i in zip(present[order].tolist(), last[order].tolist())}


def device_windows(model: ProfileModel) -> dict[str, DeviceWindow]:
    """Per GPU canonical device, the window and busy time of each node's latest step."""
    windows: dict[str, DeviceWindow] = {}
    n_nodes = len(model)
    for nid, step in _latest_steps(model).items():
        device = model.canonical_device[nid]
        if "gpu" not in device:
            continue
        execs = model.steps[step]
        busy = int(execs.totals(n_nodes).accelerator_exec_micros[nid])
        window = windows.setdefault(device, DeviceWindow())
        window.add(execs.all_start.get(nid, 0), execs.latest_end.get(nid, 0), busy)
    return windows


class AcceleratorUtilizationChecker(Checker):
    """Reports each GPU's utilization over the span of its ops (TF's checker)."""

    name = "AcceleratorUtilizationChecker"

    def check(self, model: ProfileModel) -> list[str]:
        """One ``utilization`` / ``low utilization`` line per GPU with a time window."""
        reports: list[str] = []
        windows = device_windows(model)
        for device in sorted(windows):
            window = windows[device]
            span = window.end - window.start
            if span <= 0:
                continue
            utilization = window.busy / span
            label = "utilization" if utilization >= GOOD_UTILIZATION else "low utilization"
            reports.append(f"device: {device} {label}: {utilization:.2f}")
        return reports
