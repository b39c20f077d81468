"""Binding an XSpace's XLA kernels and copies to their GPU.

:func:`bind_gpu_devices` gives each node recorded only on a GPU's tracer
devices (``/device:GPU:<n>/stream:...``, ``.../memcpy``) that GPU's canonical
device, as TensorFlow binds a GPU op.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tfprof_lite.base.device_names import GPU_TRACER
from tfprof_lite.model.devices import host_device_of

if TYPE_CHECKING:
    from tfprof_lite.model.execs import StepExecs
    from tfprof_lite.model.profile import ProfileModel

__all__ = ["bind_gpu_devices"]


def bind_gpu_devices(model: ProfileModel) -> None:
    """Bind each node recorded only on a GPU's tracer devices (an XLA kernel or copy
    has no op record) to that GPU's canonical device, as TensorFlow binds a GPU op,
    so the device views and the accelerator checker see it. (Read from each step's
    (node, device) pairs: the steps' cached ``devices`` sets of every node would
    outweigh the rest of a large file's model.)"""
    gpu_of: dict[str, str | None] = {}
    canonical = model.canonical_device
    # Nodes unbound before any step is read; a step with none of them present
    # has nothing to bind (its records are not read).
    unbound = np.asarray([not device for device in canonical], dtype=bool).reshape(-1)
    for number in model.sorted_steps():
        execs = model.steps[number]
        present = execs.present_nodes()
        if not unbound[present[present < len(unbound)]].any():
            continue
        for nid, devices in _unbound_devices(execs, canonical).items():
            if canonical[nid]:
                continue
            for device in devices:
                if device not in gpu_of:
                    found = GPU_TRACER.match(device)
                    gpu_of[device] = (
                        f"/job:localhost/replica:0/task:0/device:gpu:{found.group(1)}"
                        if found is not None
                        else None
                    )
                dev = gpu_of[device]
                if dev is not None:
                    canonical[nid] = dev
                    model.host_device[nid] = host_device_of(dev)
                    model.op_types[nid].add(dev)
                    break


def _unbound_devices(execs: StepExecs, canonical: list[str]) -> dict[int, set[str]]:
    """``execs.devices`` of the nodes without a canonical device (same order)."""
    return execs.device_sets(skip=canonical)
